/* checkpoint.h: raf-run's --save and --load, in the safetensors format.
 *
 * A checkpoint holds a function's `param` and `state` arguments under their
 * names (without the '%'). Loading fills every argument the file names,
 * checking dtype and shape; names the function lacks are reported as
 * warnings and skipped.
 */
#ifndef RAF_RUN_CHECKPOINT_H
#define RAF_RUN_CHECKPOINT_H

#include "runtime/exec.h"

/* Fills the arguments of f the file names and sets given[i] for each. */
raf_status rr_checkpoint_load(raf_ctx *ctx, const char *path, raf_func *f,
                              raf_tensor *const *args, bool *given);
raf_status rr_checkpoint_save(raf_ctx *ctx, const char *path, raf_func *f,
                              raf_tensor *const *args);

#endif
