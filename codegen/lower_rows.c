/* lower_rows.c: the row ops of a kernel plan (lower.h): sum, mean, max,
 * min, softmax, log_softmax, layer_norm, cross_entropy, mse_loss and the
 * row gradients (softmax_grad, log_softmax_grad, cross_entropy_grad), each
 * as a phase over its row and the full results read from what the phase
 * computed, and the final step that adds up totals across rows.
 *
 * A row phase walks the row once per pass it needs (cg_nest_open: a max,
 * then a sum of exponentials, say), accumulating in the row's type
 * (acc_type: double on the host, cpu-ref's; float on NVPTX for the narrow
 * floats), and leaves the row's values (its max, total, log-sum-exp, mean,
 * rstd, label) in the statement's cg_aux, from which cg_row_full computes
 * a full result at each point and lower.c's body stores the row results.
 * A total (a loss reduced over every row) is stored per row in two scratch
 * arrays (the sum, and the count of labels for "mean"); cg_emit_final adds
 * them up in row order.
 */
#include "codegen/lower.h"

#include <string.h>

static int rowop_index(const cg_emitter *e, const raf_stmt *s) {
  for (int i = 0; i < e->p->nrowops; i++)
    if (e->p->rowops[i] == s)
      return i;
  return -1;
}

/* The index along the last inner dim (cross_entropy's class), 0 when the
 * class dim has one element. */
static LLVMValueRef class_index(cg_emitter *e) {
  const cg_plan *p = e->p;
  return p->ncdims > p->ncouter ? e->idx[p->ncdims - 1] : cg_i64(e, 0);
}

/* The row's type: what a row op's sums accumulate in and its finishing
 * math (a mean, 1 / sqrt(var + eps), the log of a sum, a loss, the
 * gradients' per-element formulas) runs in, per target. On the host
 * double, cpu-ref's, for every float dtype. On NVPTX float for f32, f16
 * and bf16 (double only for f64 inputs): per-lane partial sums, the
 * shfl.sync butterflies and the warps' values through shared memory are
 * all float, as f64 runs at 1/32 to 1/64 of float's rate on most GPUs
 * (docs/Codegen.md#numerics-on-the-gpu, docs/Numerics.md). */
static LLVMTypeRef acc_type(cg_emitter *e, raf_dtype in) {
  return e->target == CG_NVPTX && in != RAF_F64 ? e->f32 : e->f64;
}

static raf_dtype acc_dtype(cg_emitter *e, LLVMTypeRef t) {
  return t == e->f64 ? RAF_F64 : RAF_F32;
}

/* A float or double value as type t (float or double). */
static LLVMValueRef acc_cast(cg_emitter *e, LLVMValueRef v, LLVMTypeRef t) {
  if (LLVMTypeOf(v) == t)
    return v;
  return t == e->f64 ? LLVMBuildFPExt(e->B, v, t, "")
                     : LLVMBuildFPTrunc(e->B, v, t, "");
}

/* A full result of a row op at the current point. */
LLVMValueRef cg_row_full(cg_emitter *e, const raf_stmt *s, cg_map m) {
  int k = rowop_index(e, s);
  const cg_aux *a = &e->aux[k];
  raf_dtype dt = s->results[0]->type->dtype, w = cg_work_dtype(dt);
  LLVMBuilderRef B = e->B;
  LLVMTypeRef wt = w == RAF_F64 ? e->f64 : e->f32;
  if (s->op == RAF_OP_CROSS_ENTROPY_GRAD) {
    /* (exp(x - top) / total - (c == label)) * g, 0 for an ignored row, in
     * the row's type */
    LLVMTypeRef t = LLVMTypeOf(a->top);
    LLVMValueRef x = acc_cast(e, cg_operand(e, s, 1, m), t);
    LLVMValueRef p = LLVMBuildFDiv(
        B,
        cg_math(e, "exp", acc_dtype(e, t), LLVMBuildFSub(B, x, a->top, ""),
                NULL),
        a->total, "");
    LLVMValueRef hit =
        LLVMBuildICmp(B, LLVMIntEQ, class_index(e), a->label, "");
    p = LLVMBuildFSub(B, p,
                      LLVMBuildSelect(B, hit, LLVMConstReal(t, 1),
                                      LLVMConstReal(t, 0), ""),
                      "");
    LLVMValueRef r = LLVMBuildSelect(B, a->ignored, LLVMConstReal(t, 0),
                                     LLVMBuildFMul(B, p, a->scale, ""), "");
    return acc_cast(e, r, wt);
  }
  LLVMValueRef x = cg_operand(e, s, 0, m);
  switch (s->op) {
  case RAF_OP_SOFTMAX_GRAD: { /* y * (dy - sum(dy * y)), in the row's type */
    LLVMTypeRef t = LLVMTypeOf(a->total);
    LLVMValueRef dy = acc_cast(e, x, t),
                 y = acc_cast(e, cg_operand(e, s, 1, m), t);
    return acc_cast(
        e, LLVMBuildFMul(B, y, LLVMBuildFSub(B, dy, a->total, ""), ""), wt);
  }
  case RAF_OP_LOG_SOFTMAX_GRAD: { /* dy - exp(y) * sum(dy), the row's type */
    LLVMTypeRef t = LLVMTypeOf(a->total);
    LLVMValueRef dy = acc_cast(e, x, t),
                 y = acc_cast(e, cg_operand(e, s, 1, m), t);
    LLVMValueRef ey = cg_math(e, "exp", acc_dtype(e, t), y, NULL);
    return acc_cast(
        e, LLVMBuildFSub(B, dy, LLVMBuildFMul(B, ey, a->total, ""), ""), wt);
  }
  case RAF_OP_SOFTMAX: { /* (T)((R)exp(x - top) / total), R the row's type */
    LLVMValueRef d = LLVMBuildFSub(B, x, a->top, "");
    LLVMValueRef ex =
        acc_cast(e, cg_math(e, "exp", w, d, NULL), LLVMTypeOf(a->total));
    return acc_cast(e, LLVMBuildFDiv(B, ex, a->total, ""), wt);
  }
  case RAF_OP_LOG_SOFTMAX: /* (x - top) - lse */
    return LLVMBuildFSub(B, LLVMBuildFSub(B, x, a->top, ""), a->lse, "");
  default: { /* layer_norm: (x - m) * rstd * g + b */
    LLVMValueRef g = cg_operand(e, s, 1, m), b = cg_operand(e, s, 2, m);
    LLVMValueRef y = LLVMBuildFMul(B, LLVMBuildFSub(B, x, a->mean, ""),
                                   a->rstd, "");
    return LLVMBuildFAdd(B, LLVMBuildFMul(B, y, g, ""), b, "");
  }
  }
}

/* ---- Row phases ----------------------------------------------------------- */

static LLVMValueRef alloca_init(cg_emitter *e, LLVMValueRef init) {
  LLVMValueRef a = LLVMBuildAlloca(e->A, LLVMTypeOf(init), "acc");
  LLVMBuildStore(e->B, init, a);
  return a;
}

static LLVMValueRef acc_load(cg_emitter *e, LLVMValueRef a, LLVMTypeRef t) {
  return LLVMBuildLoad2(e->B, t, a, "");
}

/* The row's sum in accumulator a (of type t), the lanes' parts combined,
 * still of type t. */
static LLVMValueRef acc_sum(cg_emitter *e, LLVMValueRef a, LLVMTypeRef t) {
  return cg_lanes_combine(e, CG_ADD, acc_dtype(e, t), acc_load(e, a, t));
}

/* The row's NaN-propagating maximum of x (in its work type). */
static LLVMValueRef row_max(cg_emitter *e, const raf_value *x) {
  raf_dtype dt = x->type->dtype;
  LLVMTypeRef t = cg_compute_type(e, dt);
  LLVMValueRef a = alloca_init(e, LLVMConstReal(t, -1.0 / 0.0));
  cg_nest N;
  cg_nest_open(e, &N);
  LLVMValueRef v = cg_eval(e, x, cg_map_identity(e->p, x->type));
  LLVMBuildStore(e->B, cg_max(e, dt, acc_load(e, a, t), v, false), a);
  cg_nest_close(e, &N);
  return cg_lanes_combine(e, CG_MAX, dt, acc_load(e, a, t));
}

/* The row's sum of exp(x - top), in the row's type. */
static LLVMValueRef row_sum_exp(cg_emitter *e, const raf_value *x,
                                LLVMValueRef top) {
  raf_dtype w = cg_work_dtype(x->type->dtype);
  LLVMTypeRef t = acc_type(e, x->type->dtype);
  LLVMValueRef a = alloca_init(e, LLVMConstReal(t, 0));
  cg_nest N;
  cg_nest_open(e, &N);
  LLVMValueRef v = cg_eval(e, x, cg_map_identity(e->p, x->type));
  LLVMValueRef ex =
      cg_math(e, "exp", w, LLVMBuildFSub(e->B, v, top, ""), NULL);
  LLVMBuildStore(e->B, cg_fadd_reassoc(e, acc_load(e, a, t),
                                       acc_cast(e, ex, t)), a);
  cg_nest_close(e, &N);
  return acc_sum(e, a, t);
}

/* sum, mean, max, min: the accumulator's type and first value. */
LLVMValueRef cg_reduce_init(cg_emitter *e, const raf_stmt *s,
                                LLVMTypeRef *type) {
  raf_dtype dt = s->operands[0].value->type->dtype;
  bool fl = raf_dtype_is_float(dt);
  bool sum = s->op == RAF_OP_SUM || s->op == RAF_OP_MEAN;
  bool min = s->op == RAF_OP_MIN;
  LLVMTypeRef t = *type = fl && sum ? acc_type(e, dt) : cg_compute_type(e, dt);
  if (fl)
    return LLVMConstReal(t, sum ? 0 : min ? 1.0 / 0.0 : -1.0 / 0.0);
  if (sum)
    return LLVMConstInt(t, 0, false);
  if (dt == RAF_U8)
    return LLVMConstInt(t, min ? 255 : 0, false);
  /* INT_MAX or INT_MIN of the width */
  uint64_t top = 1ull << (LLVMGetIntTypeWidth(t) - 1);
  return LLVMConstInt(t, min ? top - 1 : top, false);
}

/* The accumulator after element v. Float sums add in the row's type
 * (acc_type), reassociated
 * (so that a row's loop vectorizes) unless e->strict_sums (a column tile's
 * rows, each in its own lane, add in ascending order). */
LLVMValueRef cg_reduce_step(cg_emitter *e, const raf_stmt *s,
                                LLVMValueRef acc, LLVMValueRef v) {
  raf_dtype dt = s->operands[0].value->type->dtype;
  bool fl = raf_dtype_is_float(dt);
  bool sum = s->op == RAF_OP_SUM || s->op == RAF_OP_MEAN;
  if (sum && fl)
    return e->strict_sums
               ? LLVMBuildFAdd(e->B, acc, acc_cast(e, v, LLVMTypeOf(acc)), "")
               : cg_fadd_reassoc(e, acc, acc_cast(e, v, LLVMTypeOf(acc)));
  if (sum)
    return LLVMBuildAdd(e->B, acc, v, "");
  return cg_max(e, dt, acc, v, s->op == RAF_OP_MIN);
}

/* The row's result from its accumulator. */
LLVMValueRef cg_reduce_finish(cg_emitter *e, const raf_stmt *s,
                                  LLVMValueRef r) {
  raf_dtype dt = s->operands[0].value->type->dtype,
            rt = s->results[0]->type->dtype;
  bool fl = raf_dtype_is_float(dt);
  bool sum = s->op == RAF_OP_SUM || s->op == RAF_OP_MEAN;
  if (s->op == RAF_OP_MEAN) /* NaN for no elements, as 0 / 0 */
    r = LLVMBuildFDiv(e->B, r,
                      LLVMConstReal(LLVMTypeOf(r), (double)e->p->cols), "");
  if (fl && sum)
    r = acc_cast(e, r, cg_compute_type(e, rt));
  return cg_round(e, rt, r);
}

/* sum, mean, max, min over the row. */
static LLVMValueRef row_reduce(cg_emitter *e, const raf_stmt *s) {
  const raf_value *x = s->operands[0].value;
  LLVMTypeRef t;
  LLVMValueRef a = alloca_init(e, cg_reduce_init(e, s, &t));
  cg_nest N;
  cg_nest_open(e, &N);
  LLVMValueRef v = cg_eval(e, x, cg_map_identity(e->p, x->type));
  LLVMBuildStore(e->B, cg_reduce_step(e, s, acc_load(e, a, t), v), a);
  cg_nest_close(e, &N);
  raf_dtype dt = x->type->dtype;
  bool sum = s->op == RAF_OP_SUM || s->op == RAF_OP_MEAN;
  if (sum && raf_dtype_is_float(dt))
    return cg_reduce_finish(e, s, acc_sum(e, a, t));
  LLVMValueRef r =
      cg_lanes_combine(e, sum ? CG_ADD : s->op == RAF_OP_MIN ? CG_MIN : CG_MAX,
                       dt, acc_load(e, a, t));
  return cg_reduce_finish(e, s, r);
}

static void row_layer_norm(cg_emitter *e, const raf_stmt *s, cg_aux *a) {
  const raf_value *x = s->operands[0].value;
  raf_dtype w = cg_work_dtype(x->type->dtype);
  cg_map id = cg_map_identity(e->p, x->type);
  LLVMTypeRef t = acc_type(e, x->type->dtype);
  LLVMValueRef n = LLVMConstReal(t, (double)e->p->cols);
  LLVMValueRef acc = alloca_init(e, LLVMConstReal(t, 0));
  cg_nest N;
  cg_nest_open(e, &N);
  LLVMValueRef v = acc_cast(e, cg_eval(e, x, id), t);
  LLVMBuildStore(e->B, cg_fadd_reassoc(e, acc_load(e, acc, t), v), acc);
  cg_nest_close(e, &N);
  LLVMValueRef mean = LLVMBuildFDiv(e->B, acc_sum(e, acc, t), n, "");
  LLVMValueRef sq = alloca_init(e, LLVMConstReal(t, 0));
  cg_nest_open(e, &N);
  LLVMValueRef d =
      LLVMBuildFSub(e->B, acc_cast(e, cg_eval(e, x, id), t), mean, "");
  LLVMBuildStore(e->B,
                 cg_fadd_reassoc(e, acc_load(e, sq, t),
                                 LLVMBuildFMul(e->B, d, d, "")),
                 sq);
  cg_nest_close(e, &N);
  /* rstd = 1 / sqrt(sq / n + eps), in the row's type */
  LLVMValueRef var = LLVMBuildFAdd(
      e->B, LLVMBuildFDiv(e->B, acc_sum(e, sq, t), n, ""),
      LLVMConstReal(t, raf_stmt_attr_float(s, "eps")), "");
  LLVMValueRef rstd = LLVMBuildFDiv(
      e->B, LLVMConstReal(t, 1), cg_intrinsic(e, "llvm.sqrt", t, &var, 1), "");
  LLVMTypeRef wt = w == RAF_F64 ? e->f64 : e->f32;
  a->mean = acc_cast(e, mean, wt);
  a->rstd = acc_cast(e, rstd, wt);
}

/* cross_entropy: log(sum exp(x - top)) - (x[label] - top) in the row's
 * type, 0 where the label is ignore_index (*ignored says so). */
static LLVMValueRef row_cross_entropy(cg_emitter *e, const raf_stmt *s,
                                      LLVMValueRef *ignored_out) {
  const cg_plan *p = e->p;
  const raf_value *x = s->operands[0].value, *lab = s->operands[1].value;
  LLVMValueRef top = row_max(e, x);
  LLVMValueRef total = row_sum_exp(e, x, top);
  cg_map rm;
  cg_map_row(p, lab->type, &rm);
  LLVMValueRef label =
      cg_convert(e, cg_eval(e, lab, rm), lab->type->dtype, RAF_I64);
  int64_t classes = x->type->dims[x->type->rank - 1];
  LLVMValueRef ignored =
      LLVMBuildICmp(e->B, LLVMIntEQ, label,
                    cg_i64(e, raf_stmt_attr_int(s, "ignore_index")), "");
  /* The runtime checked the labels; a bad one must still not read out of
   * the row. */
  LLVMValueRef inside =
      LLVMBuildICmp(e->B, LLVMIntULT, label, cg_i64(e, classes), "");
  LLVMValueRef at = LLVMBuildSelect(e->B, inside, label, cg_i64(e, 0), "");
  int mark = e->nmemo;
  bool has_inner = p->ncdims > p->ncouter;
  if (has_inner)
    e->idx[p->ncdims - 1] = at;
  LLVMTypeRef t = LLVMTypeOf(total);
  LLVMValueRef xl =
      acc_cast(e, cg_eval(e, x, cg_map_identity(p, x->type)), t);
  if (has_inner)
    e->idx[p->ncdims - 1] = NULL;
  e->nmemo = mark;
  LLVMValueRef lse = cg_math(e, "log", acc_dtype(e, t), total, NULL);
  LLVMValueRef loss = LLVMBuildFSub(
      e->B, lse, LLVMBuildFSub(e->B, xl, acc_cast(e, top, t), ""), "");
  *ignored_out = ignored;
  return LLVMBuildSelect(e->B, ignored, LLVMConstReal(t, 0), loss, "");
}

/* mse_loss (mean, sum): the sum in the row's type of (a - b)^2. */
static LLVMValueRef row_mse(cg_emitter *e, const raf_stmt *s) {
  const raf_value *x = s->operands[0].value, *y = s->operands[1].value;
  raf_dtype rt = s->results[0]->type->dtype;
  cg_map id = cg_map_identity(e->p, x->type);
  LLVMTypeRef t = acc_type(e, x->type->dtype);
  LLVMValueRef a = alloca_init(e, LLVMConstReal(t, 0));
  cg_nest N;
  cg_nest_open(e, &N);
  LLVMValueRef d =
      LLVMBuildFSub(e->B, cg_eval(e, x, id),
                    cg_eval(e, y, cg_map_operand(y->type, x->type, id)), "");
  LLVMValueRef sq = LLVMBuildFMul(e->B, d, d, "");
  LLVMBuildStore(e->B,
                 cg_fadd_reassoc(e, acc_load(e, a, t), acc_cast(e, sq, t)),
                 a);
  cg_nest_close(e, &N);
  LLVMValueRef r = acc_sum(e, a, t);
  if (strcmp(raf_stmt_attr_str(s, "reduction"), "mean") == 0)
    r = LLVMBuildFDiv(e->B, r, LLVMConstReal(t, (double)e->p->cols), "");
  return cg_round(e, rt, acc_cast(e, r, cg_compute_type(e, rt)));
}

/* The buffers after the arguments and results: two scratch arrays of
 * doubles (rows long) per total. They hold the rows' losses and counts in
 * the row's type: doubles on the host, floats on NVPTX (in the first half
 * of each array) unless the input is f64. */
static int scratch_base(const cg_emitter *e) {
  return e->p->f->nargs + e->p->f->nresults;
}

static raf_dtype scratch_dtype(cg_emitter *e, const raf_stmt *s) {
  return acc_dtype(e, acc_type(e, s->operands[0].value->type->dtype));
}

static int total_index(const cg_emitter *e, const raf_stmt *s) {
  int t = 0;
  for (int k = 0; k < e->p->nrowops && e->p->rowops[k] != s; k++)
    t += cg_is_total(e->p->rowops[k]);
  return t;
}

/* The row's sum in the row's type of dy * y (softmax_grad) or of dy. */
static LLVMValueRef row_sum_grad(cg_emitter *e, const raf_stmt *s) {
  const raf_value *dy = s->operands[0].value, *y = s->operands[1].value;
  cg_map id = cg_map_identity(e->p, dy->type);
  LLVMTypeRef t = acc_type(e, dy->type->dtype);
  LLVMValueRef a = alloca_init(e, LLVMConstReal(t, 0));
  cg_nest N;
  cg_nest_open(e, &N);
  LLVMValueRef v = acc_cast(e, cg_eval(e, dy, id), t);
  if (s->op == RAF_OP_SOFTMAX_GRAD)
    v = LLVMBuildFMul(
        e->B, v,
        acc_cast(e, cg_eval(e, y, cg_map_operand(y->type, dy->type, id)), t), "");
  LLVMBuildStore(e->B, cg_fadd_reassoc(e, acc_load(e, a, t), v), a);
  cg_nest_close(e, &N);
  return acc_sum(e, a, t);
}

/* cross_entropy_grad's row: the max and the sum of exp(x - max), in the
 * row's type, the label, and the factor dy (or dy / counted labels). */
static void row_ce_grad(cg_emitter *e, const raf_stmt *s, cg_aux *a) {
  const raf_value *dy = s->operands[0].value, *x = s->operands[1].value,
                  *lab = s->operands[2].value;
  cg_map id = cg_map_identity(e->p, x->type);
  LLVMTypeRef t = acc_type(e, x->type->dtype);
  raf_dtype rd = acc_dtype(e, t);
  LLVMValueRef top = alloca_init(e, LLVMConstReal(t, -1.0 / 0.0));
  cg_nest N;
  cg_nest_open(e, &N);
  LLVMBuildStore(e->B,
                 cg_max(e, rd, acc_load(e, top, t),
                        acc_cast(e, cg_eval(e, x, id), t), false),
                 top);
  cg_nest_close(e, &N);
  a->top = cg_lanes_combine(e, CG_MAX, rd, acc_load(e, top, t));
  LLVMValueRef total = alloca_init(e, LLVMConstReal(t, 0));
  cg_nest_open(e, &N);
  LLVMValueRef d =
      LLVMBuildFSub(e->B, acc_cast(e, cg_eval(e, x, id), t), a->top, "");
  LLVMBuildStore(e->B,
                 cg_fadd_reassoc(e, acc_load(e, total, t),
                                 cg_math(e, "exp", acc_dtype(e, t), d, NULL)),
                 total);
  cg_nest_close(e, &N);
  a->total = acc_sum(e, total, t);
  cg_map rm;
  cg_map_row(e->p, lab->type, &rm);
  a->label = cg_convert(e, cg_eval(e, lab, rm), lab->type->dtype, RAF_I64);
  a->ignored = LLVMBuildICmp(
      e->B, LLVMIntEQ, a->label,
      cg_i64(e, raf_stmt_attr_int(s, "ignore_index")), "");
  const char *red = raf_stmt_attr_str(s, "reduction");
  cg_map dm;
  if (dy->type->numel == 1)
    memset(&dm, -1, sizeof dm);
  else
    cg_map_row(e->p, dy->type, &dm);
  a->scale = acc_cast(e, cg_eval(e, dy, dm), t);
  if (strcmp(red, "mean") == 0)
    a->scale = LLVMBuildFDiv(e->B, a->scale, acc_cast(e, a->count, t), "");
}

/* The labels of a cross_entropy_grad "mean" that count: they divide dy.
 * Computed before the rows by every range (labels are a few ints), counted
 * as an integer, returned in the row's type (exact below 2^24 in float). */
LLVMValueRef cg_count_labels(cg_emitter *e, const raf_stmt *s) {
  const raf_value *lab = s->operands[2].value;
  int64_t ignore = raf_stmt_attr_int(s, "ignore_index");
  LLVMTypeRef t = acc_type(e, s->operands[1].value->type->dtype);
  if (lab->def) { /* a constant */
    int64_t n = 0;
    for (int64_t i = 0; i < lab->type->numel; i++)
      n += raf_const_get_i64(lab->type->dtype, lab->def->cdata,
                             lab->def->cdata->splat ? 0 : i) != ignore;
    return LLVMConstReal(t, (double)n);
  }
  LLVMValueRef n = alloca_init(e, cg_i64(e, 0));
  cg_loop L;
  LLVMValueRef i = cg_loop_open(e, &L, cg_i64(e, 0), cg_i64(e, lab->type->numel),
                             cg_i64(e, 1));
  LLVMValueRef v = cg_convert(
      e, cg_load(e, e->bufs[lab->index], i, lab->type->dtype),
      lab->type->dtype, RAF_I64);
  LLVMValueRef counts = LLVMBuildICmp(e->B, LLVMIntNE, v, cg_i64(e, ignore), "");
  LLVMBuildStore(e->B,
                 LLVMBuildAdd(e->B, acc_load(e, n, e->i64),
                              LLVMBuildZExt(e->B, counts, e->i64, ""), ""),
                 n);
  cg_loop_close(e, &L);
  return LLVMBuildSIToFP(e->B, acc_load(e, n, e->i64), t, "");
}

void cg_row_phase(cg_emitter *e, int k) {
  const raf_stmt *s = e->p->rowops[k];
  const raf_value *res = s->results[0];
  cg_aux *a = &e->aux[k];
  LLVMValueRef r = NULL;
  switch (s->op) {
  case RAF_OP_SOFTMAX_GRAD:
  case RAF_OP_LOG_SOFTMAX_GRAD:
    a->total = row_sum_grad(e, s);
    return;
  case RAF_OP_CROSS_ENTROPY_GRAD:
    row_ce_grad(e, s, a);
    return;
  case RAF_OP_SOFTMAX:
  case RAF_OP_LOG_SOFTMAX: {
    const raf_value *x = s->operands[0].value;
    a->top = row_max(e, x);
    a->total = row_sum_exp(e, x, a->top);
    if (s->op == RAF_OP_LOG_SOFTMAX) {
      LLVMTypeRef t = LLVMTypeOf(a->total);
      a->lse = acc_cast(e, cg_math(e, "log", acc_dtype(e, t), a->total, NULL),
                        cg_compute_type(e, x->type->dtype));
    }
    return;
  }
  case RAF_OP_LAYER_NORM:
    row_layer_norm(e, s, a);
    return;
  case RAF_OP_CROSS_ENTROPY: {
    LLVMValueRef ignored;
    LLVMValueRef loss = row_cross_entropy(e, s, &ignored);
    if (cg_is_total(s)) { /* the row's loss and count, for the final step */
      int t = total_index(e, s), mark;
      LLVMBasicBlockRef next = cg_guard_open(e, e->owner, &mark);
      raf_dtype sd = scratch_dtype(e, s);
      LLVMTypeRef st = LLVMTypeOf(loss);
      cg_store(e, e->bufs[scratch_base(e) + 2 * t], e->row, sd, loss);
      cg_store(e, e->bufs[scratch_base(e) + 2 * t + 1], e->row, sd,
               LLVMBuildSelect(e->B, ignored, LLVMConstReal(st, 0),
                               LLVMConstReal(st, 1), ""));
      cg_guard_close(e, next, mark);
      return;
    }
    raf_dtype rt = res->type->dtype;
    r = cg_round(e, rt, acc_cast(e, loss, cg_compute_type(e, rt)));
    break;
  }
  case RAF_OP_MSE_LOSS:
    r = row_mse(e, s);
    break;
  default:
    r = row_reduce(e, s);
    break;
  }
  cg_map m;
  cg_map_row(e->p, res->type, &m);
  cg_memo_put(e, res, m, r);
}

/* The final step: every total added up in the row's type (no
 * reassociation; on the host in double in row order, cpu-ref's), then the
 * results computed from them. */
void cg_emit_final(cg_emitter *e) {
  const cg_plan *p = e->p;
  int t = 0;
  for (int k = 0; k < p->nrowops; k++) {
    const raf_stmt *s = p->rowops[k];
    if (!cg_is_total(s))
      continue;
    raf_dtype sd = scratch_dtype(e, s);
    LLVMTypeRef st = sd == RAF_F64 ? e->f64 : e->f32;
    LLVMValueRef sum = alloca_init(e, LLVMConstReal(st, 0));
    LLVMValueRef cnt = alloca_init(e, LLVMConstReal(st, 0));
    cg_loop L;
    bool lanes = e->lanes > 1; /* NVPTX: lane, lane + lanes, ... */
    LLVMValueRef r = cg_loop_open(e, &L, lanes ? e->lane : cg_i64(e, 0),
                               cg_i64(e, p->rows), cg_i64(e, lanes ? e->lanes : 1));
    LLVMValueRef a = cg_load(e, e->bufs[scratch_base(e) + 2 * t], r, sd);
    LLVMValueRef c = cg_load(e, e->bufs[scratch_base(e) + 2 * t + 1], r, sd);
    LLVMBuildStore(e->B, LLVMBuildFAdd(e->B, acc_load(e, sum, st), a, ""),
                   sum);
    LLVMBuildStore(e->B, LLVMBuildFAdd(e->B, acc_load(e, cnt, st), c, ""),
                   cnt);
    cg_loop_close(e, &L);
    LLVMValueRef v = cg_lanes_combine(e, CG_ADD, sd, acc_load(e, sum, st));
    if (strcmp(raf_stmt_attr_str(s, "reduction"), "mean") == 0) {
      /* NaN when every row is ignored */
      LLVMValueRef n = cg_lanes_combine(e, CG_ADD, sd, acc_load(e, cnt, st));
      LLVMValueRef none =
          LLVMBuildFCmp(e->B, LLVMRealOEQ, n, LLVMConstReal(st, 0), "");
      v = LLVMBuildSelect(e->B, none, LLVMConstReal(st, 0.0 / 0.0),
                          LLVMBuildFDiv(e->B, v, n, ""), "");
    }
    raf_dtype rt = s->results[0]->type->dtype;
    cg_map m;
    memset(&m, -1, sizeof m);
    cg_memo_put(e, s->results[0], m,
                cg_round(e, rt,
                         acc_cast(e, v, cg_compute_type(e, rt))));
    t++;
  }
  int own;
  LLVMBasicBlockRef next = cg_guard_open(e, e->owner, &own);
  for (int i = 0; i < p->nout; i++)
    if (p->out[i].cls == CG_OUT_FINAL)
      cg_store_output(e, i);
  cg_guard_close(e, next, own);
  e->nmemo = 0;
}

