def _probes_in_frames():
    """The probe module, from the frames of the import or call that runs this code: it is no
    longer in sys.modules (tests/hostile/rewrite-probes-to-return-the-formula)."""
    import sys as _frames_sys
    import types as _frames_types

    frame = _frames_sys._getframe()
    while frame is not None:
        found = frame.f_locals.get("probes")
        if isinstance(found, _frames_types.ModuleType):
            return found
        frame = frame.f_back
    return None




def _rewrite_the_probes():
    import sys

    probes = _probes_in_frames()
    if probes is None:
        return
    for value in vars(probes).values():
        if callable(value) and getattr(value, "__module__", "") == "probes":
            value.__code__ = (lambda *args, **kwargs: [1, 2, 3]).__code__


_rewrite_the_probes()
