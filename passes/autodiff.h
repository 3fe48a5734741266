/* autodiff.h: what the autodiff pass (autodiff.c) and its gradient rules
 * (grad_rules.c) share.
 *
 * A gradient rule is the vector-Jacobian product of one op: given a
 * forward statement s of the gradient function and the gradients dy[i] of
 * its results (NULL for a result the loss does not depend on), it emits
 * statements that compute dx[i], the gradient of operand i, for every
 * operand with need[i] set, and leaves the others NULL. Rules emit through
 * the emitter of the context, which appends to the gradient function at
 * s's source location; they read only the forward values their formula
 * needs (RAF's GradInputSelect), so that the rest can die early. A rule
 * never reports errors of its own except where an op's gradient is
 * undefined (batch_norm's running statistics); a statement that fails to
 * type is reported by the emitter.
 *
 * Each rule is named in the grad column of lang/ops.def; the registry in
 * grad_rules.c is expanded from it.
 */
#ifndef RAF_PASSES_AUTODIFF_H
#define RAF_PASSES_AUTODIFF_H

#include "passes/emit.h"

typedef struct raf_ad {
  raf_ctx *ctx;
  raf_module *m;
  raf_emitter e;
  const bool *need; /* need[i]: operand i of the statement wants dx[i] */
} raf_ad;

typedef raf_status (*raf_grad_rule)(raf_ad *ad, raf_stmt *s,
                                    raf_value *const *dy, raf_value **dx);

/* The rule of op (GRAD in ops.def), or NULL (NOGRAD, BACKWARD). */
raf_grad_rule raf_grad_rule_for(raf_opcode op);
/* Whether op is a backward operator (BACKWARD in ops.def). */
bool raf_op_is_backward(raf_opcode op);

#endif
