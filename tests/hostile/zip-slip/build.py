import zipfile
from pathlib import Path


def build(folder: Path) -> Path:
    archive = folder.parent / "zip-slip.zip"
    reference = (folder / "manual_backprop.py").read_bytes()
    with zipfile.ZipFile(archive, "w") as handle:
        for path in sorted(folder.iterdir()):
            if path.name != "manual_backprop.py":
                handle.write(path, f"hw/{path.name}")
        handle.writestr("../../manual_backprop.py", reference)
        handle.writestr("/tmp/manual_backprop.py", reference)
        handle.writestr("..\\..\\evil\\manual_backprop.py", reference)
        handle.writestr("C:/evil/manual_backprop.py", reference)
        handle.writestr("../../evil-outside.txt", b"slipped")
    return archive
