/* traits.c: the onednn dialect's traits (ir/dialect.h), beside its
 * kernels (this folder): its rows say what it runs (its primitives take
 * their scratchpad from the task that runs them, common.c); it needs
 * oneDNN at build time. */
#include "ir/dialect.h"

static const char *onednn_unavailable(void) {
#ifdef RAF_HAVE_ONEDNN
  return NULL;
#else
  return "this build of raf has no oneDNN (dnnl.h and libdnnl were not "
         "found when it was configured, or RAF_ONEDNN was OFF; install "
         "libdnnl-dev and configure again)";
#endif
}

const raf_dialect_traits raf_dialect_traits_ONEDNN = {
    .dialect = RAF_DIALECT_ONEDNN,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = raf_dialect_rows_run_call,
    .scratch = raf_dialect_no_scratch,
    .unavailable = onednn_unavailable,
    .lacks = raf_dialect_lacks_nothing,
};
