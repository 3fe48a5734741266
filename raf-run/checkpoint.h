/* checkpoint.h: raf-run's --save, --load and --resume, in the safetensors
 * format.
 *
 * A checkpoint holds a function's `param` and `state` arguments under their
 * names (without the '%'), and raf-run's own counters in its __metadata__,
 * under the reserved prefix "raf-run.": the steps done and, per dataset,
 * the batch the next step reads. Loading (--load) fills every argument the
 * file names, checking dtype and shape; names the function lacks are
 * reported as warnings and skipped. Resuming (--resume) is stricter: the
 * file must hold every param and state of the function and nothing else,
 * and its counters say where the steps go on.
 */
#ifndef RAF_RUN_CHECKPOINT_H
#define RAF_RUN_CHECKPOINT_H

#include "raf-run/dist.h"
#include "raf-run/options.h"
#include "runtime/exec.h"

/* Where a run stands: what --save writes beside the tensors, and what
 * --resume reads back. */
typedef struct rr_progress {
  long step; /* steps done ("raf-run.step") */
  /* Per dataset of the options, in their order: the batch index the next
   * step reads ("raf-run.dataset.NAME", NAME the argument it feeds); on
   * resume, -1 for a dataset the file has no position for. */
  int ndatasets;
  const rr_named *datasets;
  int64_t next[MAX_DATASETS];
} rr_progress;

/* Fills the arguments of f the file names and sets given[i] for each.
 * args live on the host or on ex's device, where they are copied to. */
raf_status rr_checkpoint_load(raf_ctx *ctx, raf_exec *ex, const char *path,
                              raf_func *f, raf_tensor *const *args,
                              bool *given);
/* --resume: fills f's params and states from path as rr_checkpoint_load
 * does, and *p from its counters (p->datasets and p->ndatasets set by the
 * caller). A file that lacks a param or state of f, names anything else,
 * or has no "raf-run.step" (a checkpoint of another model, or not written
 * by raf-run) is an error. */
raf_status rr_checkpoint_resume(raf_ctx *ctx, raf_exec *ex, const char *path,
                                raf_func *f, raf_tensor *const *args,
                                bool *given, rr_progress *p);
/* Writes f's params and states and p's counters (p may be NULL: none);
 * args live on the host or on ex's device, from which they are staged
 * through the host. */
raf_status rr_checkpoint_save(raf_ctx *ctx, raf_exec *ex, const char *path,
                              raf_func *f, raf_tensor *const *args,
                              const rr_progress *p);
/* The same in a run of d->world ranks: every rank takes part (a sharded
 * param or state is gathered whole on rank 0), rank 0 writes. */
raf_status rr_checkpoint_save_dist(raf_ctx *ctx, raf_exec *ex, raf_module *m,
                                   raf_func *f, const rr_dist *d,
                                   const char *path, raf_tensor **args,
                                   const rr_progress *p);

#endif
