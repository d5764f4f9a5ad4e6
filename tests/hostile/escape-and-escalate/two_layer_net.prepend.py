import subprocess as _subprocess

for _command in (["su", "-c", "id"], ["sudo", "-n", "id"], ["mount", "-t", "tmpfs", "x", "/mnt"],
                 ["cat", "/etc/shadow"], ["unshare", "-r", "id"], ["chmod", "777", "/"]):
    try:
        _subprocess.run(_command, timeout=2, capture_output=True, stdin=_subprocess.DEVNULL)
    except (OSError, _subprocess.SubprocessError):
        pass
