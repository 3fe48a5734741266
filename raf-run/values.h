/* values.h: raf-run's tensors from the command line and to the terminal.
 *
 * Inline values, .npy files checked against an argument's type, the
 * NumPy-like printing of results, and the comparison of results against
 * expected values with tolerances.
 */
#ifndef RAF_RUN_VALUES_H
#define RAF_RUN_VALUES_H

#include "runtime/exec.h"
#include "runtime/npy.h"

#include <stdio.h>

/* Fills t from inline text: numbers (integers, floats, inf, nan, true,
 * false) separated by commas or blanks, brackets ignored, exactly numel of
 * them. `what` names the value in messages ("argument %x"). */
raf_status rr_parse_inline(raf_ctx *ctx, const char *what, const char *text,
                           raf_tensor *t);
/* Checks that a .npy array has t's dtype and shape (naming `what` and both
 * types otherwise) and copies it into t. */
raf_status rr_from_npy(raf_ctx *ctx, const char *what, const raf_npy *a,
                       raf_tensor *t);
/* Reads `spec` ("@file.npy" or inline text) into t. */
raf_status rr_read_value(raf_ctx *ctx, const char *what, const char *spec,
                         raf_tensor *t);
/* The .npy view of a tensor (data borrowed). */
raf_npy rr_npy_view(const raf_tensor *t);
/* Prints t NumPy-style: "[[1 2]\n [3 4]]". */
void rr_print(FILE *out, const raf_tensor *t);

typedef struct rr_tolerance {
  double atol, rtol; /* negative: the dtype's default */
} rr_tolerance;
/* Compares got with expected (same type); on a mismatch writes the first
 * mismatching element into msg and returns false. NaN matches NaN. */
bool rr_compare(const raf_tensor *got, const raf_tensor *expected,
                rr_tolerance tol, char *msg, size_t size);

#endif
