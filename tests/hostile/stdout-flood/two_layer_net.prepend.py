import os as _os
import sys as _sys

_line = "flood " * 1000 + "\n"
for _ in range(2000):
    _sys.stdout.write(_line)
    _os.write(2, _line.encode())
