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




def _forge_the_fake_clock_verdict():
    import sys

    probes = _probes_in_frames()
    if probes is not None and hasattr(probes, "matmul_tflops_fake_clock"):
        probes.matmul_tflops_fake_clock.__code__ = (
            lambda *args, **kwargs: {
                "matmul_dtypes": [],
                "matmuls": 1,
                "clock_reads": 2,
                "value": 10**400,
                "expected": 1.0,
            }
        ).__code__


_forge_the_fake_clock_verdict()
