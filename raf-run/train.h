/* train.h: raf-run's arguments and steps (train.c): the arguments made
 * from the command line (inputs, a checkpoint, datasets, `init`), the
 * --steps loop with its JSONL log and progress line, and the results
 * written, printed or checked. */
#ifndef RAF_RUN_TRAIN_H
#define RAF_RUN_TRAIN_H

#include "raf-run/checkpoint.h"
#include "raf-run/dist.h"
#include "raf-run/options.h"
#include "runtime/exec.h"
#include "runtime/npy.h"

/* A dataset: rows of an argument's shape cut from a bigger array. In a
 * sharded run a slice is the global batch, of which rank r takes the r-th
 * run of the local batch's rows. */
typedef struct rr_dataset {
  int arg;         /* the argument it feeds; -1 when it could not open */
  raf_npy all;     /* the file (raf_npy_free it) */
  int64_t batches; /* whole slices in the file */
  size_t slice_bytes, rank_offset;
  int64_t start; /* the batch of the first step (--resume), else 0 */
} rr_dataset;

/* The arguments of f into args[] (on ex's device), and o's datasets into
 * ds[] (o->ndatasets of them, opened). resume: NULL, or where --resume
 * goes on from: --save's file is read into the params and states and
 * into *resume (its datasets set by the caller), and each dataset starts
 * at its saved batch. */
raf_status rr_make_args(raf_ctx *ctx, raf_exec *ex, raf_module *m,
                        raf_func *f, const rr_options *o, const rr_dist *d,
                        raf_tensor **args, rr_dataset *ds,
                        rr_progress *resume);

/* The batch of ds for the step `step` after the first (0 for the first),
 * into t, on the executor's device. */
raf_status rr_feed(raf_exec *ex, const rr_dataset *ds, long step,
                   raf_tensor *t);

/* --save-every's writer: save(self, done) after step `done` (counted from
 * 1 over resumed runs) when done is a multiple of o->save_every. */
typedef struct rr_saver {
  raf_status (*save)(void *self, long done);
  void *self;
} rr_saver;

/* Runs the steps first+1 .. o->steps of f (first: the steps a resumed
 * checkpoint had done, else 0), feeding the datasets and donating the
 * results marked {updates} back into args; the last step's results are
 * left in results[] (the executor's: raf_exec_free them), the time of all
 * the steps in *total_ms. Only the leader (rank 0) logs (on resume, after
 * the log's lines of the steps up to first) and shows progress. */
raf_status rr_run_steps(raf_ctx *ctx, raf_exec *ex, raf_func *f,
                        const rr_options *o, bool leader, raf_tensor **args,
                        rr_dataset *ds, raf_tensor **results, long first,
                        const rr_saver *saver, double *total_ms);

/* Writes (--output), prints (--print) and checks (--expected-output) the
 * results; *failed when a check fails. */
raf_status rr_report_results(raf_ctx *ctx, raf_func *f, const rr_options *o,
                             raf_exec *ex, raf_tensor **results,
                             bool *failed);

#endif
