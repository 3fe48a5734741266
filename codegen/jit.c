/* jit.c: the x86-64 JIT of fused functions (codegen.h), on ORC's LLJIT.
 *
 * Each fused function is lowered into a module of its own, in a context of
 * its own, with its kernel named raf_kernel. The kernel's key (cache.h) is
 * BLAKE3 over that module's text and the target; the kernel is then named
 * raf_k_<key> so that identical kernels (the same update chain for two
 * parameters of one shape, a model compiled twice) share one symbol: a key
 * already in this JIT is reused, one in the disk cache is loaded from its
 * object file, anything else is optimised (O3), compiled to an object file
 * by the host target machine, written to the cache and loaded. Each object
 * is added under its own resource tracker, so an entry the linker rejects
 * is removed again and compiled afresh.
 *
 * The kernels call libm (expf, tanhf, ...), which the JIT resolves in this
 * process. ORC's errors go to a reporter that keeps them quiet: every
 * failure comes back as a value and becomes a diagnostic.
 */
#include "codegen/cache.h"
#include "codegen/codegen.h"
#include "codegen/lower.h"
#include "codegen/target.h"

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct entry {
  cg_key key;
  raf_cg_kernel k;
} entry;

struct raf_jit {
  raf_ctx *ctx;
  LLVMOrcLLJITRef jit;
  LLVMOrcJITDylibRef jd;
  cg_host host;
  LLVMTargetMachineRef tm;
  char vec_isa; /* cg_options */
  char cache_dir[4096];
  bool cache;
  entry *entries;
  int n, cap;
  raf_jit_stats stats;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Takes an LLVM error's message into why and disposes of it. */
static bool llvm_error(LLVMErrorRef err, const char *what, char *why,
                       size_t size) {
  if (!err)
    return false;
  char *msg = LLVMGetErrorMessage(err);
  snprintf(why, size, "%s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
  return true;
}

static void quiet_reporter(void *ctx, LLVMErrorRef err) {
  (void)ctx;
  LLVMConsumeError(err);
}

raf_jit *raf_jit_create(raf_ctx *ctx) {
  raf_jit *j = calloc(1, sizeof *j);
  if (!j) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "llvm: out of memory for the JIT");
    return NULL;
  }
  j->ctx = ctx;
  char why[512];
  cg_host_get(&j->host, NULL);
  j->tm = cg_host_tm(&j->host, why, sizeof why);
  bool ok = j->tm != NULL;
  if (ok) {
    LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
    ok = !llvm_error(LLVMOrcCreateLLJIT(&j->jit, b), "cannot create the JIT",
                     why, sizeof why);
  }
  if (ok) {
    LLVMOrcExecutionSessionSetErrorReporter(
        LLVMOrcLLJITGetExecutionSession(j->jit), quiet_reporter, NULL);
    j->jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
    LLVMOrcDefinitionGeneratorRef gen;
    ok = !llvm_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                         &gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL,
                         NULL),
                     "cannot resolve this process's symbols in the JIT", why,
                     sizeof why);
    if (ok)
      LLVMOrcJITDylibAddGenerator(j->jd, gen);
  }
  /* Vectorised math needs glibc's libmvec; without it, scalar libm. */
  j->vec_isa = cg_vec_isa(j->host.features);
  if (ok && j->vec_isa) {
    LLVMOrcDefinitionGeneratorRef gen;
    LLVMErrorRef err = LLVMOrcCreateDynamicLibrarySearchGeneratorForPath(
        &gen, "libmvec.so.1", LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL);
    if (err) {
      LLVMConsumeError(err);
      j->vec_isa = 0;
    } else {
      LLVMOrcJITDylibAddGenerator(j->jd, gen);
    }
  }
  if (!ok) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "llvm: %s", why);
    raf_jit_destroy(j);
    return NULL;
  }
  j->cache = cg_cache_dir(j->cache_dir, sizeof j->cache_dir);
  j->stats.cache_dir = j->cache ? j->cache_dir : NULL;
  return j;
}

void raf_jit_destroy(raf_jit *j) {
  if (!j)
    return;
  if (j->jit)
    LLVMConsumeError(LLVMOrcDisposeLLJIT(j->jit));
  if (j->tm)
    LLVMDisposeTargetMachine(j->tm);
  cg_host_free(&j->host);
  free(j->entries);
  free(j);
}

void raf_jit_get_stats(const raf_jit *j, raf_jit_stats *out) {
  *out = j->stats;
}

static bool find(const raf_jit *j, const cg_key *k, raf_cg_kernel *out) {
  for (int i = 0; i < j->n; i++)
    if (memcmp(j->entries[i].key.b, k->b, 16) == 0) {
      *out = j->entries[i].k;
      return true;
    }
  return false;
}

static void remember(raf_jit *j, const cg_key *k, raf_cg_kernel kernel) {
  if (j->n == j->cap) {
    int cap = j->cap ? 2 * j->cap : 16;
    entry *e = realloc(j->entries, sizeof *e * (size_t)cap);
    if (!e)
      return; /* only the reuse of identical kernels is lost */
    j->entries = e;
    j->cap = cap;
  }
  j->entries[j->n++] = (entry){*k, kernel};
}

/* Adds an object file and looks its kernel (and final step, when `final`)
 * up; false (with the object removed again) when the linker rejects it. */
static bool load(raf_jit *j, const void *obj, size_t size, const char *symbol,
                 bool final, raf_cg_kernel *out, char *why, size_t wsize) {
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(j->jd);
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, size, symbol);
  LLVMOrcExecutorAddress addr = 0, faddr = 0;
  char fsym[96];
  snprintf(fsym, sizeof fsym, "%s_final", symbol);
  bool ok = !llvm_error(LLVMOrcLLJITAddObjectFileWithRT(j->jit, rt, buf),
                        "cannot add the kernel to the JIT", why, wsize);
  if (ok)
    ok = !llvm_error(LLVMOrcLLJITLookup(j->jit, &addr, symbol),
                     "cannot link the kernel", why, wsize) &&
         addr != 0;
  if (ok && final)
    ok = !llvm_error(LLVMOrcLLJITLookup(j->jit, &faddr, fsym),
                     "cannot link the kernel", why, wsize) &&
         faddr != 0;
  if (!ok)
    LLVMConsumeError(LLVMOrcResourceTrackerRemove(rt));
  LLVMOrcReleaseResourceTracker(rt);
  out->fn = ok ? (raf_cg_host_fn)(uintptr_t)addr : NULL;
  out->final = ok && final ? (raf_cg_final_fn)(uintptr_t)faddr : NULL;
  return ok;
}

/* Optimises M and compiles it to an object file (into *obj, *size). */
static bool compile(raf_jit *j, LLVMModuleRef M, LLVMMemoryBufferRef *obj,
                    char *why, size_t size) {
  cg_prepare_module(M, j->tm, j->host.features);
  if (!cg_optimize(M, j->tm, why, size))
    return false;
  char *msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(j->tm, M, LLVMObjectFile, &msg,
                                          obj)) {
    snprintf(why, size, "LLVM cannot compile the kernel: %s",
             msg ? msg : "");
    LLVMDisposeMessage(msg);
    return false;
  }
  return true;
}

static void fill_info(const cg_plan *p, raf_cg_info *info) {
  memset(info, 0, sizeof *info);
  info->rows = p->rows;
  info->nscratch = 2 * p->ntotals;
  /* About 64k element-statements per range: chunks big enough to pay for
   * the pool, small enough to spread; a function of the shapes only. */
  int64_t per_row = p->cols * (p->nstmts + 1);
  info->grain = per_row >= (1 << 16) ? 1 : (1 << 16) / (per_row + 1) + 1;
  int tile = cg_plan_tile(p); /* whole tiles of rows per range */
  if (tile)
    info->grain = (info->grain + tile - 1) / tile * tile;
  info->nchecks = p->nchecks;
  for (int i = 0; i < p->nchecks; i++)
    info->checks[i] = (raf_cg_label_check){
        p->checks[i].arg, p->checks[i].classes, p->checks[i].ignore,
        p->checks[i].stmt, p->checks[i].backward};
}

bool raf_cg_supports(const raf_func *f, raf_cg_info *info, char *why,
                     size_t size) {
  cg_plan p;
  if (!cg_plan_make(f, &p, why, size))
    return false;
  if (info)
    fill_info(&p, info);
  cg_plan_free(&p);
  return true;
}

bool raf_jit_compile(raf_jit *j, const raf_func *f, const int *inplace,
                     raf_cg_kernel *out, raf_cg_info *info, bool *declined,
                     char *why, size_t size) {
  double t0 = now_ms();
  *declined = false;
  memset(out, 0, sizeof *out);
  cg_plan p;
  if (!cg_plan_make(f, &p, why, size)) {
    *declined = true;
    j->stats.declined++;
    return false;
  }
  fill_info(&p, info);
  bool final = p.ntotals > 0;
  LLVMContextRef C = LLVMContextCreate();
  LLVMModuleRef M = LLVMModuleCreateWithNameInContext("raf", C);
  cg_options co = {CG_HOST, j->vec_isa, inplace};
  LLVMValueRef kernel = cg_lower(&p, M, &co, "raf_kernel", why, size);
  if (!kernel && inplace)
    *declined = true; /* the variant in place: its calls run unfused */
  cg_plan_free(&p);
  bool found = false;
  char *ir = NULL;
  cg_key key;
  char symbol[64];
  bool ok = kernel && cg_verify(M, why, size);
  if (ok) {
    char version[64];
    cg_cache_version(version, sizeof version);
    ir = LLVMPrintModuleToString(M);
    const char *pieces[] = {ir, j->host.triple, j->host.cpu,
                            j->host.features, version, NULL};
    key = cg_key_of(pieces);
    char hex[33];
    cg_key_hex(&key, hex);
    snprintf(symbol, sizeof symbol, "raf_k_%s", hex);
    found = find(j, &key, out);
    if (found)
      j->stats.reused++;
  }
  if (ok && !found) {
    LLVMSetValueName2(kernel, symbol, strlen(symbol));
    if (final) {
      char fsym[96];
      snprintf(fsym, sizeof fsym, "%s_final", symbol);
      LLVMValueRef fk = LLVMGetNamedFunction(M, "raf_kernel_final");
      if (fk)
        LLVMSetValueName2(fk, fsym, strlen(fsym));
    }
    void *obj = NULL;
    size_t osize = 0;
    cg_cache_result cr =
        j->cache ? cg_cache_read(j->cache_dir, &key, ".o", &obj, &osize)
                 : CG_CACHE_MISS;
    if (cr == CG_CACHE_HIT) {
      char ignored[256];
      found = load(j, obj, osize, symbol, final, out, ignored, sizeof ignored);
      if (found)
        j->stats.cached++;
      else
        cr = CG_CACHE_CORRUPT;
    }
    free(obj);
    if (cr == CG_CACHE_CORRUPT)
      j->stats.cache_rejected++;
    if (!found) {
      LLVMMemoryBufferRef buf = NULL;
      ok = compile(j, M, &buf, why, size);
      if (ok) {
        const char *data = LLVMGetBufferStart(buf);
        size_t n = LLVMGetBufferSize(buf);
        if (j->cache)
          cg_cache_write(j->cache_dir, &key, ".o", data, n);
        found = ok = load(j, data, n, symbol, final, out, why, size);
        if (ok)
          j->stats.compiled++;
        LLVMDisposeMemoryBuffer(buf);
      }
    }
    if (found)
      remember(j, &key, *out);
  }
  LLVMDisposeMessage(ir);
  LLVMDisposeModule(M);
  LLVMContextDispose(C);
  j->stats.compile_ms += now_ms() - t0;
  if (!found)
    raf_diag_report(j->ctx, f->loc, RAF_SEV_ERROR,
                    "llvm: cannot compile @%s: %s", f->name, why);
  return found;
}
