/* test_grad_rules.c: the gradient column of lang/ops.def is complete.
 * Every op with a differentiable operand (its diff mask) has a gradient
 * rule, unless it is a backward operator or call/return (which the
 * autodiff pass handles itself); an op without a differentiable operand
 * has none; backward operators have no rule and are exactly the rows the
 * pass may make. A new op row with NOGRAD but a diff mask fails here. */
#include "passes/autodiff.h"

#include <stdio.h>

static int failures;
#include "test/unit/check.h"

int main(void) {
  int rules = 0, backward = 0;
  for (int i = 0; i < RAF_OP_COUNT; i++) {
    raf_opcode op = (raf_opcode)i;
    const raf_op_info *info = &raf_op_table[op];
    bool has = raf_grad_rule_for(op) != NULL, bw = raf_op_is_backward(op);
    bool special = op == RAF_OP_CALL || op == RAF_OP_RETURN;
    bool diff = info->diff_mask != 0;
    bool want = diff && !bw && !special;
    if (has != want)
      fprintf(stderr, "op %s: %s\n", info->name,
              want ? "differentiable but no gradient rule"
                   : "a gradient rule it should not have");
    CHECK(has == want);
    CHECK(!(bw && has));
    rules += has;
    backward += bw;
  }
  /* The backward operators of docs/LangRef.md. */
  CHECK(backward == 14);
  CHECK(raf_op_is_backward(RAF_OP_GELU_GRAD));
  CHECK(raf_op_is_backward(RAF_OP_SILU_GRAD));
  CHECK(raf_op_is_backward(RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD));
  CHECK(!raf_op_is_backward(RAF_OP_GELU));
  CHECK(!raf_grad_rule_for(RAF_OP_STOP_GRADIENT));
  CHECK(!raf_grad_rule_for(RAF_OP_ARGMAX));
  CHECK(raf_grad_rule_for(RAF_OP_MATMUL));
  if (failures)
    fprintf(stderr, "test_grad_rules: %d failures (%d rules)\n", failures,
            rules);
  return failures != 0;
}
