# Read this process's own writable memory, everything it inherited from the processes it was
# forked from, and raise any environment assignment of a secret it finds as the error.


def _scan_own_memory():
    import ctypes

    # Built at run time, so that this file's own text never matches: a name, "=", 32 hex
    # digits (the suite's secret is token_hex(16)).
    marker = "_".join(["HOSTILE", "SECRET="]).encode()
    hexdigits = frozenset(b"0123456789abcdef")
    found = []
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for region in regions:
        start, end = (int(part, 16) for part in region[0].split("-"))
        if "rw" not in region[1] or end - start > 256 << 20:
            continue
        try:
            data = ctypes.string_at(start, end - start)
        except Exception:
            continue
        at = data.find(marker)
        while at >= 0 and len(found) < 20:
            value = data[at + len(marker) : at + len(marker) + 32]
            if len(value) == 32 and set(value) <= hexdigits:
                found.append(value.decode())
            at = data.find(marker, at + 1)
    return found


_leaked = _scan_own_memory()
if _leaked:
    raise ValueError("found in memory: " + " | ".join(_leaked))
