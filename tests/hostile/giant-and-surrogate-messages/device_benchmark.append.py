# Text no encoder accepts, terminal escapes and megabytes, where feedback quotes it.
_GIANT = "\ud800\x1b[2J\x1b]0;pwned\x07\r" + "A" * 15_000_000


class _Device:  # its name is set below: feedback quotes it as it is
    """Giant the first time it is shown only, so the result stays inside the 16 MiB header cap."""

    shown = 0

    def __str__(self):
        _Device.shown += 1
        return _GIANT if _Device.shown == 1 else "cpu"

    __repr__ = __str__


# A class name cannot hold a lone surrogate, but escapes, bidi overrides and bulk it can.
_Device.__name__ = "Device\x1b[2J\u202e\r" + "B" * 200_000


def pick_device():
    return _Device()


def matmul_tflops(n, device, dtype=None, repeats=10):
    raise ValueError("\ud800 lone surrogate \udcff\x1b[31m" + "C" * 100_000)
