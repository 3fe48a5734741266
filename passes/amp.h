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

/* Whether g has the shape `autodiff` gives @f_grad: a scalar float loss
 * first, then one result per {param} argument of that param's type, then
 * the forward's state updates (batch_norm's running statistics), each
 * marked {updates = %s} with s a {state} argument. When it has not and why
 * is not NULL, *why says what is wrong. */
bool raf_is_grad_func(const raf_func *g, const char **why);

/* The number of g's {param} arguments: of a gradient function, its
 * gradient results, which follow the loss; the state updates follow them. */
int raf_func_nparams(const raf_func *g);

/* Whether result i of f carries {updates = %s} with s a {state} argument
 * of f: what a forward model returns after its loss for its running
 * statistics (docs/Training.md, "State updated by the forward"). */
bool raf_result_updates_state(const raf_func *f, int i);

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
