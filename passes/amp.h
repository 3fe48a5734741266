/* amp.h: what the amp pass (amp.c) shares with the optimizer pass: dynamic
 * loss scaling of a training step (loss_scale.c).
 *
 * With dtype=f16, amp gives every gradient function @f_grad an argument
 * `%loss_scale: f32[] {state, init = "constant(65536)"}`: its backward pass
 * starts from the scale instead of 1, and the gradients it returns are
 * unscaled in f32. A training step that calls such a function must then
 * skip the update when a gradient is not finite and adjust the scale, as
 * torch.cuda.amp.GradScaler does; raf_loss_scale_step writes that, and both
 * passes call it: amp for a step that exists already, optimizer for a step
 * it builds from a loss-scaled @f_grad.
 */
#ifndef RAF_PASSES_AMP_H
#define RAF_PASSES_AMP_H

#include "ir/ir.h"
#include "passes/training.h"

/* The names of the scaler's state arguments. */
#define RAF_LOSS_SCALE "loss_scale"
#define RAF_LOSS_SCALE_GROWTH "loss_scale_growth"

/* GradScaler's defaults. */
#define RAF_LOSS_SCALE_INIT 65536.0
#define RAF_LOSS_SCALE_GROWTH_FACTOR 2.0
#define RAF_LOSS_SCALE_BACKOFF 0.5
#define RAF_LOSS_SCALE_INTERVAL 2000

/* The index of f's argument named name, or -1. */
int raf_func_arg_index(const raf_func *f, const char *name);

/* Appends the argument `%name: t {state, init = init}` to f; NULL when out
 * of memory or the name is taken. */
raf_value *raf_func_add_state(raf_func *f, const char *name, raf_type *t,
                              const char *init);

/* Makes step, a function whose `call` statement `call` calls a loss-scaled
 * gradient function, skip its updates on a non-finite gradient and carry
 * the scale: it adds the state argument loss_scale_growth (i64[], clean
 * steps since the scale last changed), selects every {updates} result
 * between its new and its old value, and returns the new scale and count
 * with {updates}. The scale is the call's loss_scale operand, which must be
 * an argument of step. A step that has loss_scale_growth already is left
 * as it is. Errors are reported at the call. */
raf_status raf_loss_scale_step(raf_ctx *ctx, raf_func *step, raf_stmt *call);

#endif
