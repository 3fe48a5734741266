/* cudnn_lib.c: loading cuDNN (cudnn_lib.h).
 *
 * library.h finds and opens libcudnn_graph.so.9, then dlsym resolves every
 * entry point of cudnn_lib.def. cuDNN's exported names are its ABI within a
 * major, so one table serves every 9.x; what differs between minors is
 * which graphs its engines take, which raf_cudnn_feature_version says.
 */
#include "runtime/cuda/cudnn_lib.h"

#include "runtime/cuda/library.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static const raf_cuda_symbol symbols[] = {
#define DNN_ENTRY(ret, name, params) {#name, offsetof(raf_cudnn_lib, name)},
#include "runtime/cuda/cudnn_lib.def"
#undef DNN_ENTRY
};

void raf_cudnn_version_str(size_t v, char *buf, size_t size) {
  if (v >= 90000) /* cuDNN 9: major * 10000 + minor * 100 + patch */
    snprintf(buf, size, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
  else /* cuDNN 8 and before: major * 1000 + minor * 100 + patch */
    snprintf(buf, size, "%zu.%zu.%zu", v / 1000, v / 100 % 10, v % 100);
}

size_t raf_cudnn_feature_version(raf_opcode op) {
  /* Attention's graphs (a causal mask by GEN_INDEX and BINARY_SELECT, the
   * softmax's statistics as an output) are written against cuDNN 9.1's
   * documentation of those pointwise modes; the rest against 9.0's. */
  if (op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION ||
      op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD)
    return 90100;
  return RAF_CUDNN_MIN_VERSION;
}

raf_status raf_cudnn_lib_load(raf_ctx *ctx, raf_cudnn_lib **out) {
  raf_cudnn_lib *lib = calloc(1, sizeof *lib);
  *out = NULL;
  if (!lib) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  lib->library = raf_cuda_library_load(ctx, &raf_cuda_cudnn_library, 0,
                                       symbols,
                                       sizeof symbols / sizeof symbols[0], lib,
                                       lib->path, sizeof lib->path);
  if (!lib->library) {
    raf_cudnn_lib_unload(lib);
    return RAF_ERROR;
  }
  lib->version = lib->cudnnGetVersion();
  if (lib->version < RAF_CUDNN_MIN_VERSION) {
    char found[32], need[32];
    raf_cudnn_version_str(lib->version, found, sizeof found);
    raf_cudnn_version_str(RAF_CUDNN_MIN_VERSION, need, sizeof need);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "%s is cuDNN %s; raf's cudnn dialect needs cuDNN %s or "
                    "later (set RAF_CUDNN to a newer libcudnn_graph.so.9)",
                    lib->path, found, need);
    raf_cudnn_lib_unload(lib);
    return RAF_ERROR;
  }
  *out = lib;
  return RAF_OK;
}

void raf_cudnn_lib_unload(raf_cudnn_lib *lib) {
  /* The library stays loaded: its engines keep process-wide state (kernel
   * caches, the static C++ runtime's allocations) that unloading would
   * strand. */
  free(lib);
}

const char *raf_cudnn_status_text(const raf_cudnn_lib *lib, cudnnStatus_t s) {
  const char *t = lib ? lib->cudnnGetErrorString(s) : NULL;
  return t ? t : "unknown cuDNN status";
}
