/* emit.c: raf-opt's --emit=llvm and --emit=ptx (codegen.h).
 *
 * Every fused function of the module is lowered into one LLVM module, as a
 * function named after it: for the host, with the host kernel ABI, printed
 * as textual LLVM IR; for NVPTX, as a kernel, linked with libdevice when it
 * calls the math library, and printed as PTX for the CUDA architecture
 * asked for. The functions the lowering declines are listed first, as
 * comments saying why.
 */
#include "codegen/codegen.h"
#include "codegen/lower.h"
#include "codegen/target.h"

#include <stdlib.h>
#include <string.h>

static bool is_fused(const raf_func *f) {
  const raf_attr *a = raf_attrs_find(&f->attrs, "fused");
  return a && a->kind == RAF_ATTR_BOOL && a->val.u.b;
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
    if (!cg_lower(&p, M, &co, f->name, why, sizeof why)) {
      raf_diag_report(ctx, f->loc, RAF_SEV_ERROR, "emit: @%s: %s", f->name,
                      why);
      rc = RAF_ERROR;
    }
    cg_plan_free(&p);
  }
  /* Kernels are made of fused functions only: without one the output is
   * LLVM's empty module, which deserves a word on why. */
  if (nfused == 0)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_NOTE,
                    "emit: no kernels: the module has no fused function "
                    "(functions marked {fused}, which --fuse makes)");
  bool ok = rc == RAF_OK && cg_verify(M, why, sizeof why);
  if (ok) {
    cg_prepare_module(M, tm, ptx ? NULL : host.features);
    if (ptx)
      ok = cg_link_libdevice(M, why, sizeof why);
  }
  if (ok && o->optimize)
    ok = cg_optimize(M, tm, why, sizeof why);
  if (ok && ptx) {
    LLVMMemoryBufferRef buf;
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, M, LLVMAssemblyFile, &msg,
                                            &buf)) {
      snprintf(why, sizeof why, "LLVM cannot make PTX: %s", msg ? msg : "");
      LLVMDisposeMessage(msg);
      ok = false;
    } else {
      fwrite(LLVMGetBufferStart(buf), 1, LLVMGetBufferSize(buf), out);
      LLVMDisposeMemoryBuffer(buf);
    }
  } else if (ok) {
    char *text = LLVMPrintModuleToString(M);
    fputs(text, out);
    LLVMDisposeMessage(text);
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
