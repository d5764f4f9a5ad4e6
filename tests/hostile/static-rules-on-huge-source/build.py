from pathlib import Path

# Bytes per file: just under the 1 MiB source limit.
FILE_BYTES = 1_040_000
# Two bytes and two syntax-tree nodes (Expr, Constant) a line: many nodes for the rules to
# walk, and nothing for the compiler to emit or the import to run.
FILLER = "0\n"


def build(folder: Path) -> Path:
    for name in ("manual_backprop.py", "custom_sigmoid.py"):
        path = folder / name
        source = path.read_text()
        path.write_text(source + FILLER * ((FILE_BYTES - len(source)) // len(FILLER)))
    return folder
