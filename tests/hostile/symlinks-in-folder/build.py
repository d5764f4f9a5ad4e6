from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parents[3] / "solutions" / "pytorch_basics"


def build(folder: Path) -> Path:
    (folder / "manual_backprop.py").unlink()
    (folder / "manual_backprop.py").symlink_to(SOLUTIONS / "manual_backprop.py")
    (folder / "autograd_loop.py").unlink()
    (folder / "autograd_loop.py").symlink_to("/etc/passwd")
    (folder / "lib").symlink_to(SOLUTIONS, target_is_directory=True)
    return folder
