/* mpi_traits.c: the mpi dialect's traits (ir/dialect.h), beside its
 * kernels (runtime/mpi.c): its rows say what it runs; it needs MPI at
 * build time. */
#include "ir/dialect.h"

static const char *mpi_unavailable(void) {
#ifdef RAF_HAVE_MPI
  return NULL;
#else
  return "this build of raf has no MPI (mpi.h and libmpi were not found "
         "when it was configured; install libopenmpi-dev and openmpi-bin "
         "and configure again)";
#endif
}

const raf_dialect_traits raf_dialect_traits_MPI = {
    .dialect = RAF_DIALECT_MPI,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = raf_dialect_rows_run_call,
    .scratch = raf_dialect_no_scratch,
    .unavailable = mpi_unavailable,
    .lacks = raf_dialect_lacks_nothing,
};
