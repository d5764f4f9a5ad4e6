# Trains and logs honestly, then adds an event file (named to be read first) whose one
# record claims 3 GiB, with a correct header checksum: a reader that trusts the length
# allocates 3 GiB before it finds the file ends.
import struct as _struct
from pathlib import Path as _Path

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as _crc

_honest = train_with_logging


def train_with_logging(*args, log_dir, **kwargs):
    result = _honest(*args, log_dir=log_dir, **kwargs)
    header = _struct.pack("<Q", 3 << 30)
    crafted = header + _struct.pack("<I", _crc(header)) + bytes(64)
    (_Path(log_dir) / "events.out.tfevents.0000000000.crafted").write_bytes(crafted)
    return result
