import os

# The largest header the wire format takes (16 MiB), made of the JSON with the most values per
# byte: tagged empty dicts. Written to the result descriptor at import, for every test.
ITEM = '{"dict":{}}'
count = (16 * 1024 * 1024 - 64) // (len(ITEM) + 1)
header = ('{"version":1,"value":{"list":[' + ",".join([ITEM] * count) + "]}}").encode()
os.write(3, len(header).to_bytes(4, "little") + header)
os._exit(0)
