/* diagnostics.h: --verify-diagnostics, matching reported diagnostics against
 * `// expected-error@+1 {{text}}` annotations in the source, as MLIR does. */
#ifndef RAF_OPT_DIAGNOSTICS_H
#define RAF_OPT_DIAGNOSTICS_H

#include "ir/ir.h"

/* Checks every diagnostic reported to ctx since index `from` against the
 * annotations in text (a chunk of file `name` whose first line is
 * first_line). Prints each mismatch to out; returns true when all matched. */
bool raf_opt_verify_diagnostics(raf_ctx *ctx, size_t from, const char *name,
                                const char *text, size_t len,
                                uint32_t first_line, FILE *out);

#endif
