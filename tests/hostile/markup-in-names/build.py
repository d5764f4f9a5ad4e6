import zipfile
from pathlib import Path


def build(folder: Path) -> Path:
    archive = folder.parent / "markup.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for path in sorted(folder.iterdir()):
            handle.write(path, f"[/bold][red]\x1b[2J{path.stem}[/]/{path.name}")
            handle.write(path, f"[/bold]more[/]/[link=file:///etc]{path.stem}[/link]/{path.name}")
        handle.writestr("../[/bold]manual_backprop.py", b"# refused, and named in a note\n")
    return archive
