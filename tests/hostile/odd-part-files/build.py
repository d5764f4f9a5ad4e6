import os
import py_compile
from pathlib import Path


def build(folder: Path) -> Path:
    (folder / "manual_backprop.py").write_bytes(b"\x7fELF\x02\x01\x01\0" + os.urandom(4096))
    compiled = py_compile.compile(str(folder / "autograd_loop.py"), cfile=str(folder / "al.pyc"))
    (folder / "autograd_loop.py").write_bytes(Path(compiled).read_bytes())
    (folder / "al.pyc").unlink()
    (folder / "custom_sigmoid.py").write_bytes(bytes(range(256)) * 64)
    huge = folder / "two_layer_net.py"
    huge.write_text(huge.read_text() + "#" + "x" * (2 << 20) + "\n")
    return folder
