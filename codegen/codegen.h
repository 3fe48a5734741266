/* codegen.h: LLVM lowering of fused functions, the API of codegen/ for the
 * runtime (the llvm dialect, runtime/llvm.c) and the tools (raf-opt
 * --emit=llvm|ptx).
 *
 * One lowering (codegen/lower.c) turns a fused function (`{fused}`) into a
 * kernel over its iteration space (codegen/plan.h): elementwise and
 * broadcast chains with constants, and reductions and row ops (sum, mean,
 * max, min, softmax, log_softmax, layer_norm, cross_entropy with reduction
 * "none", mse_loss) over trailing axes with their elementwise producers and
 * consumers. A function it does not take is *declined* with a reason; the
 * runtime then runs it statement by statement.
 *
 * The host kernel ABI:
 *
 *   void kernel(void *const *bufs, int64_t begin, int64_t end);
 *
 * bufs holds the function's argument buffers, then its result buffers
 * (each in C order, of its type), then raf_cg_info.nscratch scratch
 * arrays of rows doubles; [begin, end) is a range of the parallel (outer)
 * dimension, rows of `raf_cg_info.rows`. Rows are independent, so any
 * split of [0, rows) into ranges computes the same bits; the call with
 * begin == 0 also stores the results that are a single element not under a
 * row op. A kernel with a total (cross_entropy "mean"/"sum") also has
 *
 *   void kernel_final(void *const *bufs);
 *
 * to call once after every row: it adds the rows' losses up in row order
 * and stores the results computed from them. The NVPTX kernels take the
 * same buffers as separate pointer parameters, on their own schedule
 * (raf_cg_compile_ptx below).
 *
 * Library code: errors are diagnostics or messages, never prints or exits.
 */
#ifndef RAF_CODEGEN_H
#define RAF_CODEGEN_H

#include "ir/ir.h"

#include <stdio.h>

typedef void (*raf_cg_host_fn)(void *const *bufs, int64_t begin,
                               int64_t end);
typedef void (*raf_cg_final_fn)(void *const *bufs);

/* A compiled kernel: `rows` calls of fn over ranges of rows, then one of
 * final (when not NULL). */
typedef struct raf_cg_kernel {
  raf_cg_host_fn fn;
  raf_cg_final_fn final;
} raf_cg_kernel;

/* A cross_entropy's labels, which the caller checks before running the
 * kernel: every label of argument `arg` is in [0, classes) or is `ignore`
 * (the kernel reads no logit for a bad one, but computes garbage). */
typedef struct raf_cg_label_check {
  int arg;
  int64_t classes, ignore;
  const raf_stmt *stmt;
  bool backward; /* cross_entropy_grad's labels: its message */
} raf_cg_label_check;

/* How to run a kernel: `rows` rows in ranges of `grain` rows (fixed by
 * the shapes, so the split never depends on the thread count), with
 * `nscratch` scratch arrays of `rows` doubles after the results in bufs. */
typedef struct raf_cg_info {
  int64_t rows, grain;
  int nscratch;
  int nchecks;
  raf_cg_label_check checks[8];
} raf_cg_info;

/* Whether the lowering takes f; when it does not, why (a phrase) goes into
 * why. Fills *info when not NULL. */
bool raf_cg_supports(const raf_func *f, raf_cg_info *info, char *why,
                     size_t size);

/* ---- Emission (raf-opt) --------------------------------------------------- */

typedef enum raf_cg_emit_kind { RAF_CG_EMIT_LLVM, RAF_CG_EMIT_PTX } raf_cg_emit_kind;

typedef struct raf_cg_emit_options {
  raf_cg_emit_kind kind;
  const char *cuda_arch; /* PTX: "sm_80" (default), "sm_90", ... */
  const char *cpu;       /* LLVM IR: the CPU to tune for; NULL: the host */
  bool optimize;         /* run the O3 pipeline (default in raf-opt) */
} raf_cg_emit_options;

/* The CUDA architectures of --emit=ptx: LLVM 19's NVPTX processors from
 * sm_30 on (static storage); *count receives their number. */
const char *const *raf_cg_cuda_archs(size_t *count);

/* Writes one LLVM module (textual IR for the host, or PTX) holding the
 * kernel of every fused function of m, named after it ("fused_3"); a fused
 * function the lowering declines becomes a comment line
 * ("; @fused_3: not compiled: <why>" or "// ..." in PTX). A module
 * without fused functions gets a note saying so, its output holding no
 * kernel. An unknown cuda_arch is an error. Errors are reported to ctx. */
raf_status raf_cg_emit(raf_ctx *ctx, const raf_module *m,
                       const raf_cg_emit_options *o, FILE *out);

/* ---- PTX for the CUDA runtime --------------------------------------------- */

/* One kernel launch: a 1-D grid of grid[0] blocks of block[0] threads (the
 * other dims 1) with shared_bytes of static shared memory (declared in the
 * PTX; no dynamic shared memory). Shapes are static, so these are numbers;
 * any grid covers the work (the kernels stride over it), the one given is
 * the one schedule.c chose. */
typedef struct raf_cg_launch {
  char name[256]; /* the .entry in the PTX */
  int64_t grid[3];
  int block[3];
  int shared_bytes;
} raf_cg_launch;

/* A fused function's PTX and how to launch it. Each kernel's parameters
 * are the buffers of the host ABI, one pointer each (arguments, results,
 * then info.nscratch arrays of info.rows doubles, which the caller
 * allocates; results computed in place take both pointers), nothing else.
 * kernels[0] runs first; with a total kernels[1] (`<name>_final`) runs
 * after it on the same stream, one block. The caller checks info.checks'
 * labels before launching, as on the host. */
typedef struct raf_cg_ptx {
  char *ptx; /* NUL-terminated PTX text, owned: raf_cg_ptx_free */
  int nkernels;
  raf_cg_launch kernels[2];
  raf_cg_info info;
  bool cached; /* the PTX came from the on-disk kernel cache */
} raf_cg_ptx;

/* Compiles fused function f to PTX for arch ("sm_80", "sm_90", ...;
 * NULL: sm_80) with the kernels named `name` (NULL: f's name), the math
 * library linked from libdevice, the O3 pipeline run. inplace as in
 * raf_jit_compile. false when the lowering declines f (*declined set) or
 * on an error, with why; *out is then empty. The PTX goes into the on-disk
 * kernel cache, keyed on the kernel's LLVM IR before optimisation, the
 * architecture and LLVM's version, and is taken from it when there
 * (out->cached). */
bool raf_cg_compile_ptx(const raf_func *f, const char *arch, const char *name,
                        const int *inplace, raf_cg_ptx *out, bool *declined,
                        char *why, size_t size);
/* Frees out->ptx and clears *out (NULL is fine). */
void raf_cg_ptx_free(raf_cg_ptx *out);

/* The PTX name of a kernel made of the function `name`, into out: PTX
 * identifiers are [A-Za-z0-9_$] (and start with a letter, or with _ or $
 * and one more character), while raf's function names may hold dots
 * (@f.grad). LLVM 19's NVPTX backend renames only internal globals with a
 * dot (a.b to a_$_b) and would print a kernel named f.grad as is, which
 * ptxas and the driver refuse; so codegen names its kernels this way
 * itself, and the runtime looks up the name raf_cg_ptx's kernels[] give:
 * every other character becomes "_$_" (as LLVM does: no raf name has a
 * '$', so two names never meet), and a name that is "_" gets a second
 * "_". Truncated to size - 1. */
void raf_cg_ptx_name(const char *name, char *out, size_t size);

/* ---- The on-disk kernel cache, for what the runtime compiles -------------
 * The cache of the JIT and of raf_cg_compile_ptx (codegen/cache.h: the
 * directory is $RAF_CACHE_DIR, empty for none, else $XDG_CACHE_HOME/raf/
 * kernels or ~/.cache/raf/kernels), for a payload the runtime makes, such
 * as a GPU's cubin of a PTX: keyed on BLAKE3 of the NULL-terminated list
 * of strings `pieces` (everything the payload depends on), in a file with
 * extension ext (".cubin"). */

/* The payload cached under the key, malloc'd (the caller frees it) with
 * its size in *size; NULL when there is none (or no cache). */
void *raf_cg_cache_get(const char *const *pieces, const char *ext,
                       size_t *size);
/* Caches a payload; false when it could not (callers go on without). */
bool raf_cg_cache_put(const char *const *pieces, const char *ext,
                      const void *data, size_t size);

/* ---- The x86-64 JIT (the llvm dialect) ----------------------------------- */

typedef struct raf_jit raf_jit;

typedef struct raf_jit_stats {
  int compiled; /* kernels compiled by LLVM in this JIT */
  int cached;   /* kernels loaded from the disk cache */
  int reused;   /* fused functions whose kernel another one already had */
  int declined; /* fused functions the lowering does not take */
  int cache_rejected; /* cache entries found corrupt and rewritten */
  double compile_ms;  /* time spent lowering, compiling and loading */
  const char *cache_dir; /* NULL when the disk cache is off */
} raf_jit_stats;

/* A JIT for this host (ORC LLJIT), with the kernel cache of cache.c; NULL
 * when LLVM cannot make one (reported to ctx). */
raf_jit *raf_jit_create(raf_ctx *ctx);
void raf_jit_destroy(raf_jit *j);

/* The kernel of fused function f, compiled or found in the cache. false
 * when the lowering declines f (*declined set, why filled) or on an error
 * (reported to the JIT's context, at f). inplace is NULL, or per result of
 * f the argument whose buffer it is computed in (-1: its own buffer): the
 * kernel is then passed the same buffer for both (see cg_lower in
 * codegen/lower.h for the kernels that can). */
bool raf_jit_compile(raf_jit *j, const raf_func *f, const int *inplace,
                     raf_cg_kernel *kernel, raf_cg_info *info, bool *declined,
                     char *why, size_t size);
void raf_jit_get_stats(const raf_jit *j, raf_jit_stats *out);

#endif
