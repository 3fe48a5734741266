#!/usr/bin/env bash
# gpu-bundle.sh [BUILD_DIR]: builds raf here and packs what a bare CUDA
# machine needs to check it into one relocatable tarball,
# build/raf-gpu-bundle.tar.xz (its path is printed last; a folder
# raf-gpu/ inside).
#
# The GPU machine has the NVIDIA driver, the CUDA toolkit and Python with
# PyTorch, but no LLVM, no OpenBLAS, no Debian packages and no network, and
# no compiler is used there. So the bundle carries:
#   bin/   raf-opt, raf-run, the GPU's unit tests (test_device, test_gpu_*,
#          test_*cuda*, test_*cublas*; stripped), FileCheck, not, count,
#          fake-cuda/ (the fake driver's libcuda.so.1, cuBLASLt and cuDNN,
#          for the lit tests that need no GPU) and a
#          CMakeCache.txt of the RAF_HAVE_* lines (test/lit's features)
#   lib/   every shared library those need that is not glibc's own or the
#          NVIDIA driver's (ldd), found through the binaries' RPATH
#          $ORIGIN/../lib (a DT_RPATH, which, unlike DT_RUNPATH, also serves
#          the libraries' own dependencies)
#   lit/   Debian's llvm-19-tools' lit (pure Python)
#   nvvm/libdevice/libdevice.10.bc  the CUDA math library codegen links
#          into PTX kernels: a GPU machine whose nvcc came from pip or conda
#          has no /usr/local/cuda to find it in; raf-opt and raf-run look
#          here first (beside bin/), and gpu-check.sh sets RAF_LIBDEVICE
#   test/, examples/, bench/, scripts/, python/, cmake/  the repository's
#          tracked files there (the lit tests use python/raf_torch and
#          cmake/embed_ptx.cmake)
#   data/resnet18/resnet.raf  torchvision's ResNet-18 (B=64, 3x224x224) as
#          bench/resnet.sh exports it, for gpu-check.sh's ResNet-18 parts
#          (bench/gpu_resnet_torch.py export; not its weights, 47 MB of
#          random floats that xz cannot shrink: gpu-check.sh writes them)
#   data/fashion-mnist/  the MLP example's data: Debian's, uncompressed, the
#          first 50,000 of the 60,000 training images and the 10,000 test
#          images (bench/gpu_data.py pack; all of it would pass 60 MB)
# The build (BUILD_DIR, default build-gpu) is Release with the cuda device,
# without oneDNN and MPI (CPU-only dialects whose libraries would double the
# bundle).
#
# Before packing, the staging folder is checked the way the GPU machine will
# use it: under `env -i PATH=/usr/bin:/bin`, every library raf-run, raf-opt
# and FileCheck load comes from lib/ or glibc, raf-opt and raf-run run an
# example, raf-opt makes ResNet-18's training step, and the lit tests of
# test/lit/run and test/lit/cli pass.
# SKIP_SELF_CHECK=1 leaves the lit tests out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build-gpu}
out=$root/build/raf-gpu-bundle.tar.xz
stage=$root/build/raf-gpu-bundle/raf-gpu
llvm_bin=/usr/lib/llvm-19/bin
lit_src=/usr/lib/llvm-19/build/utils/lit

bash scripts/install-deps.sh > /dev/null
mkdir -p "$build" build
echo "== configure $build (Release, cuda device, RPATH \$ORIGIN/../lib)" >&2
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRAF_CUDA=ON \
  -DRAF_ONEDNN=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
  -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=OFF \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags > "$build/cmake.log" 2>&1 \
  || { cat "$build/cmake.log" >&2; exit 1; }
grep -q 'building the cuda device' "$build/cmake.log" ||
  { echo "gpu-bundle.sh: CMake found no CUDA toolkit (set CUDAToolkit_ROOT)" >&2; exit 1; }
# The unit tests of the GPU (the others are the CPU's, checked by CI).
tests=$(cd test/unit && ls test_*.c | sed 's/\.c$//' | grep -E 'device|gpu|cuda|cublas')
echo "== build raf-opt, raf-run and the unit tests" >&2
# The fake cuDNN where the build has the cudnn dialect (cuDNN's headers).
fakes="raf_fake_cuda raf_fake_cublaslt"
grep -q '^RAF_HAVE_CUDNN:INTERNAL=ON' "$build/CMakeCache.txt" &&
  fakes="$fakes raf_fake_cudnn"
# shellcheck disable=SC2086
cmake --build "$build" -j "${JOBS:-2}" --target raf-opt raf-run $fakes \
  $tests >&2

echo "== stage $stage" >&2
rm -rf "$(dirname "$stage")"
mkdir -p "$stage/bin/fake-cuda" "$stage/lib" "$stage/lit" "$stage/data"
for b in raf-opt raf-run $tests; do
  cp "$build/$b" "$stage/bin/"
done
cp "$llvm_bin/FileCheck" "$llvm_bin/not" "$llvm_bin/count" "$stage/bin/"
strip "$stage"/bin/raf-* "$stage"/bin/test_* "$stage"/bin/FileCheck "$stage"/bin/not "$stage"/bin/count
# The fakes of the driver, cuBLASLt and cuDNN (where the build has the
# cudnn dialect), and the PTX of runtime/cuda/*.cu, for the lit tests of
# the cuda device that need no GPU (%fake-cuda).
cp -L "$build"/fake-cuda/libcuda.so.1 "$build"/fake-cuda/libcublasLt.so.13 \
  "$stage/bin/fake-cuda/"
ln -sf libcublasLt.so.13 "$stage/bin/fake-cuda/libcublasLt.so.12"
if [ -f "$build/fake-cuda/libcudnn_graph.so.9" ]; then
  cp -L "$build/fake-cuda/libcudnn_graph.so.9" "$stage/bin/fake-cuda/"
  ln -sf libcudnn_graph.so.9 "$stage/bin/fake-cuda/libcudnn.so.9"
fi
cp -r "$build/cuda-ptx" "$stage/bin/"
grep '^RAF_HAVE_' "$build/CMakeCache.txt" > "$stage/bin/CMakeCache.txt"

# The libraries: everything ldd resolves for the binaries except glibc's
# own, the NVIDIA driver's and the fake driver.
system_lib() { # NAME: whether a bare machine has it (glibc, the driver)
  case $1 in
    linux-vdso.so* | ld-linux* | libc.so* | libm.so* | libpthread.so* | \
    libdl.so* | librt.so* | libresolv.so* | libutil.so* | libcuda.so* | \
    libnvidia*) return 0 ;;
  esac
  return 1
}
for b in "$stage"/bin/raf-opt "$stage"/bin/raf-run "$stage"/bin/test_* \
         "$stage"/bin/FileCheck "$stage"/bin/not "$stage"/bin/count; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  system_lib "$name" || cp -L "$path" "$stage/lib/$name"
done
# Two libraries libLLVM loads and raf never calls into are stubs, which
# keeps 15 MB out of the bundle: Z3 (LLVM's SMT solver, for the static
# analyzer; libLLVM binds its functions lazily, at a first call that never
# comes) and ICU's data (libxml2's encodings, through libicuuc, which needs
# one symbol, icudtNN_dat, at load time and reads it only when ICU is used).
# The check below runs raf with them.
stubs=$root/build/raf-gpu-bundle/stubs
mkdir -p "$stubs"
cc -shared -fPIC -o "$stage/lib/libz3.so.4" -Wl,-soname,libz3.so.4 -x c /dev/null
icudt=$(nm -D --undefined-only "$stage"/lib/libicuuc.so.* | awk '/icudt[0-9]+_dat/ { print $2 }')
icudata=$(basename "$stage"/lib/libicudata.so.*)
if [ -n "$icudt" ] && [ -f "$stage/lib/$icudata" ]; then
  echo "const unsigned char ${icudt}[32] = {0};" > "$stubs/icudata.c"
  cc -shared -fPIC -o "$stage/lib/$icudata" -Wl,-soname,"$icudata" "$stubs/icudata.c"
fi
rm -rf "$stubs"
strip --strip-unneeded "$stage"/lib/*.so*
chmod 644 "$stage"/lib/*

cp -r "$lit_src/lit" "$lit_src/lit.py" "$stage/lit/"
# libdevice, where codegen finds it when it is not told (the toolkit's
# layout, beside bin/): the toolkit's that CMake found, else the usual one.
libdevice=${RAF_LIBDEVICE:-}
for d in "${CUDA_HOME:-}" "$(sed -n 's/^CUDAToolkit_BIN_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")/.." \
    /usr/local/cuda; do
  [ -n "$libdevice" ] && break
  [ -n "$d" ] && [ -f "$d/nvvm/libdevice/libdevice.10.bc" ] &&
    libdevice=$d/nvvm/libdevice/libdevice.10.bc
done
[ -n "$libdevice" ] && [ -f "$libdevice" ] ||
  { echo "gpu-bundle.sh: no libdevice.10.bc (set RAF_LIBDEVICE)" >&2; exit 1; }
mkdir -p "$stage/nvvm/libdevice"
cp "$libdevice" "$stage/nvvm/libdevice/libdevice.10.bc"
find "$stage/lit" -name __pycache__ -prune -exec rm -rf {} +
git ls-files -z --cached --others --exclude-standard test examples bench scripts \
  python cmake | xargs -0 cp --parents -t "$stage"
python3 bench/gpu_data.py pack /usr/share/datasets/fashion-mnist \
  "$stage/data/fashion-mnist" --train 50000
echo "== export ResNet-18 (python/raf_torch)" >&2
/usr/bin/python3 bench/gpu_resnet_torch.py export "$stage/data/resnet18" --batch 64

# The check: the staging folder, moved, in an empty environment.
echo "== check the staging folder in an empty environment" >&2
moved=$root/build/raf-gpu-bundle/moved
mv "$stage" "$moved"
trap 'rm -rf "$moved.work"' EXIT
check() {
  # RAF_LIBDEVICE as gpu-check.sh sets it: the bundle's own libdevice.
  local env=(env -i PATH=/usr/bin:/bin HOME="$moved.work" \
             LD_LIBRARY_PATH="$moved/lib" \
             RAF_LIBDEVICE="$moved/nvvm/libdevice/libdevice.10.bc")
  mkdir -p "$moved.work"
  for b in raf-opt raf-run FileCheck; do
    # Outside lib/ only glibc's libraries (by their names); FileCheck has no
    # RPATH and finds lib/ through LD_LIBRARY_PATH.
    bad=$("${env[@]}" ldd "$moved/bin/$b" |
      awk '$2 == "=>" { print $1, $3 }' | while read -r name path; do
        case $(realpath -m "$path") in
          "$moved"/lib/*) ;;
          *) system_lib "$name" || echo "$name ($path)" ;;
        esac
      done)
    [ -z "$bad" ] || { echo "gpu-bundle.sh: $b loads from outside the bundle: $bad" >&2; return 1; }
  done
  "${env[@]}" "$moved/bin/raf-opt" \
    -p 'autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse,plan-memory' \
    "$moved/examples/mlp/mlp.raf" -o "$moved.work/step.raf" || return 1
  "${env[@]}" "$moved/bin/raf-opt" \
    -p 'autodiff,amp,optimizer{kind=adamw lr=1e-3},inline,fuse,dispatch,plan-memory' \
    "$moved/data/resnet18/resnet.raf" -o "$moved.work/resnet-step.raf" || return 1
  "${env[@]}" python3 "$moved/bench/gpu_data.py" mlp \
    "$moved/data/fashion-mnist" "$moved.work/data" > /dev/null || return 1
  "${env[@]}" RAF_CACHE_DIR="$moved.work/cache" "$moved/bin/raf-run" \
    "$moved.work/step.raf" --function=mlp_train_step --steps=20 \
    --dataset=x=@"$moved.work/data/train_x.npy" \
    --dataset=labels=@"$moved.work/data/train_y.npy" > /dev/null || return 1
  "${env[@]}" "$moved/bin/raf-run" --device=cuda --list-devices > /dev/null 2>&1
  [ "${SKIP_SELF_CHECK:-0}" = 1 ] && return 0
  "${env[@]}" /usr/bin/python3 "$moved/lit/lit.py" -q \
    --param raf_bin="$moved/bin" --param llvm_bin="$moved/bin" \
    "$moved/test/lit/run" "$moved/test/lit/cli" >&2
}
check || { echo "gpu-bundle.sh: the bundle does not run from another folder" >&2; exit 1; }
mv "$moved" "$stage"
rm -rf "$stage/bin/lit-kernel-cache"
find "$stage/test" -name Output -prune -exec rm -rf {} +
rm -f "$stage/test/lit/.lit_test_times.txt"

echo "== pack (xz -9)" >&2
tar -C "$(dirname "$stage")" -cf - raf-gpu | xz -9 -T "${JOBS:-2}" > "$out"
size=$(stat -c %s "$out")
echo "gpu-bundle.sh: $((size / 1000000)) MB" >&2
[ "$size" -lt 60000000 ] ||
  { echo "gpu-bundle.sh: the bundle is over 60 MB" >&2; exit 1; }
echo "$out"
