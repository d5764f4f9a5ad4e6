from pathlib import Path

from tests.deep_folders import make_chain


def build(folder: Path) -> Path:
    """The reference's files at the top, beside a chain of 1,100 nested folders holding a copy."""
    deepest = make_chain(folder, 1_100)
    (deepest / "two_layer_net.py").write_text("raise SystemExit('graded from the deep copy')\n")
    return folder
