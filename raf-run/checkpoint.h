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

/* Fills the arguments of f the file names and sets given[i] for each.
 * args live on the host or on ex's device, where they are copied to. */
raf_status rr_checkpoint_load(raf_ctx *ctx, raf_exec *ex, const char *path,
                              raf_func *f, raf_tensor *const *args,
                              bool *given);
/* Writes f's params and states; args live on the host or on ex's device,
 * from which they are staged through the host. */
raf_status rr_checkpoint_save(raf_ctx *ctx, raf_exec *ex, const char *path,
                              raf_func *f, raf_tensor *const *args);

#endif
