/* values.h: raf-run's tensors from the command line and to the terminal.
 *
 * Inline values, .npy files checked against an argument's type, the
 * NumPy-like printing of results (a summary past NumPy's threshold, the
 * updates of a training step as one line), and the comparison of results
 * against expected values with tolerances.
 */
#ifndef RAF_RUN_VALUES_H
#define RAF_RUN_VALUES_H

#include "runtime/exec.h"
#include "runtime/npy.h"

#include <stdio.h>

/* Host tensors: type t's bytes in host memory (raf_tensor.device is the
 * host), outside any executor's memory count; what raf-run reads values
 * into and prints from, and how it moves them to and from an executor's
 * device (raf_exec_write and raf_exec_read). rr_host_tensor's is zeroed;
 * NULL when out of memory. */
raf_tensor *rr_host_tensor(raf_type *t);
/* NULL is ignored. */
void rr_host_tensor_free(raf_tensor *t);

/* The functions below that fill or read a tensor's data take a host
 * tensor, or a tensor of a host executor (whose memory is the host's). */

/* Reports scratch's messages again in ctx, each after "prefix: ", and
 * destroys scratch (a library's messages that name only a file or a
 * device, given the flag or value that asked for it). */
void rr_relay_diags(raf_ctx *ctx, raf_ctx *scratch, const char *prefix);

/* Fills t from inline text: numbers (integers, floats, inf, nan, true,
 * false) separated by commas or blanks, brackets ignored, exactly numel of
 * them. `what` names the value in messages ("argument %x"). */
raf_status rr_parse_inline(raf_ctx *ctx, const char *what, const char *text,
                           raf_tensor *t);
/* Reads the .npy file at path into *out (which the caller frees with
 * raf_npy_free on success). A file that cannot be read or parsed is an
 * error that names `what` ("--input=x: argument %x") before the file. */
raf_status rr_read_npy(raf_ctx *ctx, const char *what, const char *path,
                       raf_npy *out);
/* Checks that a .npy array read from `path` has t's dtype and shape
 * (naming `what`, the file and both types otherwise) and copies it into t. */
raf_status rr_from_npy(raf_ctx *ctx, const char *what, const char *path,
                       const raf_npy *a, raf_tensor *t);
/* Reads `spec` ("@file.npy" or inline text) into t. */
raf_status rr_read_value(raf_ctx *ctx, const char *what, const char *spec,
                         raf_tensor *t);
/* The .npy view of a tensor (data borrowed). */
raf_npy rr_npy_view(const raf_tensor *t);

/* How much of a function's results raf-run prints (--print=...). */
typedef enum rr_print_mode {
  RR_PRINT_SUMMARY, /* NumPy's summary past 1000 elements; updates counted */
  RR_PRINT_FULL,    /* every result, every element */
  RR_PRINT_NONE
} rr_print_mode;

/* Prints t NumPy-style: "[[1 2]\n [3 4]]"; with summarize, an array of
 * more than 1000 elements shows 3 items at each end of every dimension. */
void rr_print(FILE *out, const raf_tensor *t, bool summarize);
/* Prints the results of f as `mode` says: each one as "result[i]: TYPE"
 * and its values; in summary mode the results marked {updates = %arg} are
 * not printed but counted on one line, by the kind of argument they
 * update. */
void rr_print_results(FILE *out, const raf_func *f, raf_tensor *const *results,
                      rr_print_mode mode);

typedef struct rr_tolerance {
  double atol, rtol; /* negative: the dtype's default */
} rr_tolerance;
/* Compares got with expected (same type); on a mismatch writes the first
 * mismatching element into msg and returns false. NaN matches NaN. */
bool rr_compare(const raf_tensor *got, const raf_tensor *expected,
                rr_tolerance tol, char *msg, size_t size);

#endif
