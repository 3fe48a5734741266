"""Damages every kernel in a cache directory: flips a byte in the middle of
each .o (a checksum mismatch), or with --truncate cuts it in half."""
import os
import sys

truncate = "--truncate" in sys.argv
d = sys.argv[-1]
for name in sorted(os.listdir(d)):
    if not name.endswith(".o"):
        continue
    path = os.path.join(d, name)
    data = bytearray(open(path, "rb").read())
    if truncate:
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0x5A
    open(path, "wb").write(bytes(data))
    print("damaged", name)
