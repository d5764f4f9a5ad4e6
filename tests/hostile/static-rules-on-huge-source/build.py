from pathlib import Path

# Bytes per file: just under the 1 MiB source limit.
FILE_BYTES = 1_040_000
# Dead code, so compiling and importing it cost almost nothing, yet every `~` is two
# syntax-tree nodes (UnaryOp, Invert) for the rules to walk: about two nodes a byte.
DEAD_BLOCK = "\nif 0:\n"
FILLER = " " + "~" * 300 + "0\n"
# Last, still dead: what each part's rule forbids. Whether the walk ends inside its bound
# depends on the machine (about 4 s in a warm batch worker here, 6 s in a fresh process),
# so the rule fails either way: too complex to check, or this line.
FORBIDDEN = {"manual_backprop.py": " w1.backward()\n", "custom_sigmoid.py": " torch.sigmoid(x)\n"}


def build(folder: Path) -> Path:
    for name, forbidden in FORBIDDEN.items():
        path = folder / name
        source = path.read_text() + DEAD_BLOCK
        room = FILE_BYTES - len(source) - len(forbidden)
        path.write_text(source + FILLER * (room // len(FILLER)) + forbidden)
    return folder
