# lit configuration for raf's regression tests.
#
# Run through CTest (`ctest` in the build directory), or by hand:
#   /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv test/lit \
#       --param raf_bin=build
import os
import shutil

import lit.formats

config.name = "raf"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".raf", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)

raf_bin = lit_config.params.get("raf_bin", os.path.join(config.test_source_root, "..", "..", "build"))
raf_bin = os.path.abspath(raf_bin)
# FileCheck, not and count: Debian's llvm-19-tools, or the folder named by
# the llvm_bin param (scripts/gpu-bundle.sh's bundle carries its own, which
# find their libraries through LD_LIBRARY_PATH, passed on by lit); %python:
# /usr/bin/python3 or the python param.
llvm_bin = lit_config.params.get("llvm_bin", "/usr/lib/llvm-19/bin")
python = lit_config.params.get("python", "/usr/bin/python3")

config.environment["PATH"] = os.pathsep.join([raf_bin, llvm_bin, config.environment.get("PATH", "")])
# Sanitizer builds report leaks as errors. scripts/gpu-check.sh runs the GPU
# tests with RAF_CUDA_SYNC=1 (a faulting kernel named at its statement) and
# RAF_LIBDEVICE at its bundle's libdevice.
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "RAF_CUDA_SYNC", "RAF_LIBDEVICE"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Every kernel raf launches on the fake driver must declare the block it is
# launched with (.maxntid): the fake refuses one that does not.
config.environment["RAF_FAKE_CUDA_REQUIRE_MAXNTID"] = "1"

config.substitutions.append(("%raf-opt", os.path.join(raf_bin, "raf-opt")))
# lit itself and the build, for a test that runs other tests under another
# environment (run/gpu-tests-fake.test: the GPU tests on the fake driver).
import sys
config.substitutions.append(("%lit", os.path.abspath(sys.argv[0])))
config.substitutions.append(("%raf-bin", raf_bin))
# Debian's NumPy is seen by the system Python only.
config.substitutions.append(("%python", python))
config.substitutions.append(("%FileCheck", os.path.join(llvm_bin, "FileCheck")))

# The llvm dialect's JIT keeps its kernel cache in the build tree, not in
# $HOME (tests of the cache use directories of their own), and computes
# exp, log, tanh, ... with scalar libm calls, bit-identical to cpu-ref, so
# that a fused function and its statements give the same digits; the tests
# of the vectorised math (libmvec, the default) ask for it with
# RAF_JIT_MATH=vector.
config.environment["RAF_CACHE_DIR"] = os.environ.get(
    "RAF_CACHE_DIR", os.path.join(raf_bin, "lit-kernel-cache"))
config.environment["RAF_JIT_MATH"] = os.environ.get("RAF_JIT_MATH", "exact")

# PTX tests say `REQUIRES: ptxas`: the CUDA toolkit's assembler checks the
# PTX that raf-opt --emit=ptx writes.
ptxas = "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# Tests of the vectorised math library (glibc's libmvec, AVX2 or AVX-512
# variants) say `REQUIRES: avx2`.
try:
    with open("/proc/cpuinfo") as f:
        if " avx2" in f.read():
            config.available_features.add("avx2")
except OSError:
    pass

# What CMake found (test/lit/CMakeCache.txt of the build): tests of the
# onednn dialect say `REQUIRES: onednn` (or `UNSUPPORTED: onednn` for a
# build without it), of remat{solver=ilp} `REQUIRES: glpk`, and of the mpi
# dialect `REQUIRES: mpi` (which needs mpirun too).
try:
    with open(os.path.join(raf_bin, "CMakeCache.txt")) as f:
        cache = f.read()
except OSError:
    cache = ""
for feature in ("onednn", "glpk", "mpi"):
    if "RAF_HAVE_%s:INTERNAL=ON" % feature.upper() in cache:
        if feature != "mpi" or shutil.which("mpirun"):
            config.available_features.add(feature)
# %mpirun N: N ranks on this machine, as root and on fewer cores than
# ranks, under a timeout so that a hang fails; Open MPI's own allocations
# are not raf's leaks (test/dist/lsan.supp).
config.substitutions.append(
    ("%mpirun", "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
     "LSAN_OPTIONS=suppressions=%s:fast_unwind_on_malloc=0 "
     "timeout 120 mpirun --oversubscribe --allow-run-as-root -np"
     % os.path.join(os.path.dirname(os.path.dirname(__file__)), "dist",
                    "lsan.supp")))

# Tests that export a PyTorch module with python/raf_torch (BERT of
# examples/bert) say `REQUIRES: torch`: %python finds torch (looked up,
# not imported).
try:
    import subprocess
    if subprocess.run([python, "-c", "import importlib.util, sys; "
                       "sys.exit(importlib.util.find_spec('torch') is None)"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                      timeout=30).returncode == 0:
        config.available_features.add("torch")
except (OSError, subprocess.TimeoutExpired):
    pass
# Tests that run examples/resnet (torchvision's ResNet-18) say `REQUIRES:
# torchvision` (Debian's python3-torchvision, beside python3-torch).
try:
    if subprocess.run([python, "-c", "import importlib.util, sys; "
                       "sys.exit(importlib.util.find_spec('torchvision') is None)"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                      timeout=30).returncode == 0:
        config.available_features.add("torchvision")
except (OSError, subprocess.TimeoutExpired):
    pass

# The cuda device (runtime/cuda/): a build with the CUDA toolkit's headers
# has the feature `cuda-support` and the fake driver of
# test/cuda/fake_driver.c (%fake-cuda: the folder of its libcuda.so.1, for
# LD_LIBRARY_PATH). GPU tests say `REQUIRES: cuda`: raf-run finds a usable
# device (a driver and a GPU) on this machine, as its --list-devices says.
if "RAF_HAVE_CUDA:INTERNAL=ON" in cache:
    config.available_features.add("cuda-support")
    config.substitutions.append(("%fake-cuda", os.path.join(raf_bin, "fake-cuda")))
# The nccl dialect: `nccl-support` in a build with NCCL's nccl.h, whose
# %fake-cuda also holds test/cuda/fake_nccl.c's libnccl.so.2 (with MPI).
if "RAF_HAVE_NCCL:INTERNAL=ON" in cache:
    config.available_features.add("nccl-support")
# The cudnn dialect: `cudnn-support` in a build with cuDNN 9's
# cudnn_graph.h, whose fake (fake-cuda/libcudnn_graph.so.9) runs its graphs.
if "RAF_HAVE_CUDNN:INTERNAL=ON" in cache:
    config.available_features.add("cudnn-support")
try:
    import subprocess
    probe = subprocess.run(
        [os.path.join(raf_bin, "raf-run"), "--device=cuda", "--list-devices"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    if probe.returncode == 0:
        config.available_features.add("cuda")
except (OSError, subprocess.TimeoutExpired):
    pass
