/* shard_internal.h: what the shard pass's files share (passes/shard.c,
 * the pass; passes/shard_across.c, the statements that look across rows
 * or parts). Not part of the passes' interface. */
#ifndef RAF_SHARD_INTERNAL_H
#define RAF_SHARD_INTERNAL_H

#include "passes/emit.h"
#include "passes/pass.h"
#include "passes/ptrmap.h"

/* A dropout key of the local batch: key, for tensors of local elements,
 * as (seed, first) (shard_rank_masks). */
typedef struct shard_mask {
  raf_value *key;
  int64_t local;
  raf_value *keyed;
} shard_mask;

typedef struct shard {
  raf_ctx *ctx;
  raf_module *m;
  int64_t world, bucket;
  int zero;
  bool sync_batch_norm;  /* batch_norm=sync (else local) */
  raf_func *step, *grad;
  raf_stmt *call;        /* the step's call of @F_grad */
  raf_ptrmap batched;    /* values of @F_grad (or the step) that carry the batch */
  raf_ptrmap part;       /* in the step: full value -> its part */
  raf_ptrmap whole;      /* a value retyped as its own part -> its type */
  shard_mask *masks;     /* @F_grad's dropout keys, keyed for the rank */
  int nmasks;
  const char *reduction; /* the loss's over the batch: "mean" or "sum" */
  const char *grad_reduction; /* the gradients' over the ranks */
  raf_status st;
} shard;

/* Reports "shard: ..." at loc and sets S->st; returns RAF_ERROR. */
raf_status shard_fail(shard *S, raf_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int64_t shard_numel(const raf_type *t);
raf_type *shard_vec_type(shard *S, raf_dtype dt, int64_t n);
raf_type *shard_mat_type(shard *S, raf_dtype dt, int64_t rows, int64_t cols);
/* v reshaped to `to` (v itself when it has that type already). */
raf_value *shard_reshape(raf_emitter *e, raf_value *v, const raf_type *to);
/* op (a collective) of v along axis 0 over the S->world ranks. */
raf_value *shard_collective(shard *S, raf_emitter *e, raf_opcode op,
                            raf_value *v, const char *reduction);
/* s's ints attribute name with element k divided by world (or set to `to`
 * when to >= 0). */
void shard_rescale_ints(shard *S, raf_stmt *s, const char *name, int k,
                        int64_t to);

/* shard_across.c; the first two are called by localize for each
 * statement it retypes. */
void shard_localize_splats(shard *S, raf_stmt *s);
void shard_rank_masks(shard *S, raf_stmt *s);
/* After localize: batch_norm's statistics over the ranks. */
void shard_batch_norms(shard *S);
/* The type of v before it became a part (v's own type if it did not). */
const raf_type *shard_whole_type(shard *S, raf_value *v);
/* zero >= 1: s (sum, min or max of a whole value to a scalar) over part. */
void shard_reduce_part(shard *S, raf_stmt *s, raf_value *part);

#endif
