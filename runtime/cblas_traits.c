/* cblas_traits.c: the cblas dialect's traits (ir/dialect.h), beside its
 * kernels (runtime/cblas.c). OpenBLAS is a hard dependency of the build,
 * its kernels take any shape their ops' rows admit, and they allocate
 * what they need themselves: the rows say everything. */
#include "ir/dialect.h"

const raf_dialect_traits raf_dialect_traits_CBLAS = {
    .dialect = RAF_DIALECT_CBLAS,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = raf_dialect_rows_run_call,
    .scratch = raf_dialect_no_scratch,
    .unavailable = raf_dialect_available,
    .lacks = raf_dialect_lacks_nothing,
};
