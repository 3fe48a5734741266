/* profile.h: raf-run --profile, the report of where a run's kernel time
 * went (runtime/exec.h's raf_exec_profile). */
#ifndef RAF_RUN_PROFILE_H
#define RAF_RUN_PROFILE_H

#include "runtime/exec.h"

#include <stdio.h>

/* Writes ex's kernel times to out: a table by op and dialect, then the
 * `top` costliest statements with their locations, then, in a sharded
 * run, the collectives' time per step (of `steps`) and the share of it
 * hidden behind compute. Returns RAF_ERROR
 * when out of memory (nothing written). */
raf_status rr_profile_report(const raf_exec *ex, FILE *out, int top,
                             long steps);

#endif
