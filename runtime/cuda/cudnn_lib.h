/* cudnn_lib.h: cuDNN 9, loaded at run time.
 *
 * As with cuBLASLt (cublaslt.h), raf never links cuDNN: the cudnn dialect
 * opens libcudnn_graph.so.9 with dlopen when an executor first needs it
 * and resolves the entry points of cudnn_lib.def with dlsym. Building
 * needs only cuDNN's cudnn_graph.h, for the types. The library is looked
 * for as library.h says: on the loader's path, in the toolkit's folders
 * and in pip's nvidia/cudnn/lib (where PyTorch's wheels keep it);
 * RAF_CUDNN overrides the search.
 *
 * cuDNN's version is checked per feature: the library must be cuDNN 9
 * (its split libraries and backend API), and each op the dialect runs
 * names the oldest 9.x it was written for (raf_cudnn_feature_version).
 */
#ifndef RAF_CUDA_CUDNN_LIB_H
#define RAF_CUDA_CUDNN_LIB_H

#include "ir/ir.h"

#include <cudnn_graph.h>

typedef struct raf_cudnn_lib {
  void *library;  /* dlopen's handle */
  size_t version; /* cudnnGetVersion: 91900 for 9.19.0 */
  char path[256]; /* the name it was opened by */
#define DNN_ENTRY(ret, name, params) ret (*name) params;
#include "runtime/cuda/cudnn_lib.def"
#undef DNN_ENTRY
} raf_cudnn_lib;

/* The oldest cuDNN any of the dialect's graphs runs on: 9.0.0. */
#define RAF_CUDNN_MIN_VERSION 90000

/* Finds and opens cuDNN and resolves every entry point. *out belongs to
 * the caller: raf_cudnn_lib_unload. On failure reports one line (where it
 * looked, as library.h's search says; "P has no cudnnBackendExecute
 * (cuDNN)"; "P is cuDNN 8.9.7; raf's cudnn dialect needs cuDNN 9.0.0 or
 * later") and sets *out to NULL. */
raf_status raf_cudnn_lib_load(raf_ctx *ctx, raf_cudnn_lib **out);
/* Frees lib; the library stays loaded for the process, as cuBLASLt does
 * (cublaslt.h). NULL is ignored. */
void raf_cudnn_lib_unload(raf_cudnn_lib *lib);

/* The status in words ("CUDNN_STATUS_NOT_SUPPORTED"), or a number. */
const char *raf_cudnn_status_text(const raf_cudnn_lib *lib, cudnnStatus_t s);

/* The oldest cuDNN (as cudnnGetVersion writes it) whose graphs the
 * dialect builds for op: RAF_CUDNN_MIN_VERSION, or later for attention. */
size_t raf_cudnn_feature_version(raf_opcode op);

/* Writes cudnnGetVersion's v as "9.19.0" into buf. cuDNN 9 writes
 * major * 10000 + minor * 100 + patch; cuDNN 8 wrote major * 1000 +
 * minor * 100 + patch. */
void raf_cudnn_version_str(size_t v, char *buf, size_t size);

#endif
