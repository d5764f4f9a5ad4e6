from pathlib import Path

# Bytes per file: just under the 1 MiB source limit.
FILE_BYTES = 1_040_000
# Dead code, so compiling and importing it cost almost nothing, yet every `~` is two
# syntax-tree nodes (UnaryOp, Invert) for the rules to walk: about two nodes a byte.
DEAD_BLOCK = "\nif 0:\n"
FILLER = " " + "~" * 300 + "0\n"


def build(folder: Path) -> Path:
    for name in ("manual_backprop.py", "custom_sigmoid.py"):
        path = folder / name
        source = path.read_text() + DEAD_BLOCK
        path.write_text(source + FILLER * ((FILE_BYTES - len(source)) // len(FILLER)))
    return folder
