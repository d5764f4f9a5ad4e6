import errno as _errno
import socket as _socket

try:
    _socket.create_connection(("127.0.0.1", 9), timeout=5).close()
    raise RuntimeError("a TCP connection was opened")
except OSError as _error:
    if _error.errno == _errno.ECONNREFUSED:
        # The kernel's network stack answered: nothing but the empty network stopped us.
        raise RuntimeError("TCP connect reached the network stack") from None
