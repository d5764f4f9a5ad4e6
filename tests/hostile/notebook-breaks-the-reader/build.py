import json
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[3] / "assignments" / "pytorch_basics" / "walkthrough.ipynb"


def build(folder: Path) -> Path:
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        cell.setdefault("metadata", {})["tags"] = 5
    (folder / "walkthrough.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (folder / "device_benchmark.py").unlink()
    return folder
