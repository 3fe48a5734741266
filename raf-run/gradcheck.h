/* gradcheck.h: raf-run --gradcheck, the autodiff pass checked against
 * central finite differences (see gradcheck.c).
 */
#ifndef RAF_RUN_GRADCHECK_H
#define RAF_RUN_GRADCHECK_H

#include "runtime/exec.h"

#include <stdio.h>

typedef struct rr_gradcheck_options {
  double tol;          /* the worst relative error a param may have */
  double eps;          /* the step, relative to max(1, |x|) */
  long samples;        /* elements checked per param, at most */
  const char *dialects; /* for dispatch, or NULL */
  int threads;
  raf_device_kind device; /* where the f64 copy runs */
} rr_gradcheck_options;

/* Checks the gradients autodiff makes for f (a scalar float loss of the
 * verified module m) at args (f's arguments, borrowed, on args_ex's
 * device or the host), printing one line
 * per param to out; *failed is set when a param's worst relative error
 * exceeds the tolerance. Errors (f is no loss, autodiff fails) are
 * diagnostics and RAF_ERROR. */
raf_status rr_gradcheck(raf_ctx *ctx, raf_exec *args_ex, const raf_module *m,
                        const raf_func *f, raf_tensor *const *args,
                        const rr_gradcheck_options *o, FILE *out,
                        bool *failed);

#endif
