import struct
import zipfile
from pathlib import Path


def _junk(name: str, extra: bytes) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.extra = extra
    return info


def build(folder: Path) -> Path:
    """The part files, intact, beside junk entries whose central records zipfile refuses when
    it opens the archive (unzip extracts them all): an extra field that overruns itself, a
    "version needed" no zipfile supports, and a name that starts with a NUL byte."""
    archive = folder.parent / "with-junk.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for path in sorted(folder.iterdir()):
            handle.write(path, path.name)
        handle.writestr(_junk("notes.txt", struct.pack("<HH", 0xCAFE, 16)), b"my notes\n")
        handle.writestr("future.txt", b"from a newer zip tool\n")
        handle.writestr("ZULNAME/manual_backprop.py", b"x = 1\n")
    data = archive.read_bytes().replace(b"ZULNAME", b"\0ULNAME")
    # future.txt's central record claims it needs zip version 9.9 (zipfile: NotImplementedError).
    patched = bytearray(data)
    position = patched.find(b"PK\x01\x02")
    while position >= 0:
        name_length = struct.unpack_from("<H", patched, position + 28)[0]
        if patched[position + 46 : position + 46 + name_length] == b"future.txt":
            struct.pack_into("<H", patched, position + 6, 99)
        position = patched.find(b"PK\x01\x02", position + 4)
    archive.write_bytes(bytes(patched))
    return archive
