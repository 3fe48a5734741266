/* llvm_traits.c: the llvm dialect's traits (ir/dialect.h), beside its
 * kernels (runtime/llvm.c). It runs a call of a fused function whose
 * every statement has a FUSED row (the ops of lang/codegen_ops.def, which
 * codegen/ lowers); LLVM is a hard dependency of the build. A structure
 * the lowering then declines is the one refusal left to run time, which
 * raf-run --print-jit-stats reports (runtime/llvm.c). */
#include "ir/dialect.h"

const raf_dialect_traits raf_dialect_traits_LLVM = {
    .dialect = RAF_DIALECT_LLVM,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = raf_dialect_rows_run_call,
    .scratch = raf_dialect_no_scratch,
    .unavailable = raf_dialect_available,
    .lacks = raf_dialect_lacks_nothing,
};
