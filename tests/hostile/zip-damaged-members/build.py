import struct
import zipfile
from pathlib import Path

UTF8_FLAG = 0x800
# Member -> how it is stored; the damage below is done to the bytes after compression.
METHODS = {"manual_backprop.py": zipfile.ZIP_DEFLATED, "autograd_loop.py": zipfile.ZIP_LZMA}


def _local_header(data: bytearray, info: zipfile.ZipInfo) -> tuple[int, int]:
    """Where the member's local header starts, and where its compressed data starts."""
    offset = info.header_offset
    name_length, extra_length = struct.unpack_from("<HH", data, offset + 26)
    return offset, offset + 30 + name_length + extra_length


def build(folder: Path) -> Path:
    archive = folder.parent / "damaged.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for path in sorted(folder.iterdir()):
            method = METHODS.get(path.name, zipfile.ZIP_STORED)
            handle.write(path, path.name, compress_type=method)
    with zipfile.ZipFile(archive) as handle:
        infos = {info.filename: info for info in handle.infolist()}
    data = bytearray(archive.read_bytes())
    # A deflate block of type 3 does not exist: zlib.error "invalid block type".
    _, start = _local_header(data, infos["manual_backprop.py"])
    data[start] = 0xFF
    # zipfile's LZMA member: 4 bytes of version and size, then the properties (lc/lp/pb byte
    # past 224): lzma.LZMAError "Invalid or unsupported options".
    _, start = _local_header(data, infos["autograd_loop.py"])
    data[start + 4] = 0xFF
    # The central directory keeps the honest name; the local header claims UTF-8 for bytes
    # that are not: UnicodeDecodeError when the member is opened.
    offset, _ = _local_header(data, infos["custom_sigmoid.py"])
    (flags,) = struct.unpack_from("<H", data, offset + 6)
    struct.pack_into("<H", data, offset + 6, flags | UTF8_FLAG)
    data[offset + 30 : offset + 33] = b"\xff\xfe\xfd"
    archive.write_bytes(bytes(data))
    return archive
