import os as _os
import resource as _resource

try:
    _resource.setrlimit(_resource.RLIMIT_CORE, (_resource.RLIM_INFINITY,) * 2)
except (ValueError, OSError):
    pass
_os.abort()
