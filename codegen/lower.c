/* lower.c: a kernel plan (plan.h) as an LLVM function (lower.h): the
 * point evaluation and the body both schedules share (the row ops' phases
 * are in lower_rows.c, each op's scalar math in lower_ops.c).
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

LLVMValueRef cg_operand(cg_emitter *e, const raf_stmt *s, int i, cg_map m) {
  const raf_value *u = s->operands[i].value;
  return cg_eval(e, u, cg_map_operand(u->type, s->results[0]->type, m));
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
    r = cg_round(e, dt, cg_row_full(e, s, m));
  } else {
    raf_dtype odt = s->noperands ? s->operands[0].value->type->dtype : dt;
    switch (s->op) {
    case RAF_OP_STOP_GRADIENT:
    case RAF_OP_BROADCAST_TO:
      r = cg_operand(e, s, 0, m);
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
      r = cg_convert(e, cg_operand(e, s, 0, m), odt, dt);
      break;
    case RAF_OP_WHERE:
      r = LLVMBuildSelect(e->B, cg_operand(e, s, 0, m), cg_operand(e, s, 1, m),
                          cg_operand(e, s, 2, m), "");
      break;
    case RAF_OP_MSE_LOSS: { /* reduction none: (a - b) * (a - b) */
      LLVMValueRef d = LLVMBuildFSub(e->B, cg_operand(e, s, 0, m),
                                     cg_operand(e, s, 1, m), "");
      r = cg_round(e, dt, LLVMBuildFMul(e->B, d, d, ""));
      break;
    }
    default: /* a formula of lang/scalar.def */
      r = cg_elementwise(e, s, odt, dt, cg_operand(e, s, 0, m),
                         s->noperands > 1 ? cg_operand(e, s, 1, m) : NULL);
      break;
    }
  }
  cg_memo_put(e, v, m, r);
  return r;
}

/* if (cond) { ... }: open returns the block after (NULL when cond is NULL:
 * no guard); what is computed inside dominates nothing after. */
LLVMBasicBlockRef cg_guard_open(cg_emitter *e, LLVMValueRef cond,
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

void cg_guard_close(cg_emitter *e, LLVMBasicBlockRef next, int mark) {
  if (!next)
    return;
  e->nmemo = mark;
  LLVMBuildBr(e->B, next);
  LLVMPositionBuilderAtEnd(e->B, next);
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
      e->aux[k].count = cg_count_labels(e, p->rowops[k]);
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
    cg_row_phase(e, k);
  int own;
  LLVMBasicBlockRef next = cg_guard_open(e, e->owner, &own);
  for (int i = 0; i < p->nout; i++)
    if (p->out[i].cls == CG_OUT_ROW)
      cg_store_output(e, i);
  cg_guard_close(e, next, own);
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
