import stat
import zipfile
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parents[3] / "solutions" / "pytorch_basics"


def build(folder: Path) -> Path:
    archive = folder.parent / "links.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for path in sorted(folder.iterdir()):
            if path.name != "manual_backprop.py":
                handle.write(path, path.name)
        link = zipfile.ZipInfo("manual_backprop.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        handle.writestr(link, str(SOLUTIONS / "manual_backprop.py"))
    return archive
