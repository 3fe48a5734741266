/* llvm.h: what the llvm dialect (runtime/llvm.c) tells its tools. */
#ifndef RAF_RUNTIME_LLVM_H
#define RAF_RUNTIME_LLVM_H

#include "runtime/exec.h"

#include <stdio.h>

/* Writes what the executor's JIT did: kernels compiled, loaded from the
 * disk cache, reused, declined (each declined function with its reason),
 * the time spent, and the cache directory. */
void raf_llvm_report(const raf_exec *ex, FILE *out);

#endif
