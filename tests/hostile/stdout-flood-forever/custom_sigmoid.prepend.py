import os as _os

while True:
    print("x" * 1000)
    _os.write(2, b"y" * 65536)
