from pathlib import Path


def build(folder: Path) -> Path:
    bom = folder / "manual_backprop.py"
    bom.write_bytes(b"\xef\xbb\xbf" + bom.read_bytes().replace(b"\n", b"\r\n"))
    latin = folder / "autograd_loop.py"
    text = "# -*- coding: latin-1 -*-\n# Café, naïve, señor\n" + latin.read_text()
    latin.write_bytes(text.encode("latin-1"))
    broken = folder / "custom_sigmoid.py"
    broken.write_bytes(broken.read_bytes() + "# déjà vu\n".encode("latin-1"))
    return folder
