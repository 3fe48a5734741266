/* target.c: LLVM targets for codegen/ (see target.h).
 *
 * The host target machine is LLVM's view of this CPU (LLVMGetHostCPUName
 * and LLVMGetHostCPUFeatures), so the loop vectorizer uses AVX2 or
 * AVX-512 where they are; on AVX-512 machines the functions ask for 512-bit
 * vectors (LLVM prefers 256 by default). NVPTX modules that call libdevice
 * link it ($RAF_LIBDEVICE; nvvm/libdevice beside the executable's bin/, as
 * scripts/gpu-bundle.sh ships it, since a GPU machine's nvcc may come from
 * pip or conda and have no /usr/local/cuda; $CUDA_HOME; $CONDA_PREFIX;
 * /usr/local/cuda or Debian's nvidia-cuda-toolkit), with nvvm-reflect-ftz
 * = 0 (IEEE denormals), and keep only their kernels external.
 */
#include "codegen/target.h"
#include "codegen/codegen.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_once(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

void cg_init_targets(void) { pthread_once(&once, init_once); }

void cg_host_get(cg_host *h, const char *cpu) {
  cg_init_targets();
  char *t = LLVMGetDefaultTargetTriple();
  h->triple = LLVMNormalizeTargetTriple(t);
  LLVMDisposeMessage(t);
  h->cpu = cpu ? LLVMCreateMessage(cpu) : LLVMGetHostCPUName();
  /* An explicit CPU takes that CPU's own features. */
  h->features = cpu ? LLVMCreateMessage("") : LLVMGetHostCPUFeatures();
}

void cg_host_free(cg_host *h) {
  LLVMDisposeMessage(h->triple);
  LLVMDisposeMessage(h->cpu);
  LLVMDisposeMessage(h->features);
  memset(h, 0, sizeof *h);
}

char cg_vec_isa(const char *features) {
  const char *math = getenv("RAF_JIT_MATH");
  if ((math && strcmp(math, "exact") == 0) || !features)
    return 0;
  if (strstr(features, "+avx512f"))
    return 'e';
  return strstr(features, "+avx2") ? 'd' : 0;
}

static LLVMTargetMachineRef make_tm(const char *triple, const char *cpu,
                                    const char *features, LLVMRelocMode reloc,
                                    char *why, size_t size) {
  cg_init_targets();
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    snprintf(why, size, "no LLVM target for %s: %s", triple, err ? err : "");
    LLVMDisposeMessage(err);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
      target, triple, cpu, features, LLVMCodeGenLevelAggressive, reloc,
      LLVMCodeModelDefault);
  if (!tm)
    snprintf(why, size, "LLVM cannot make a target machine for %s (%s)",
             triple, cpu);
  return tm;
}

LLVMTargetMachineRef cg_host_tm(const cg_host *h, char *why, size_t size) {
  return make_tm(h->triple, h->cpu, h->features, LLVMRelocPIC, why, size);
}

/* LLVM 19's list (llc -march=nvptx64 -mcpu=help), which its C API does not
 * give: an unknown name would only make LLVM warn on stderr, once per
 * subtarget it builds, and emit for a default processor. The kernels need
 * sm_30's instructions. */
static const char *const cuda_archs[] = {
    "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52", "sm_53",
    "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
    "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};

const char *const *raf_cg_cuda_archs(size_t *count) {
  *count = sizeof cuda_archs / sizeof cuda_archs[0];
  return cuda_archs;
}

LLVMTargetMachineRef cg_nvptx_tm(const char *arch, char *why, size_t size) {
  size_t n, len = 0;
  const char *const *archs = raf_cg_cuda_archs(&n);
  bool known = false;
  for (size_t i = 0; i < n && !known; i++)
    known = strcmp(archs[i], arch) == 0;
  if (!known) {
    len = (size_t)snprintf(why, size, "unknown CUDA architecture '%s' "
                           "(known:", arch);
    for (size_t i = 0; i < n && len < size; i++)
      len += (size_t)snprintf(why + len, size - len, " %s", archs[i]);
    if (len < size)
      snprintf(why + len, size - len, ")");
    return NULL;
  }
  return make_tm("nvptx64-nvidia-cuda", arch, "", LLVMRelocDefault, why,
                 size);
}

void cg_prepare_module(LLVMModuleRef M, LLVMTargetMachineRef tm,
                       const char *features) {
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(M, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(M, dl);
  LLVMDisposeTargetData(dl);
  if (!features || !strstr(features, "+avx512f"))
    return;
  LLVMContextRef C = LLVMGetModuleContext(M);
  for (LLVMValueRef f = LLVMGetFirstFunction(M); f;
       f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      LLVMAddAttributeAtIndex(
          f, LLVMAttributeFunctionIndex,
          LLVMCreateStringAttribute(C, "prefer-vector-width", 19, "512", 3));
}

bool cg_optimize(LLVMModuleRef M, LLVMTargetMachineRef tm, char *why,
                 size_t size) {
  LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(o, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(o, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(o, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(o, 1);
  LLVMErrorRef err = LLVMRunPasses(M, "default<O3>", tm, o);
  LLVMDisposePassBuilderOptions(o);
  if (err) {
    char *msg = LLVMGetErrorMessage(err);
    snprintf(why, size, "LLVM's O3 pipeline failed: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return false;
  }
  return true;
}

bool cg_verify(LLVMModuleRef M, char *why, size_t size) {
  char *msg = NULL;
  if (LLVMVerifyModule(M, LLVMReturnStatusAction, &msg)) {
    snprintf(why, size, "internal: the lowering made invalid LLVM IR: %.200s",
             msg ? msg : "");
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMDisposeMessage(msg);
  return true;
}

/* The folder above the running executable's (BUNDLE for BUNDLE/bin/raf-run)
 * into dir; false when /proc does not say. */
static bool exe_root(char *dir, size_t size) {
  ssize_t n = readlink("/proc/self/exe", dir, size - 1);
  if (n <= 0 || (size_t)n >= size - 1)
    return false;
  dir[n] = '\0';
  for (int cut = 0; cut < 2; cut++) { /* drop the file, then bin/ */
    char *slash = strrchr(dir, '/');
    if (!slash)
      return false;
    *slash = '\0';
  }
  return true;
}

static bool find_libdevice(char *path, size_t size) {
  const char *env = getenv("RAF_LIBDEVICE");
  if (env && *env) {
    snprintf(path, size, "%s", env);
    return access(path, R_OK) == 0;
  }
  /* The executable's own copy first: the one it was bundled and tested
   * with (nvvm/libdevice/ in the bundle, the toolkit's layout). */
  char root[2048]; /* short of path's 4096, with room for the rest */
  bool rooted = exe_root(root, sizeof root);
  const char *home = getenv("CUDA_HOME"), *conda = getenv("CONDA_PREFIX");
  const char *dirs[] = {rooted ? root : NULL, home, conda, "/usr/local/cuda",
                        "/usr/lib/cuda", "/usr/lib/nvidia-cuda-toolkit"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    if (!dirs[i] || !*dirs[i])
      continue;
    snprintf(path, size, "%s/nvvm/libdevice/libdevice.10.bc", dirs[i]);
    if (access(path, R_OK) == 0)
      return true;
    snprintf(path, size, "%s/libdevice/libdevice.10.bc", dirs[i]);
    if (access(path, R_OK) == 0)
      return true;
  }
  return false;
}

bool cg_link_libdevice(LLVMModuleRef M, char *why, size_t size) {
  bool calls = false;
  for (LLVMValueRef f = LLVMGetFirstFunction(M); f; f = LLVMGetNextFunction(f))
    calls |= LLVMIsDeclaration(f) &&
             strncmp(LLVMGetValueName2(f, &(size_t){0}), "__nv_", 5) == 0;
  if (!calls)
    return true;
  char path[4096];
  const char *env = getenv("RAF_LIBDEVICE");
  bool found = find_libdevice(path, sizeof path);
  if (!found && env && *env) {
    snprintf(why, size, "libdevice.10.bc not found: RAF_LIBDEVICE names %s, "
             "which cannot be read; the kernels call the CUDA math library",
             env);
    return false;
  }
  if (!found) {
    snprintf(why, size, "libdevice.10.bc not found (set RAF_LIBDEVICE or "
             "CUDA_HOME; looked in nvvm/libdevice and libdevice under the "
             "executable's folder's parent, $CUDA_HOME, $CONDA_PREFIX, "
             "/usr/local/cuda, /usr/lib/cuda and "
             "/usr/lib/nvidia-cuda-toolkit); the kernels call the CUDA math "
             "library");
    return false;
  }
  LLVMMemoryBufferRef buf;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
    snprintf(why, size, "cannot read %s: %s", path, msg ? msg : "");
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMContextRef C = LLVMGetModuleContext(M);
  LLVMModuleRef lib;
  bool bad = LLVMParseBitcodeInContext2(C, buf, &lib);
  LLVMDisposeMemoryBuffer(buf);
  if (bad) {
    snprintf(why, size, "cannot parse %s", path);
    return false;
  }
  LLVMSetTarget(lib, LLVMGetTarget(M));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(M));
  /* Kernels stay external; everything libdevice brings becomes internal so
   * that the optimizer drops what is not called. */
  size_t nk = 0;
  LLVMValueRef kernels[1024];
  for (LLVMValueRef f = LLVMGetFirstFunction(M); f && nk < 1024;
       f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      kernels[nk++] = f;
  if (LLVMLinkModules2(M, lib)) {
    snprintf(why, size, "cannot link %s", path);
    return false;
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(M); f;
       f = LLVMGetNextFunction(f)) {
    bool kernel = false;
    for (size_t i = 0; i < nk; i++)
      kernel |= kernels[i] == f;
    if (!kernel && !LLVMIsDeclaration(f))
      LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(M); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g))
      LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMAddModuleFlag(M, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                    LLVMValueAsMetadata(
                        LLVMConstInt(LLVMInt32TypeInContext(C), 0, false)));
  return true;
}
