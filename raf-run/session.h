/* session.h: one run of raf-run (session.c). */
#ifndef RAF_RUN_SESSION_H
#define RAF_RUN_SESSION_H

#include "raf-run/options.h"

/* Runs what the options ask (a module's function, its steps or its
 * gradient check, and the reports); returns the exit status. Errors are
 * rendered on stderr. */
int rr_session(rr_options *o);

/* When OpenBLAS fell back to its generic kernels on a CPU it did not
 * recognise, the core type to tell it (OPENBLAS_CORETYPE), else NULL. */
const char *rr_openblas_core(void);

#endif
