import zipfile
from pathlib import Path


def build(folder: Path) -> Path:
    archive = folder.parent / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        for path in sorted(folder.iterdir()):
            if path.name != "manual_backprop.py":
                handle.write(path, path.name)
        with handle.open("manual_backprop.py", "w", force_zip64=True) as member:
            chunk = b"#" * (1 << 20)
            for _ in range(200):
                member.write(chunk)
        for index in range(3000):
            handle.writestr(f"junk/{index}.txt", b"")
    return archive
