/* lower_host.c: the host schedule of a kernel plan (lower.h): the entry
 * points of the host kernel ABI (codegen.h) around lower.c's body over a
 * range of rows, and the column tiles of kernels whose rows are columns
 * (cg_plan_tile).
 *
 * A kernel whose rows are columns walks whole tiles of CG_TILE rows first
 * (cg_emit_tiles): the inner dims' loops outside, the tile's rows inside
 * with an accumulator each, the full results that read no row op in that
 * pass, then the rows' results, then the full results that read them; the
 * rows left over take the body's loop. Its float sums add in order
 * (strict_sums), so every row gets cpu-ref's bits.
 */
#include "codegen/lower.h"

#include <stdlib.h>
#include <string.h>

/* ---- Column tiles (cg_plan_tile) ------------------------------------------ */

/* Whether v's value depends on a row op's result: the statements of the
 * function in order, each marked when it is a row op or reads a marked
 * value. */
static bool reads_rowop(const raf_func *f, const raf_value *v) {
  const raf_value *stack[64], **marked = stack;
  int n = 0, cap = 64;
  bool found = false;
  for (const raf_stmt *s = f->first; s && !found; s = s->next) {
    bool mark = cg_is_rowop(s);
    for (int i = 0; !mark && i < s->noperands; i++)
      for (int j = 0; !mark && j < n; j++)
        mark = marked[j] == s->operands[i].value;
    if (!mark)
      continue;
    for (int r = 0; r < s->nresults; r++) {
      found |= s->results[r] == v;
      if (n == cap) {
        const raf_value **m = malloc(sizeof *m * (size_t)cap * 2);
        if (!m)
          break; /* treated as read: the second pass stores it */
        memcpy(m, marked, sizeof *m * (size_t)n);
        if (marked != stack)
          free(marked);
        marked = m;
        cap *= 2;
      }
      marked[n++] = s->results[r];
    }
  }
  if (marked != stack)
    free(marked);
  return found;
}

/* An element of a [CG_TILE x t] array. */
static LLVMValueRef lane_ptr(cg_emitter *e, LLVMValueRef arr, LLVMTypeRef t,
                             LLVMValueRef lane) {
  LLVMValueRef at[2] = {cg_i64(e, 0), lane};
  return LLVMBuildInBoundsGEP2(e->B, LLVMArrayType2(t, CG_TILE), arr, at, 2,
                               "");
}

/* Opens the loop over the tile's rows r0 + lane: leaves the builder in its
 * body with the outer index set. */
static LLVMValueRef lane_open(cg_emitter *e, cg_loop *L, LLVMValueRef r0) {
  LLVMValueRef lane = cg_loop_open(e, L, cg_i64(e, 0), cg_i64(e, CG_TILE),
                                cg_i64(e, 1));
  e->idx[0] = e->row = LLVMBuildNSWAdd(e->B, r0, lane, "");
  return lane;
}

/* The row ops' results of lane `lane` from the accumulators, remembered
 * for the reads that follow. */
static void lane_results(cg_emitter *e, LLVMValueRef *acc, LLVMTypeRef *t,
                         LLVMValueRef lane) {
  const cg_plan *p = e->p;
  for (int k = 0; k < p->nrowops; k++) {
    const raf_stmt *s = p->rowops[k];
    LLVMValueRef a = LLVMBuildLoad2(e->B, t[k], lane_ptr(e, acc[k], t[k], lane),
                                    "");
    cg_map m;
    cg_map_row(p, s->results[0]->type, &m);
    cg_memo_put(e, s->results[0], m, cg_reduce_finish(e, s, a));
  }
}

/* Rows [from, to), a whole number of tiles: for each tile, the reduced
 * dims' loops outside and the tile's rows inside, accumulating each row
 * in its lane and storing the full results that need no row op's result;
 * then the rows' results, and the full results that read them. */
void cg_emit_tiles(cg_emitter *e, LLVMValueRef from, LLVMValueRef to) {
  const cg_plan *p = e->p;
  int n = p->nrowops;
  LLVMValueRef acc[CG_MAX_BUFS];
  LLVMTypeRef t[CG_MAX_BUFS];
  bool later[CG_MAX_BUFS], any_later = false;
  if (n > CG_MAX_BUFS || p->nout > CG_MAX_BUFS) {
    cg_fail(e, "internal: too many row ops for a tile");
    return;
  }
  for (int i = 0; i < p->nout; i++) {
    cg_out_class c = p->out[i].cls;
    later[i] = (c == CG_OUT_FULL || c == CG_OUT_PART) &&
               reads_rowop(p->f, p->out[i].value);
    any_later |= later[i];
  }
  LLVMValueRef init[CG_MAX_BUFS];
  for (int k = 0; k < n; k++) {
    init[k] = cg_reduce_init(e, p->rowops[k], &t[k]);
    acc[k] = LLVMBuildAlloca(e->A, LLVMArrayType2(t[k], CG_TILE), "tile");
  }
  cg_loop tiles, L;
  LLVMValueRef r0 = cg_loop_open(e, &tiles, from, to, cg_i64(e, CG_TILE));
  int mark = e->nmemo;
  LLVMValueRef lane = lane_open(e, &L, r0);
  for (int k = 0; k < n; k++)
    LLVMBuildStore(e->B, init[k], lane_ptr(e, acc[k], t[k], lane));
  cg_loop_close(e, &L);
  /* Pass 1: accumulate; store what reads no row op's result. */
  cg_nest N;
  cg_nest_open(e, &N);
  lane = lane_open(e, &L, r0);
  int inner = e->nmemo;
  for (int k = 0; k < n; k++) {
    const raf_stmt *s = p->rowops[k];
    const raf_value *x = s->operands[0].value;
    LLVMValueRef ptr = lane_ptr(e, acc[k], t[k], lane);
    LLVMValueRef v = cg_eval(e, x, cg_map_identity(p, x->type));
    LLVMBuildStore(
        e->B, cg_reduce_step(e, s, LLVMBuildLoad2(e->B, t[k], ptr, ""), v), ptr);
  }
  for (int i = 0; i < p->nout; i++)
    if (p->out[i].cls == CG_OUT_FULL && !later[i])
      cg_store_output(e, i);
  for (int i = 0; i < p->nout; i++)
    if (p->out[i].cls == CG_OUT_PART && !later[i])
      cg_store_part(e, i);
  e->nmemo = inner;
  cg_loop_close(e, &L);
  e->idx[0] = NULL;
  cg_nest_close(e, &N);
  /* The rows' results. */
  lane = lane_open(e, &L, r0);
  lane_results(e, acc, t, lane);
  for (int i = 0; i < p->nout; i++)
    if (p->out[i].cls == CG_OUT_ROW)
      cg_store_output(e, i);
  e->nmemo = mark;
  cg_loop_close(e, &L);
  /* Pass 2: the full results that read them. */
  if (any_later) {
    cg_nest_open(e, &N);
    lane = lane_open(e, &L, r0);
    inner = e->nmemo;
    lane_results(e, acc, t, lane);
    for (int i = 0; i < p->nout; i++)
      if (p->out[i].cls == CG_OUT_FULL && later[i])
        cg_store_output(e, i);
    for (int i = 0; i < p->nout; i++)
      if (p->out[i].cls == CG_OUT_PART && later[i])
        cg_store_part(e, i);
    e->nmemo = inner;
    cg_loop_close(e, &L);
    e->idx[0] = NULL;
    cg_nest_close(e, &N);
  }
  e->nmemo = mark;
  e->idx[0] = NULL;
  e->row = NULL;
  cg_loop_close(e, &tiles);
}

/* A host entry point `void name(void *const *bufs[, i64, i64])` that loads
 * the buffers from the array and calls body (which the optimizer inlines,
 * keeping the parameters' noalias as scopes). */
static LLVMValueRef host_entry(cg_emitter *e, const char *name,
                               LLVMValueRef body, int nbufs, int tail) {
  LLVMTypeRef params[3] = {e->ptr, e->i64, e->i64};
  LLVMValueRef f = LLVMAddFunction(
      e->M, name,
      LLVMFunctionType(e->void_, params, (unsigned)tail + 1, false));
  cg_add_attr(e, f, LLVMAttributeFunctionIndex, "nounwind");
  LLVMPositionBuilderAtEnd(e->B,
                           LLVMAppendBasicBlockInContext(e->C, f, "entry"));
  LLVMValueRef args[CG_MAX_BUFS + 2];
  for (int i = 0; i < nbufs; i++) {
    LLVMValueRef at = LLVMBuildInBoundsGEP2(e->B, e->ptr, LLVMGetParam(f, 0),
                                            (LLVMValueRef[]){cg_i64(e, i)}, 1,
                                            "");
    args[i] = LLVMBuildLoad2(e->B, e->ptr, at, "");
  }
  for (int i = 0; i < tail; i++)
    args[nbufs + i] = LLVMGetParam(f, (unsigned)i + 1);
  LLVMBuildCall2(e->B, LLVMGlobalGetValueType(body), body, args,
                 (unsigned)(nbufs + tail), "");
  LLVMBuildRetVoid(e->B);
  return f;
}

LLVMValueRef cg_lower_host(cg_emitter *e, const char *name,
                           const char *final_name, int nbufs) {
  LLVMValueRef kernel;
  LLVMValueRef body = cg_body_fn(e, name, nbufs, 2);
  LLVMValueRef begin = LLVMGetParam(body, (unsigned)nbufs);
  cg_emit_body(e, LLVMBuildICmp(e->B, LLVMIntEQ, begin, cg_i64(e, 0), ""),
            begin, LLVMGetParam(body, (unsigned)nbufs + 1), cg_i64(e, 1));
  LLVMBuildRetVoid(e->B);
  kernel = host_entry(e, name, body, nbufs, 2);
  if (e->p->ntotals) {
    body = cg_body_fn(e, final_name, nbufs, 0);
    cg_emit_final(e);
    LLVMBuildRetVoid(e->B);
    host_entry(e, final_name, body, nbufs, 0);
  }
  return kernel;
}
