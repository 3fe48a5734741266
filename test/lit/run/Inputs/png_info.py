"""png_info.py FILE: prints "PNG WIDTHxHEIGHT" from a PNG's IHDR chunk, or
"not a PNG"."""
import struct
import sys

data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
    print("not a PNG")
else:
    w, h = struct.unpack(">II", data[16:24])
    print(f"PNG {w}x{h}")
