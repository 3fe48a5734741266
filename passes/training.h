/* training.h: the links between a model and the training functions the
 * passes make from it (docs/LangRef.md, "Training functions").
 *
 * autodiff makes @f_grad from the model @f and marks it {grad_of = @f};
 * the optimizer makes @f_train_step, which calls @f_grad, and marks it
 * {step_of = @f_grad}. Passes that later work on the gradient function or
 * the step (amp, optimizer, shard) find them through these queries, which
 * read the marks, so a renamed function keeps working. Modules written
 * before the marks are recognised by name (@NAME_grad, @NAME_train_step
 * calling @NAME_grad), with a deprecation note.
 */
#ifndef RAF_PASSES_TRAINING_H
#define RAF_PASSES_TRAINING_H

#include "ir/ir.h"

/* The number of g's {param} arguments: of a gradient function, its
 * gradient results, which follow the loss; the state updates follow them. */
int raf_func_nparams(const raf_func *g);

/* Whether result i of f carries {updates = %s} with s a {state} argument
 * of f: what a forward model returns after its loss for its running
 * statistics (docs/Training.md, "State updated by the forward"). */
bool raf_result_updates_state(const raf_func *f, int i);

/* Whether g has the shape `autodiff` gives @f_grad: a scalar float loss
 * first, then one result per {param} argument of that param's type, then
 * the forward's state updates (batch_norm's running statistics), each
 * marked {updates = %s} with s a {state} argument. When it has not and why
 * is not NULL, *why says what is wrong. */
bool raf_is_grad_func(const raf_func *g, const char **why);

/* Whether f is a gradient function: marked {grad_of = @...}, or, unmarked,
 * named NAME_grad (then a note on ctx, when not NULL, says the name will
 * not be enough in a later version). */
bool raf_training_is_grad(raf_ctx *ctx, const raf_func *f);

/* The gradient function of the model f in m: the one marked
 * {grad_of = @f}; NULL when none is. */
raf_func *raf_training_grad_func(raf_module *m, const raf_func *f);

/* The gradient function the training step `step` calls: its {step_of}
 * mark, or, unmarked, @NAME_grad when step is @NAME_train_step (with the
 * note); the call's statement goes to *call. NULL when step is no step. */
raf_func *raf_training_step_grad(raf_ctx *ctx, raf_func *step,
                                 raf_stmt **call);

/* The name of the step the optimizer makes from the gradient function g:
 * the model's (its grad_of mark) with "_train_step", or, unmarked, g's
 * name less "_grad" with it; malloc'd (the caller frees it), NULL when
 * memory runs out. */
char *raf_training_step_name(const raf_func *g);

/* Marks g as the gradient function of f, and step as the step of g. */
raf_status raf_training_mark_grad(raf_func *g, raf_func *f);
raf_status raf_training_mark_step(raf_func *step, raf_func *g);

#endif
