/* nccl.h: NCCL, loaded at run time, for the nccl dialect (nccl.c).
 *
 * As with cuBLASLt (cublaslt.h), raf never links NCCL: the dialect opens
 * libnccl.so.2 with dlopen when an executor first needs it (library.h says
 * where it looks: the loader's path, the toolkit's folders, pip's
 * nvidia/nccl/lib; RAF_NCCL overrides) and resolves the entry points of
 * nccl.def with dlsym. Building needs only NCCL's nccl.h, for the types.
 */
#ifndef RAF_CUDA_NCCL_H
#define RAF_CUDA_NCCL_H

#include "ir/ir.h"

#include <nccl.h>

typedef struct raf_nccl {
  void *library; /* dlopen's handle */
  int version;   /* ncclGetVersion: 22809 for 2.28.9 */
  char path[256];
#define NCCL_ENTRY(ret, name, params) ret (*name) params;
#include "runtime/cuda/nccl.def"
#undef NCCL_ENTRY
} raf_nccl;

/* Finds and opens NCCL and resolves every entry point. *out belongs to
 * the caller: raf_nccl_unload. On failure reports one line (library.h's,
 * or "P has no ncclAllGather (NCCL)") and sets *out to NULL. */
raf_status raf_nccl_load(raf_ctx *ctx, raf_nccl **out);
/* Frees nccl; the library stays loaded for the process, as cuBLASLt does.
 * NULL is ignored. */
void raf_nccl_unload(raf_nccl *nccl);

#endif
