/* lower.c: a kernel plan (plan.h) as an LLVM function (lower.h): the
 * point evaluation and row phases both schedules share.
 *
 * The function's body:
 *
 *   if (first row of the whole range) store the uniform results;
 *   for (r = begin; r < end; r++) {        // one row of the parallel range
 *     split r into the outer dims' indices;
 *     for each row op, in statement order:  // the row phase
 *       for (inner dims...) accumulate;     // one nest per pass over the row
 *       finish the row's values (max, sum, mean, rstd, loss, ...);
 *     store the row results;
 *     for (inner dims...) store the full results;
 *   }
 *
 * That is the host schedule's body; lower_host.c adds its entry points and
 * the column tiles (cg_plan_tile), lower_nvptx.c the NVPTX schedule, which
 * runs the same body with a row's elements spread over lanes (cg_nest_open)
 * and its sums combined across them (cg_lanes_combine).
 *
 * Values are evaluated on demand at the current point of the iteration
 * space (the indices in e->idx), each use under its map (plan.h), and
 * remembered per (value, map) in a stack of scopes that follows the loop
 * nests, so a value used twice at one point is computed once. Row values
 * live in the row's scope; LLVM's LICM hoists whatever does not depend on
 * an inner index. Accumulators are allocas that SROA turns into the phis
 * the loop vectorizer recognises as reductions; the double accumulations
 * of float sums carry the `reassoc` flag so that they vectorize.
 */
#include "codegen/lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Memo ----------------------------------------------------------------- */

static LLVMValueRef memo_get(cg_emitter *e, const raf_value *v, cg_map m) {
  for (int i = e->nmemo - 1; i >= 0; i--)
    if (e->memo[i].v == v && cg_map_equal(&e->memo[i].map, &m, v->type->rank))
      return e->memo[i].val;
  return NULL;
}

void cg_memo_put(cg_emitter *e, const raf_value *v, cg_map m,
                     LLVMValueRef val) {
  if (e->nmemo == e->capmemo) {
    int cap = e->capmemo ? 2 * e->capmemo : 64;
    cg_memo *n = realloc(e->memo, sizeof *n * (size_t)cap);
    if (!n) {
      cg_fail(e, "out of memory");
      return;
    }
    e->memo = n;
    e->capmemo = cap;
  }
  e->memo[e->nmemo++] = (cg_memo){v, m, val};
}

/* ---- Loops ---------------------------------------------------------------- */


static LLVMValueRef i64c(cg_emitter *e, int64_t v) {
  return LLVMConstInt(e->i64, (unsigned long long)v, true);
}

LLVMValueRef cg_i64(cg_emitter *e, int64_t v) { return i64c(e, v); }

/* for (iv = from; iv < to; iv += step): leaves the builder in the body. */
LLVMValueRef cg_loop_open(cg_emitter *e, cg_loop *L, LLVMValueRef from,
                              LLVMValueRef to, LLVMValueRef step) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->B);
  L->header = LLVMAppendBasicBlockInContext(e->C, e->fn, "loop");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->C, e->fn, "body");
  L->exit = LLVMAppendBasicBlockInContext(e->C, e->fn, "done");
  L->step = step;
  LLVMBuildBr(e->B, L->header);
  LLVMPositionBuilderAtEnd(e->B, L->header);
  L->iv = LLVMBuildPhi(e->B, e->i64, "i");
  LLVMAddIncoming(L->iv, &from, &pre, 1);
  LLVMBuildCondBr(e->B, LLVMBuildICmp(e->B, LLVMIntSLT, L->iv, to, ""), body,
                  L->exit);
  LLVMPositionBuilderAtEnd(e->B, body);
  return L->iv;
}

void cg_loop_close(cg_emitter *e, cg_loop *L) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(e->B);
  LLVMValueRef next = LLVMBuildNSWAdd(e->B, L->iv, L->step, "");
  LLVMBuildBr(e->B, L->header);
  LLVMAddIncoming(L->iv, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(e->B, L->exit);
}


void cg_nest_open(cg_emitter *e, cg_nest *N) {
  const cg_plan *p = e->p;
  N->memo_mark = e->nmemo;
  N->n = 0;
  if (e->lanes > 1) {
    /* NVPTX: the row's elements in C order, this lane taking lane, lane +
     * lanes, ... (adjacent lanes, adjacent elements); none for a slot
     * without a row. */
    LLVMValueRef end = i64c(e, p->cols);
    if (e->active)
      end = LLVMBuildSelect(e->B, e->active, end, i64c(e, 0), "");
    LLVMValueRef j = cg_loop_open(e, &N->loops[N->n++], e->lane, end,
                               i64c(e, e->lanes));
    for (int c = p->ncdims - 1; c >= p->ncouter; c--) {
      if (c == p->ncouter) {
        e->idx[c] = j;
        break;
      }
      LLVMValueRef ext = i64c(e, p->cdims[c].extent);
      e->idx[c] = LLVMBuildURem(e->B, j, ext, "");
      j = LLVMBuildUDiv(e->B, j, ext, "");
    }
    return;
  }
  for (int c = p->ncouter; c < p->ncdims; c++)
    e->idx[c] = cg_loop_open(e, &N->loops[N->n++], i64c(e, 0),
                          i64c(e, p->cdims[c].extent), i64c(e, 1));
}

void cg_nest_close(cg_emitter *e, cg_nest *N) {
  for (int k = N->n - 1; k >= 0; k--)
    cg_loop_close(e, &N->loops[k]);
  for (int c = e->p->ncouter; c < e->p->ncdims; c++)
    e->idx[c] = NULL;
  e->nmemo = N->memo_mark;
}

/* ---- Evaluation ----------------------------------------------------------- */

/* The element offset of a leaf access of type t under map m. */
static LLVMValueRef leaf_offset(cg_emitter *e, const raf_type *t, cg_map m) {
  const cg_plan *p = e->p;
  int64_t coef[CG_MAX_FDIMS];
  cg_leaf_coef(p, t, m, coef);
  LLVMValueRef off = NULL;
  for (int c = 0; c < p->ncdims; c++) {
    int64_t k = coef[p->cdims[c].last];
    if (k == 0)
      continue;
    if (!e->idx[c]) {
      cg_fail(e, "internal: an index read outside its loop");
      return i64c(e, 0);
    }
    LLVMValueRef term =
        k == 1 ? e->idx[c] : LLVMBuildNSWMul(e->B, e->idx[c], i64c(e, k), "");
    off = off ? LLVMBuildNSWAdd(e->B, off, term, "") : term;
  }
  return off ? off : i64c(e, 0);
}

/* The global holding a dense constant's data. */
static LLVMValueRef const_global(cg_emitter *e, const raf_stmt *s) {
  for (int i = 0; i < e->nconsts; i++)
    if (e->consts[i] == s)
      return e->const_globals[i];
  const raf_type *t = s->results[0]->type;
  size_t n = (size_t)t->numel * (size_t)raf_dtype_size(t->dtype);
  LLVMValueRef init =
      LLVMConstStringInContext(e->C, s->cdata->data, (unsigned)n, true);
  LLVMValueRef g = LLVMAddGlobal(e->M, LLVMTypeOf(init), "raf.const");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, true);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 16);
  e->consts[e->nconsts] = s;
  e->const_globals[e->nconsts++] = g;
  return g;
}


/* Whether a result overwrites argument a (cg_options.inplace). */
static bool overwritten(const cg_emitter *e, int a) {
  for (int r = 0; e->inplace && r < e->p->nout; r++)
    if (e->inplace[r] == a)
      return true;
  return false;
}

/* At a point of the full results' nest: the arguments that results
 * overwrite, loaded (and remembered) before any store. Any later read of
 * them hits the memo at this map; one at another map fails (eval). */
static void load_aliased(cg_emitter *e) {
  for (int r = 0; e->inplace && r < e->p->nout; r++) {
    if (e->inplace[r] < 0)
      continue;
    const raf_value *a = e->p->f->args[e->inplace[r]].value;
    cg_map m = e->p->out[r].map;
    cg_memo_put(e, a, m,
             cg_load(e, e->bufs[a->index], leaf_offset(e, a->type, m),
                     a->type->dtype));
  }
}

static LLVMValueRef operand(cg_emitter *e, const raf_stmt *s, int i,
                            cg_map m) {
  const raf_value *u = s->operands[i].value;
  return cg_eval(e, u, cg_map_operand(u->type, s->results[0]->type, m));
}

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
  return p->ncdims > p->ncouter ? e->idx[p->ncdims - 1] : i64c(e, 0);
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
static LLVMValueRef row_full(cg_emitter *e, const raf_stmt *s, cg_map m) {
  int k = rowop_index(e, s);
  const cg_aux *a = &e->aux[k];
  raf_dtype dt = s->results[0]->type->dtype, w = cg_work_dtype(dt);
  LLVMBuilderRef B = e->B;
  LLVMTypeRef wt = w == RAF_F64 ? e->f64 : e->f32;
  if (s->op == RAF_OP_CROSS_ENTROPY_GRAD) {
    /* (exp(x - top) / total - (c == label)) * g, 0 for an ignored row, in
     * the row's type */
    LLVMTypeRef t = LLVMTypeOf(a->top);
    LLVMValueRef x = acc_cast(e, operand(e, s, 1, m), t);
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
  LLVMValueRef x = operand(e, s, 0, m);
  switch (s->op) {
  case RAF_OP_SOFTMAX_GRAD: { /* y * (dy - sum(dy * y)), in the row's type */
    LLVMTypeRef t = LLVMTypeOf(a->total);
    LLVMValueRef dy = acc_cast(e, x, t),
                 y = acc_cast(e, operand(e, s, 1, m), t);
    return acc_cast(
        e, LLVMBuildFMul(B, y, LLVMBuildFSub(B, dy, a->total, ""), ""), wt);
  }
  case RAF_OP_LOG_SOFTMAX_GRAD: { /* dy - exp(y) * sum(dy), the row's type */
    LLVMTypeRef t = LLVMTypeOf(a->total);
    LLVMValueRef dy = acc_cast(e, x, t),
                 y = acc_cast(e, operand(e, s, 1, m), t);
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
    LLVMValueRef g = operand(e, s, 1, m), b = operand(e, s, 2, m);
    LLVMValueRef y = LLVMBuildFMul(B, LLVMBuildFSub(B, x, a->mean, ""),
                                   a->rstd, "");
    return LLVMBuildFAdd(B, LLVMBuildFMul(B, y, g, ""), b, "");
  }
  }
}

LLVMValueRef cg_eval(cg_emitter *e, const raf_value *v, cg_map m) {
  LLVMValueRef r = memo_get(e, v, m);
  if (r || e->failed)
    return r ? r : LLVMGetUndef(cg_compute_type(e, v->type->dtype));
  const raf_stmt *s = v->def;
  raf_dtype dt = v->type->dtype;
  if (!s) {
    if (overwritten(e, v->index)) /* load_aliased loaded it, if allowed */
      cg_fail(e, "in place: argument %%%s is read before its point's loads "
              "or at another point", v->name);
    r = cg_load(e, e->bufs[v->index], leaf_offset(e, v->type, m), dt);
  } else if (s->op == RAF_OP_CONSTANT) {
    if (!s->cdata->splat && v->type->numel > 1)
      r = cg_load(e, const_global(e, s), leaf_offset(e, v->type, m), dt);
    else if (raf_dtype_is_float(dt))
      r = cg_const(e, dt, raf_const_get_f64(dt, s->cdata, 0));
    else
      r = LLVMConstInt(cg_compute_type(e, dt),
                       (unsigned long long)raf_const_get_i64(dt, s->cdata, 0),
                       true);
  } else if (cg_is_rowop(s)) {
    if (!cg_rowop_is_full(s)) {
      cg_fail(e, "internal: the result of %s read before its row phase",
              raf_op_table[s->op].name);
      return LLVMGetUndef(cg_compute_type(e, dt));
    }
    r = cg_round(e, dt, row_full(e, s, m));
  } else {
    raf_dtype odt = s->noperands ? s->operands[0].value->type->dtype : dt;
    switch (s->op) {
    case RAF_OP_STOP_GRADIENT:
    case RAF_OP_BROADCAST_TO:
      r = operand(e, s, 0, m);
      break;
    case RAF_OP_RESHAPE: { /* the same elements (the analysis checked) */
      const raf_value *u = s->operands[0].value;
      cg_map um;
      cg_split need;
      cg_map_reshape(e->p, u->type, v->type, m, &um, &need);
      r = cg_eval(e, u, um);
      break;
    }
    case RAF_OP_CAST:
      r = cg_convert(e, operand(e, s, 0, m), odt, dt);
      break;
    case RAF_OP_WHERE:
      r = LLVMBuildSelect(e->B, operand(e, s, 0, m), operand(e, s, 1, m),
                          operand(e, s, 2, m), "");
      break;
    case RAF_OP_MSE_LOSS: { /* reduction none: (a - b) * (a - b) */
      LLVMValueRef d = LLVMBuildFSub(e->B, operand(e, s, 0, m),
                                     operand(e, s, 1, m), "");
      r = cg_round(e, dt, LLVMBuildFMul(e->B, d, d, ""));
      break;
    }
    default: /* a formula of lang/scalar.def */
      r = cg_elementwise(e, s, odt, dt, operand(e, s, 0, m),
                         s->noperands > 1 ? operand(e, s, 1, m) : NULL);
      break;
    }
  }
  cg_memo_put(e, v, m, r);
  return r;
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
                    i64c(e, raf_stmt_attr_int(s, "ignore_index")), "");
  /* The runtime checked the labels; a bad one must still not read out of
   * the row. */
  LLVMValueRef inside =
      LLVMBuildICmp(e->B, LLVMIntULT, label, i64c(e, classes), "");
  LLVMValueRef at = LLVMBuildSelect(e->B, inside, label, i64c(e, 0), "");
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
      i64c(e, raf_stmt_attr_int(s, "ignore_index")), "");
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
static LLVMValueRef count_labels(cg_emitter *e, const raf_stmt *s) {
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
  LLVMValueRef n = alloca_init(e, i64c(e, 0));
  cg_loop L;
  LLVMValueRef i = cg_loop_open(e, &L, i64c(e, 0), i64c(e, lab->type->numel),
                             i64c(e, 1));
  LLVMValueRef v = cg_convert(
      e, cg_load(e, e->bufs[lab->index], i, lab->type->dtype),
      lab->type->dtype, RAF_I64);
  LLVMValueRef counts = LLVMBuildICmp(e->B, LLVMIntNE, v, i64c(e, ignore), "");
  LLVMBuildStore(e->B,
                 LLVMBuildAdd(e->B, acc_load(e, n, e->i64),
                              LLVMBuildZExt(e->B, counts, e->i64, ""), ""),
                 n);
  cg_loop_close(e, &L);
  return LLVMBuildSIToFP(e->B, acc_load(e, n, e->i64), t, "");
}

/* if (cond) { ... }: open returns the block after (NULL when cond is NULL:
 * no guard); what is computed inside dominates nothing after. */
static LLVMBasicBlockRef guard_open(cg_emitter *e, LLVMValueRef cond,
                                    int *mark) {
  *mark = e->nmemo;
  if (!cond)
    return NULL;
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->C, e->fn, "own");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(e->C, e->fn, "next");
  LLVMBuildCondBr(e->B, cond, then, next);
  LLVMPositionBuilderAtEnd(e->B, then);
  return next;
}

static void guard_close(cg_emitter *e, LLVMBasicBlockRef next, int mark) {
  if (!next)
    return;
  e->nmemo = mark;
  LLVMBuildBr(e->B, next);
  LLVMPositionBuilderAtEnd(e->B, next);
}

static void row_phase(cg_emitter *e, int k) {
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
      LLVMBasicBlockRef next = guard_open(e, e->owner, &mark);
      raf_dtype sd = scratch_dtype(e, s);
      LLVMTypeRef st = LLVMTypeOf(loss);
      cg_store(e, e->bufs[scratch_base(e) + 2 * t], e->row, sd, loss);
      cg_store(e, e->bufs[scratch_base(e) + 2 * t + 1], e->row, sd,
               LLVMBuildSelect(e->B, ignored, LLVMConstReal(st, 0),
                               LLVMConstReal(st, 1), ""));
      guard_close(e, next, mark);
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

/* ---- The function --------------------------------------------------------- */

void cg_store_output(cg_emitter *e, int i) {
  const cg_output *o = &e->p->out[i];
  const raf_value *v = o->value;
  LLVMValueRef val = cg_eval(e, v, o->map);
  cg_store(e, e->bufs[e->p->f->nargs + i], leaf_offset(e, v->type, o->map),
           v->type->dtype, val);
}

/* A partial result: stored where the indices along the dims it lacks are
 * 0 (it broadcasts along them, so every other point holds a copy). The
 * analysis never merges such a dim with one the result has. */
void cg_store_part(cg_emitter *e, int i) {
  const cg_plan *p = e->p;
  const cg_output *o = &p->out[i];
  int64_t coef[CG_MAX_FDIMS];
  cg_leaf_coef(p, o->value->type, o->map, coef);
  LLVMValueRef cond = NULL;
  for (int c = 0; c < p->ncdims; c++) {
    if (coef[p->cdims[c].last] != 0 || !e->idx[c])
      continue;
    LLVMValueRef z = LLVMBuildICmp(e->B, LLVMIntEQ, e->idx[c], i64c(e, 0), "");
    cond = cond ? LLVMBuildAnd(e->B, cond, z, "") : z;
  }
  if (!cond) {
    cg_store_output(e, i);
    return;
  }
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->C, e->fn, "part");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(e->C, e->fn, "next");
  LLVMBuildCondBr(e->B, cond, then, next);
  LLVMPositionBuilderAtEnd(e->B, then);
  int mark = e->nmemo; /* what is computed here dominates nothing after */
  cg_store_output(e, i);
  e->nmemo = mark;
  LLVMBuildBr(e->B, next);
  LLVMPositionBuilderAtEnd(e->B, next);
}

/* The body over rows [from, to) stepping by step; `first` says whether
 * this call (or thread) owns the uniform results. */
void cg_emit_body(cg_emitter *e, LLVMValueRef first, LLVMValueRef from,
                  LLVMValueRef to, LLVMValueRef step) {
  const cg_plan *p = e->p;
  bool uniform = false, full = false;
  for (int i = 0; i < p->nout; i++) {
    uniform |= p->out[i].cls == CG_OUT_UNIFORM;
    full |= p->out[i].cls == CG_OUT_FULL || p->out[i].cls == CG_OUT_PART;
  }
  if (uniform) {
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->C, e->fn, "uniform");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(e->C, e->fn, "rows");
    LLVMBuildCondBr(e->B, first, then, next);
    LLVMPositionBuilderAtEnd(e->B, then);
    int mark = e->nmemo;
    for (int i = 0; i < p->nout; i++)
      if (p->out[i].cls == CG_OUT_UNIFORM)
        cg_store_output(e, i);
    e->nmemo = mark;
    LLVMBuildBr(e->B, next);
    LLVMPositionBuilderAtEnd(e->B, next);
  }
  for (int k = 0; k < p->nrowops; k++)
    if (p->rowops[k]->op == RAF_OP_CROSS_ENTROPY_GRAD &&
        strcmp(raf_stmt_attr_str(p->rowops[k], "reduction"), "mean") == 0)
      e->aux[k].count = count_labels(e, p->rowops[k]);
  if (e->target == CG_HOST && cg_plan_tile(p)) {
    /* Whole tiles first (the runtime's ranges are whole tiles, but for
     * the last), then the rows left, each adding in ascending order as
     * the tiles' lanes do. */
    LLVMValueRef n = LLVMBuildNSWSub(e->B, to, from, "");
    LLVMValueRef whole = LLVMBuildNSWMul(
        e->B, LLVMBuildSDiv(e->B, n, i64c(e, CG_TILE), ""),
        i64c(e, CG_TILE), "");
    LLVMValueRef mid = LLVMBuildNSWAdd(e->B, from, whole, "");
    e->strict_sums = true;
    cg_emit_tiles(e, from, mid);
    from = mid;
  }
  cg_loop rows;
  LLVMValueRef r = cg_loop_open(e, &rows, from, to, step);
  if (e->slot) { /* NVPTX: the slot's row, or the last one again */
    LLVMValueRef raw = LLVMBuildNSWAdd(e->B, r, e->slot, "");
    e->active = LLVMBuildICmp(e->B, LLVMIntSLT, raw, to, "");
    r = LLVMBuildSelect(e->B, e->active, raw,
                        LLVMBuildNSWSub(e->B, to, i64c(e, 1), ""), "");
    e->owner = LLVMBuildAnd(
        e->B, e->active,
        LLVMBuildICmp(e->B, LLVMIntEQ, e->lane, i64c(e, 0), ""), "");
  }
  e->row = r;
  int mark = e->nmemo;
  for (int c = p->ncouter - 1; c >= 0; c--) {
    if (c == 0) {
      e->idx[c] = r;
      break;
    }
    LLVMValueRef ext = i64c(e, p->cdims[c].extent);
    e->idx[c] = LLVMBuildURem(e->B, r, ext, "");
    r = LLVMBuildUDiv(e->B, r, ext, "");
  }
  for (int k = 0; k < p->nrowops; k++)
    row_phase(e, k);
  int own;
  LLVMBasicBlockRef next = guard_open(e, e->owner, &own);
  for (int i = 0; i < p->nout; i++)
    if (p->out[i].cls == CG_OUT_ROW)
      cg_store_output(e, i);
  guard_close(e, next, own);
  if (full) {
    cg_nest N;
    cg_nest_open(e, &N);
    load_aliased(e);
    for (int i = 0; i < p->nout; i++)
      if (p->out[i].cls == CG_OUT_FULL)
        cg_store_output(e, i);
    for (int i = 0; i < p->nout; i++)
      if (p->out[i].cls == CG_OUT_PART)
        cg_store_part(e, i);
    cg_nest_close(e, &N);
  }
  e->nmemo = mark;
  for (int c = 0; c < p->ncouter; c++)
    e->idx[c] = NULL;
  e->active = e->owner = NULL;
  cg_loop_close(e, &rows);
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
    LLVMValueRef r = cg_loop_open(e, &L, lanes ? e->lane : i64c(e, 0),
                               i64c(e, p->rows), i64c(e, lanes ? e->lanes : 1));
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
  LLVMBasicBlockRef next = guard_open(e, e->owner, &own);
  for (int i = 0; i < p->nout; i++)
    if (p->out[i].cls == CG_OUT_FINAL)
      cg_store_output(e, i);
  guard_close(e, next, own);
  e->nmemo = 0;
}

void cg_add_attr(cg_emitter *e, LLVMValueRef f, unsigned index,
                     const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(f, index, LLVMCreateEnumAttribute(e->C, kind, 0));
}

/* A function with nbufs noalias pointer parameters and then `tail`
 * i64 parameters. */
static LLVMValueRef make_fn(cg_emitter *e, const char *name, int nbufs,
                            int tail) {
  LLVMTypeRef params[CG_MAX_BUFS + 2];
  for (int i = 0; i < nbufs; i++)
    params[i] = e->ptr;
  for (int i = 0; i < tail; i++)
    params[nbufs + i] = e->i64;
  LLVMValueRef f = LLVMAddFunction(
      e->M, name,
      LLVMFunctionType(e->void_, params, (unsigned)(nbufs + tail), false));
  cg_add_attr(e, f, LLVMAttributeFunctionIndex, "nounwind");
  for (int i = 0; i < nbufs; i++)
    cg_add_attr(e, f, (unsigned)i + 1, "noalias");
  return f;
}

static void start_fn(cg_emitter *e, LLVMValueRef f) {
  e->fn = f;
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(e->C, f, "entry");
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(e->C, f, "start");
  LLVMPositionBuilderAtEnd(e->A, entry);
  LLVMValueRef br = LLVMBuildBr(e->A, start);
  LLVMPositionBuilderBefore(e->A, br);
  LLVMPositionBuilderAtEnd(e->B, start);
}

/* The function that holds a body: on the host an internal, always inlined
 * one with noalias buffers and `tail` i64 parameters; on NVPTX the kernel
 * itself. Leaves e->bufs pointing at its parameters. */
LLVMValueRef cg_body_fn(cg_emitter *e, const char *name, int nbufs,
                        int tail) {
  char body_name[256];
  bool host = e->target == CG_HOST;
  snprintf(body_name, sizeof body_name, "%s%s", name, host ? ".body" : "");
  LLVMValueRef f = make_fn(e, body_name, nbufs, tail);
  if (host) {
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cg_add_attr(e, f, LLVMAttributeFunctionIndex, "alwaysinline");
  } else {
    LLVMSetFunctionCallConv(f, 71); /* PTX_Kernel */
  }
  start_fn(e, f);
  for (int i = 0; i < nbufs; i++)
    e->bufs[i] = LLVMGetParam(f, (unsigned)i);
  int nargs = e->p->f->nargs;
  for (int r = 0; e->inplace && r < e->p->nout; r++)
    if (e->inplace[r] >= 0)
      e->bufs[nargs + r] = e->bufs[e->inplace[r]];
  return f;
}

/* Whether inplace[r] also names the argument of an earlier result. */
static bool aliased_twice(const int *inplace, int n, int r) {
  for (int q = 0; q < n; q++)
    if (q != r && inplace[q] == inplace[r])
      return true;
  return false;
}

LLVMValueRef cg_lower(const cg_plan *p, LLVMModuleRef M, const cg_options *o,
                      const char *name, char *why, size_t size) {
  const raf_func *f = p->f;
  int nbufs = f->nargs + f->nresults + 2 * p->ntotals;
  if (nbufs > CG_MAX_BUFS) {
    snprintf(why, size, "more than %d arguments and results", CG_MAX_BUFS);
    return NULL;
  }
  for (int r = 0; o->inplace && r < p->nout; r++) {
    int a = o->inplace[r];
    if (a < 0)
      continue;
    if (a >= f->nargs || aliased_twice(o->inplace, p->nout, r) ||
        p->has_rowops || p->out[r].cls != CG_OUT_FULL ||
        f->args[a].value->type != p->out[r].value->type) {
      snprintf(why, size, "result %d cannot be computed in place over "
               "argument %d", r, a);
      return NULL;
    }
  }
  cg_emitter e;
  memset(&e, 0, sizeof e);
  e.p = p;
  e.inplace = o->inplace;
  e.target = o->target;
  e.vec_isa = o->target == CG_HOST ? o->vec_isa : 0;
  e.M = M;
  e.C = LLVMGetModuleContext(M);
  e.B = LLVMCreateBuilderInContext(e.C);
  e.A = LLVMCreateBuilderInContext(e.C);
  e.i1 = LLVMInt1TypeInContext(e.C);
  e.i8 = LLVMInt8TypeInContext(e.C);
  e.i16 = LLVMInt16TypeInContext(e.C);
  e.i32 = LLVMInt32TypeInContext(e.C);
  e.i64 = LLVMInt64TypeInContext(e.C);
  e.f16 = LLVMHalfTypeInContext(e.C);
  e.f32 = LLVMFloatTypeInContext(e.C);
  e.f64 = LLVMDoubleTypeInContext(e.C);
  e.ptr = LLVMPointerTypeInContext(e.C, 0);
  e.void_ = LLVMVoidTypeInContext(e.C);
  e.bufs = calloc((size_t)nbufs + 1, sizeof *e.bufs);
  e.aux = calloc((size_t)p->nrowops + 1, sizeof *e.aux);
  e.consts = calloc((size_t)p->nstmts + 1, sizeof *e.consts);
  e.const_globals = calloc((size_t)p->nstmts + 1, sizeof *e.const_globals);
  LLVMValueRef kernel = NULL;
  char final_name[256];
  snprintf(final_name, sizeof final_name, "%s_final", name);
  if (!e.bufs || !e.aux || !e.consts || !e.const_globals) {
    cg_fail(&e, "out of memory");
  } else if (o->target == CG_HOST) {
    kernel = cg_lower_host(&e, name, final_name, nbufs);
  } else {
    kernel = cg_lower_nvptx(&e, name, final_name, nbufs);
  }
  LLVMDisposeBuilder(e.B);
  LLVMDisposeBuilder(e.A);
  free(e.bufs);
  free(e.aux);
  free(e.consts);
  free(e.const_globals);
  free(e.memo);
  if (e.failed) {
    snprintf(why, size, "%s", e.why);
    return NULL;
  }
  return kernel;
}
