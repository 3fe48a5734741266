/* traits.c: the cpu-ref dialect's traits (ir/dialect.h). The reference
 * implements every op in every dtype its row admits, alone, needs no
 * scratch and is in every build: its rows say everything. */
#include "ir/dialect.h"

const raf_dialect_traits raf_dialect_traits_CPU_REF = {
    .dialect = RAF_DIALECT_CPU_REF,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = raf_dialect_rows_run_call,
    .scratch = raf_dialect_no_scratch,
    .unavailable = raf_dialect_available,
    .lacks = raf_dialect_lacks_nothing,
};
