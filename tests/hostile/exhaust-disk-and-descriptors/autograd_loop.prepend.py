import os as _os
import socket as _socket

_held = []
try:
    while True:
        _held.append(_os.open("/dev/null", _os.O_RDONLY))
        _held.extend(s.detach() for s in _socket.socketpair())
except OSError:
    pass
for _fd in _held:
    _os.close(_fd)
