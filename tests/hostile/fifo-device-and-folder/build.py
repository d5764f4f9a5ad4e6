import os
from pathlib import Path


def build(folder: Path) -> Path:
    (folder / "manual_backprop.py").unlink()
    os.mkfifo(folder / "manual_backprop.py")
    (folder / "autograd_loop.py").unlink()
    (folder / "autograd_loop.py").symlink_to("/dev/zero")
    (folder / "custom_sigmoid.py").unlink()
    (folder / "custom_sigmoid.py").mkdir()
    return folder
