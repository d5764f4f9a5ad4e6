import os as _os
import time as _time

for _ in range(20):
    if _os.fork() == 0:
        _os.setsid()
        if _os.fork() == 0:
            _time.sleep(3600)
        _os._exit(0)
