import os
from pathlib import Path


def build(folder: Path) -> Path:
    """The reference's files at the top, beside a chain of 1,100 nested folders holding a copy."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1_100):
        os.mkdir("d", dir_fd=descriptor)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = inner
    deepest = os.open("two_layer_net.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=descriptor)
    os.write(deepest, b"raise SystemExit('graded from the deep copy')\n")
    os.close(deepest)
    os.close(descriptor)
    return folder
