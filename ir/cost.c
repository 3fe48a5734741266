/* cost.c: the cost model of cost.h.
 *
 * Per-element ops cost their table figure times the elements of their
 * largest operand or result: for an elementwise op that is its output; for
 * a reduction, softmax or layer_norm, its input, which is what it walks.
 * The shape-costed ops count the multiply-adds of their textbook
 * formulation, 2 operations each:
 *   matmul            [.., M, K] x [.., K, N]: 2 M N K per batch element
 *   conv2d            2 x out elements x (Cin / groups) x kh x kw; each
 *                     gradient does the same products again
 *   attention         q [.., Tq, D], k [.., Tk, D], v [.., Tk, Dv]:
 *                     2 Tq Tk (D + Dv) for QK^T and PV, plus 5 per score
 *                     for the softmax; its gradient recomputes the scores
 *                     and does four products more: 2 Tq Tk (3 D + 2 Dv),
 *                     plus 9 per score
 * A causal mask is not discounted: the kernels compute the full products.
 */
#include "ir/cost.h"
#include "ir/memplan.h"

static double numel(const raf_value *v) { return (double)v->type->numel; }

static double dim(const raf_value *v, int from_end) {
  const raf_type *t = v->type;
  return t->rank > from_end ? (double)t->dims[t->rank - 1 - from_end] : 1;
}

/* 2 x result elements x the contracting dimension. */
static double matmul_flops(const raf_stmt *s) {
  const raf_value *a = s->operands[0].value;
  double k = dim(a, raf_stmt_attr_bool(s, "transpose_a") ? 1 : 0);
  return 2 * numel(s->results[0]) * k;
}

/* 2 x output-gradient (or output) elements x the weight's elements per
 * output channel. The weight [Cout, Cin / groups, kh, kw] is operand 1 of
 * conv2d and conv2d_grad_input, and the result of conv2d_grad_weight. */
static double conv_flops(const raf_stmt *s) {
  const raf_value *out = s->op == RAF_OP_CONV2D ? s->results[0]
                                                : s->operands[0].value;
  const raf_value *w = s->op == RAF_OP_CONV2D_GRAD_WEIGHT
                           ? s->results[0]
                           : s->operands[1].value;
  double cout = w->type->rank > 0 ? (double)w->type->dims[0] : 1;
  return cout > 0 ? 2 * numel(out) * numel(w) / cout : 0;
}

/* Operands: attention (q, k, v); its gradient (dy, q, k, v). */
static double attention_flops(const raf_stmt *s, bool grad) {
  int q = grad ? 1 : 0;
  const raf_value *qv = s->operands[q].value, *vv = s->operands[q + 2].value;
  double d = dim(qv, 0), dv = dim(vv, 0);
  double scores = numel(qv) / (d > 0 ? d : 1) * dim(vv, 1); /* .. Tq Tk */
  return grad ? scores * (2 * (3 * d + 2 * dv) + 9)
              : scores * (2 * (d + dv) + 5);
}

static double io_bytes(const raf_stmt *s) {
  double b = 0;
  for (int i = 0; i < s->noperands; i++)
    b += (double)raf_mem_bytes(s->operands[i].value->type);
  for (int r = 0; r < s->nresults; r++)
    b += (double)raf_mem_bytes(s->results[r]->type);
  return b;
}

raf_cost raf_stmt_cost(const raf_stmt *s) {
  raf_cost c = {0, io_bytes(s)};
  switch (s->op) {
  case RAF_OP_RETURN:
  case RAF_OP_CONSTANT:
    return (raf_cost){0, s->op == RAF_OP_CONSTANT ? c.bytes : 0};
  case RAF_OP_CALL:
    if (s->callee) {
      raf_cost inner = raf_func_cost(s->callee);
      c.flops = inner.flops;
      if (!raf_attrs_find(&s->callee->attrs, "fused"))
        c.bytes = inner.bytes;
    }
    return c;
  case RAF_OP_MATMUL:
    c.flops = matmul_flops(s);
    return c;
  case RAF_OP_CONV2D:
  case RAF_OP_CONV2D_GRAD_INPUT:
  case RAF_OP_CONV2D_GRAD_WEIGHT:
    c.flops = conv_flops(s);
    return c;
  case RAF_OP_SCALED_DOT_PRODUCT_ATTENTION:
  case RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD:
    c.flops = attention_flops(s, s->op != RAF_OP_SCALED_DOT_PRODUCT_ATTENTION);
    return c;
  default:
    break;
  }
  double most = 0;
  for (int i = 0; i < s->noperands; i++)
    if (numel(s->operands[i].value) > most)
      most = numel(s->operands[i].value);
  for (int r = 0; r < s->nresults; r++)
    if (numel(s->results[r]) > most)
      most = numel(s->results[r]);
  int per = raf_op_table[s->op].cost;
  c.flops = per > 0 ? per * most : 0;
  return c;
}

raf_cost raf_func_cost(const raf_func *f) {
  raf_cost c = {0, 0};
  for (const raf_stmt *s = f->first; s; s = s->next) {
    raf_cost x = raf_stmt_cost(s);
    c.flops += x.flops;
    c.bytes += x.bytes;
  }
  return c;
}
