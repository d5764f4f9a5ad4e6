

import gc as _gc


def _settle() -> None:
    # Free what earlier runs left before timing.
    _gc.collect()


_settle()
