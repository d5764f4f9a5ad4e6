"""Hostile: return a torch file whose members are compressed (a zip bomb in disguise)."""

import io
import os
import zipfile

import torch

plain = io.BytesIO()
torch.save({"value": 1.0, "padding": torch.zeros(1 << 20)}, plain)
bomb = io.BytesIO()
with zipfile.ZipFile(io.BytesIO(plain.getvalue())) as source:
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            target.writestr(member.filename, source.read(member))
os.write(3, bomb.getvalue())
os._exit(0)
