import sys as _sys

_sys.setrecursionlimit(10**8)


def _deeper(n):
    return _deeper(n + 1) + 1


_deeper(0)
