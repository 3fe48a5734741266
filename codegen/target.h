/* target.h: LLVM targets for codegen/ (internal): initialisation, target
 * machines for the host and NVPTX, the O3 pipeline, emission, libdevice.
 * Every function reports failure as false with a message in why. */
#ifndef RAF_CODEGEN_TARGET_H
#define RAF_CODEGEN_TARGET_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdbool.h>
#include <stddef.h>

/* Initialises the x86 and NVPTX targets once per process. */
void cg_init_targets(void);

/* The host's triple, CPU and features (owned by the caller: free with
 * LLVMDisposeMessage), cpu overridden when not NULL. */
typedef struct cg_host {
  char *triple, *cpu, *features;
} cg_host;
void cg_host_get(cg_host *h, const char *cpu);
void cg_host_free(cg_host *h);

/* The libmvec ISA the host's kernels vectorize the math library with
 * ('e' with AVX-512, 'd' with AVX2, else 0), given its features; 0 when
 * $RAF_JIT_MATH is "exact" (scalar libm: bit-identical to cpu-ref). */
char cg_vec_isa(const char *features);

/* A target machine for the host (O3, PIC), or for NVPTX at `arch`
 * ("sm_80"); NULL with why on failure. */
LLVMTargetMachineRef cg_host_tm(const cg_host *h, char *why, size_t size);
LLVMTargetMachineRef cg_nvptx_tm(const char *arch, char *why, size_t size);

/* Sets M's triple and data layout for tm, and the target attributes of its
 * functions (prefer-vector-width=512 where AVX-512 is present). */
void cg_prepare_module(LLVMModuleRef M, LLVMTargetMachineRef tm,
                       const char *features);
/* Runs the O3 pipeline (loop and SLP vectorizers on). */
bool cg_optimize(LLVMModuleRef M, LLVMTargetMachineRef tm, char *why,
                 size_t size);
/* Links libdevice into an NVPTX module that calls __nv_* functions and
 * internalises it (a module calling none is left alone). */
bool cg_link_libdevice(LLVMModuleRef M, char *why, size_t size);
/* Verifies M (an invalid module is a lowering bug). */
bool cg_verify(LLVMModuleRef M, char *why, size_t size);

#endif
