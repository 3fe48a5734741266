"""ptxas_all.py PTXAS ARCH DIR...: assembles every .ptx file under the
DIRs with PTXAS -arch=ARCH (failing on the first it rejects), and says how
many it did and whether all of them target ARCH. A file of raf's kernel
cache (codegen/cache.c: a 56-byte header "RAFKOBJ\n"..., then the PTX) is
assembled from its payload."""
import os
import struct
import subprocess
import sys
import tempfile

HEADER = "<8sII16sQ16s"  # codegen/cache.c's struct header


def ptx_text(path):
    with open(path, "rb") as h:
        data = h.read()
    if data.startswith(b"RAFKOBJ\n"):
        size = struct.unpack_from(HEADER, data)[4]
        start = struct.calcsize(HEADER)
        data = data[start:start + size]
    return data.decode()

ptxas, arch, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
files = sorted(os.path.join(root, f) for d in dirs for root, _, fs in os.walk(d)
               for f in fs if f.endswith(".ptx"))
if not files:
    sys.exit("no .ptx file under " + " ".join(dirs))
targets = set()
for f in files:
    text = ptx_text(f)
    for line in text.splitlines():
        if line.startswith(".target"):
            targets.add(line.split()[1].rstrip(","))
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as t:
        t.write(text)
        t.flush()
        r = subprocess.run([ptxas, "-arch=" + arch, t.name, "-o", os.devnull],
                           capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("ptxas -arch=%s %s:\n%s" % (arch, f, r.stderr))
print("%d PTX files assembled for %s%s" % (
    len(files), arch, ", with .target " + arch if targets == {arch} else ""))
