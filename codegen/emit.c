/* emit.c: raf-opt's --emit=llvm and --emit=ptx (codegen.h).
 *
 * Every fused function of the module is lowered into one LLVM module, as a
 * function named after it: for the host, with the host kernel ABI, printed
 * as textual LLVM IR; for NVPTX, as a kernel, linked with libdevice when it
 * calls the math library, and printed as PTX for the CUDA architecture
 * asked for. The functions the lowering declines are listed first, as
 * comments saying why; in PTX each kernel's launch (raf_cg_compile_ptx)
 * is a comment too.
 */
#include "codegen/codegen.h"
#include "codegen/cache.h"
#include "codegen/lower.h"
#include "codegen/target.h"

#include <stdlib.h>
#include <string.h>

void raf_cg_ptx_name(const char *name, char *out, size_t size) {
  size_t n = 0;
  if (size == 0)
    return;
  for (const char *c = name; *c && n + 1 < size; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '_' || *c == '$';
    const char *put = ok ? (char[2]){*c, 0} : "_$_";
    for (; *put && n + 1 < size; put++)
      out[n++] = *put;
  }
  if (n == 1 && out[0] == '_' && n + 1 < size)
    out[n++] = '_';
  out[n] = 0;
}

static bool is_fused(const raf_func *f) {
  const raf_attr *a = raf_attrs_find(&f->attrs, "fused");
  return a && a->kind == RAF_ATTR_BOOL && a->val.u.b;
}

/* The launches of plan p's kernels, named name and name_final. */
static int launches(const cg_plan *p, const char *name, raf_cg_launch *k) {
  cg_gpu_sched s;
  cg_gpu_schedule(p, &s);
  memset(k, 0, 2 * sizeof *k);
  for (int i = 0; i < 2; i++)
    k[i].grid[1] = k[i].grid[2] = k[i].block[1] = k[i].block[2] = 1;
  snprintf(k[0].name, sizeof k[0].name, "%s", name);
  k[0].grid[0] = s.grid;
  k[0].block[0] = s.block;
  k[0].shared_bytes = s.shared_bytes;
  if (!p->ntotals)
    return 1;
  snprintf(k[1].name, sizeof k[1].name, "%s_final", name);
  k[1].grid[0] = 1;
  k[1].block[0] = s.final_block;
  k[1].shared_bytes = s.final_shared_bytes;
  return 2;
}

static const char *const layout_names[] = {"flat", "warp per row",
                                           "block per row", "column tiles"};

/* A comment line per kernel saying how to launch it (raf-opt's PTX). */
static void print_launches(FILE *out, const cg_plan *p, const char *name) {
  raf_cg_launch k[2];
  cg_gpu_sched s;
  cg_gpu_schedule(p, &s);
  int n = launches(p, name, k);
  for (int i = 0; i < n; i++)
    fprintf(out, "// launch %s: grid %lld block %d shared %d (%s)\n",
            k[i].name, (long long)k[i].grid[0], k[i].block[0],
            k[i].shared_bytes,
            i ? "second stage of the total" : layout_names[s.layout]);
}

/* M's PTX for tm (libdevice linked, optimized when asked) as a string of
 * malloc'd memory. */
static bool module_ptx(LLVMModuleRef M, LLVMTargetMachineRef tm,
                       bool optimize, char **text, char *why, size_t size) {
  *text = NULL;
  if (!cg_verify(M, why, size))
    return false;
  cg_prepare_module(M, tm, NULL);
  if (!cg_link_libdevice(M, why, size))
    return false;
  if (optimize && !cg_optimize(M, tm, why, size))
    return false;
  LLVMMemoryBufferRef buf;
  char *msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, M, LLVMAssemblyFile, &msg,
                                          &buf)) {
    snprintf(why, size, "LLVM cannot make PTX: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return false;
  }
  size_t n = LLVMGetBufferSize(buf);
  *text = malloc(n + 1);
  if (*text) {
    memcpy(*text, LLVMGetBufferStart(buf), n);
    (*text)[n] = 0;
  } else {
    snprintf(why, size, "out of memory");
  }
  LLVMDisposeMemoryBuffer(buf);
  return *text != NULL;
}

/* M's PTX into out->ptx: from the kernel cache when it holds the PTX of
 * M's IR for arch, else made by module_ptx and cached. */
static bool cached_ptx(LLVMModuleRef M, LLVMTargetMachineRef tm,
                       const char *arch, raf_cg_ptx *out, char *why,
                       size_t size) {
  char dir[4096], version[64];
  bool cache = cg_cache_dir(dir, sizeof dir);
  cg_key key = {{0}};
  if (cache) {
    cg_cache_version(version, sizeof version);
    char *ir = LLVMPrintModuleToString(M);
    const char *pieces[] = {ir, "nvptx64-nvidia-cuda", arch, version, NULL};
    key = cg_key_of(pieces);
    LLVMDisposeMessage(ir);
    void *data = NULL;
    size_t n = 0;
    if (cg_cache_read(dir, &key, ".ptx", &data, &n) == CG_CACHE_HIT &&
        (out->ptx = malloc(n + 1)) != NULL) {
      memcpy(out->ptx, data, n);
      out->ptx[n] = 0;
      out->cached = true;
      free(data);
      return true;
    }
    free(data);
  }
  if (!module_ptx(M, tm, true, &out->ptx, why, size))
    return false;
  if (cache)
    cg_cache_write(dir, &key, ".ptx", out->ptx, strlen(out->ptx));
  return true;
}

bool raf_cg_compile_ptx(const raf_func *f, const char *arch, const char *name,
                        const int *inplace, raf_cg_ptx *out, bool *declined,
                        char *why, size_t size) {
  memset(out, 0, sizeof *out);
  *declined = false;
  cg_plan p;
  if (!cg_plan_make(f, &p, why, size)) {
    *declined = true;
    return false;
  }
  if (!raf_cg_supports(f, &out->info, why, size)) {
    cg_plan_free(&p);
    *declined = true;
    return false;
  }
  /* The kernels' names as the PTX has them (raf_cg_ptx_name). */
  char valid[200];
  raf_cg_ptx_name(name ? name : f->name, valid, sizeof valid);
  name = valid;
  LLVMTargetMachineRef tm = cg_nvptx_tm(arch ? arch : "sm_80", why, size);
  if (!tm) {
    cg_plan_free(&p);
    return false;
  }
  LLVMContextRef C = LLVMContextCreate();
  LLVMModuleRef M = LLVMModuleCreateWithNameInContext("raf", C);
  cg_options co = {CG_NVPTX, 0, inplace};
  bool ok = cg_lower(&p, M, &co, name, why, size) != NULL;
  if (!ok && inplace)
    *declined = true;
  if (ok)
    ok = cached_ptx(M, tm, arch ? arch : "sm_80", out, why, size);
  if (ok)
    out->nkernels = launches(&p, name, out->kernels);
  LLVMDisposeModule(M);
  LLVMContextDispose(C);
  LLVMDisposeTargetMachine(tm);
  cg_plan_free(&p);
  if (!ok)
    raf_cg_ptx_free(out);
  return ok;
}

void raf_cg_ptx_free(raf_cg_ptx *out) {
  if (!out)
    return;
  free(out->ptx);
  memset(out, 0, sizeof *out);
}

raf_status raf_cg_emit(raf_ctx *ctx, const raf_module *m,
                       const raf_cg_emit_options *o, FILE *out) {
  bool ptx = o->kind == RAF_CG_EMIT_PTX;
  const char *arch = o->cuda_arch ? o->cuda_arch : "sm_80";
  char why[512];
  cg_host host = {0};
  LLVMTargetMachineRef tm;
  if (ptx) {
    tm = cg_nvptx_tm(arch, why, sizeof why);
  } else {
    cg_host_get(&host, o->cpu);
    tm = cg_host_tm(&host, why, sizeof why);
  }
  if (!tm) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "emit: %s", why);
    cg_host_free(&host);
    return RAF_ERROR;
  }
  LLVMContextRef C = LLVMContextCreate();
  LLVMModuleRef M = LLVMModuleCreateWithNameInContext("raf", C);
  const char *comment = ptx ? "//" : ";";
  raf_status rc = RAF_OK;
  int nfused = 0;
  for (const raf_func *f = m->first; f; f = f->next) {
    if (!is_fused(f))
      continue;
    nfused++;
    cg_plan p;
    if (!cg_plan_make(f, &p, why, sizeof why)) {
      fprintf(out, "%s @%s: not compiled: %s\n", comment, f->name, why);
      continue;
    }
    cg_options co = {ptx ? CG_NVPTX : CG_HOST,
                     ptx ? 0 : cg_vec_isa(host.features), NULL};
    /* A kernel's name must be a PTX identifier (raf_cg_ptx_name). */
    char valid[200];
    raf_cg_ptx_name(f->name, valid, sizeof valid);
    const char *name = ptx ? valid : f->name;
    if (!cg_lower(&p, M, &co, name, why, sizeof why)) {
      raf_diag_report(ctx, f->loc, RAF_SEV_ERROR, "emit: @%s: %s", f->name,
                      why);
      rc = RAF_ERROR;
    } else if (ptx) {
      print_launches(out, &p, name);
    }
    cg_plan_free(&p);
  }
  /* Kernels are made of fused functions only: without one the output is
   * LLVM's empty module, which deserves a word on why. */
  if (nfused == 0)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_NOTE,
                    "emit: no kernels: the module has no fused function "
                    "(functions marked {fused}, which --fuse makes)");
  bool ok = rc == RAF_OK;
  if (ok && ptx) {
    char *text;
    ok = module_ptx(M, tm, o->optimize, &text, why, sizeof why);
    if (ok)
      fputs(text, out);
    free(text);
  } else if (ok) {
    ok = cg_verify(M, why, sizeof why);
    if (ok) {
      cg_prepare_module(M, tm, host.features);
      if (o->optimize)
        ok = cg_optimize(M, tm, why, sizeof why);
    }
    if (ok) {
      char *text = LLVMPrintModuleToString(M);
      fputs(text, out);
      LLVMDisposeMessage(text);
    }
  }
  if (!ok && rc == RAF_OK) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "emit: %s", why);
    rc = RAF_ERROR;
  }
  LLVMDisposeModule(M);
  LLVMContextDispose(C);
  LLVMDisposeTargetMachine(tm);
  cg_host_free(&host);
  return rc;
}
