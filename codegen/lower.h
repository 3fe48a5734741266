/* lower.h: the lowering of a kernel plan to LLVM IR (codegen/ internal).
 *
 * Three parts:
 *   - point evaluation, shared by both targets: lower_ops.c, each
 *     elementwise op's scalar math expanded from lang/scalar.def and the
 *     loads, stores and conversions of every dtype; lower.c's evaluation
 *     of values at a point and the body; lower_rows.c's row phases of the
 *     row ops (their finishing formulas included) and the final step;
 *   - the host schedule (lower.c): rows of the parallel range walked by
 *     loops, column tiles, the final step;
 *   - the NVPTX schedule (lower_nvptx.c, launch geometry in schedule.c):
 *     threads over flat elements, warps or blocks or column tiles over
 *     rows, with shfl.sync and shared-memory reductions, and a second
 *     kernel for totals. Numerics follow the cpu-ref dialect statement by statement
 * (runtime/cpuref/), so a fused function computes what its statements
 * would: floats compute in double for f64 and in float for f32, f16 and
 * bf16, rounding every result of an f16 or bf16 statement to its dtype;
 * integers compute at their width (wrapping, as cpu-ref's int64 wrapped to
 * the width does); float accumulations of row ops run in double. The only
 * difference is the order of those double accumulations, which the loop
 * vectorizer may reassociate. On NVPTX the rows of f32, f16 and bf16 inputs
 * accumulate and finish in float instead (lower_rows.c's acc_type, the row's
 * type per target; docs/Codegen.md#numerics-on-the-gpu).
 */
#ifndef RAF_CODEGEN_LOWER_H
#define RAF_CODEGEN_LOWER_H

#include "codegen/plan.h"

#include <llvm-c/Core.h>

typedef enum cg_target_kind { CG_HOST, CG_NVPTX } cg_target_kind;

/* How the lowering targets: the kind, and on the host the x86 vector ABI
 * ISA of glibc's libmvec to vectorize the math library with ('d': AVX2,
 * 'e': AVX-512), or 0 for scalar libm calls (bit-identical to cpu-ref). */
typedef struct cg_options {
  cg_target_kind target;
  char vec_isa;
  /* NULL, or per result the argument whose buffer it overwrites (-1: its
   * own): the kernel then takes the two as one buffer (cg_lower). */
  const int *inplace;
} cg_options;

typedef struct cg_memo {
  const raf_value *v;
  cg_map map;
  LLVMValueRef val;
} cg_memo;

/* What a row op computed for its row, read by its full results. */
typedef struct cg_aux {
  LLVMValueRef top, total, lse, mean, rstd;
  LLVMValueRef label, ignored, scale; /* cross_entropy_grad */
  LLVMValueRef count;                 /* its counted labels, for "mean" */
} cg_aux;

typedef struct cg_emitter {
  const cg_plan *p;
  cg_target_kind target;
  char vec_isa;
  const int *inplace; /* cg_options' */
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  LLVMBuilderRef A; /* before the entry block's terminator: allocas */
  LLVMValueRef fn;
  LLVMValueRef *bufs; /* arguments, results, then the totals' scratch */
  LLVMValueRef idx[CG_MAX_FDIMS]; /* collapsed dims' indices, or NULL */
  LLVMValueRef row;               /* the row's index */
  cg_memo *memo;
  int nmemo, capmemo;
  cg_aux *aux; /* per row op */
  bool strict_sums; /* float sums add in order, never reassociated */
  const raf_stmt **consts;
  LLVMValueRef *const_globals;
  int nconsts;
  /* The NVPTX row schedule (lower_nvptx.c): `lanes` threads share a row
   * (0 on the host and in the flat layout), this thread being lane `lane`
   * (i64) of the group at slot `slot` of its block; `active` (i1) says the
   * slot has a row (else it runs the last row again, storing nothing, so
   * that a block's threads meet at each barrier), `owner` (i1) says this
   * thread stores the row's results. */
  int lanes;
  int layout; /* cg_gpu_layout */
  LLVMValueRef lane, slot, tid, active, owner;
  LLVMValueRef smem; /* the kernel's shared array of i64, or NULL */
  int smem_len;
  LLVMTypeRef i1, i8, i16, i32, i64, f16, f32, f64, ptr, void_;
  bool failed;
  char why[256];
} cg_emitter;

/* Records an internal error (the first wins); the lowering then fails. */
void cg_fail(cg_emitter *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- lower_ops.c ---------------------------------------------------------- */

/* The type values of dt compute in: double, float, iN, i1 for bool. */
LLVMTypeRef cg_compute_type(cg_emitter *e, raf_dtype dt);
/* The type of dt in memory. */
LLVMTypeRef cg_storage_type(cg_emitter *e, raf_dtype dt);
/* RAF_F64 for f64, RAF_F32 for the other floats. */
raf_dtype cg_work_dtype(raf_dtype dt);

LLVMValueRef cg_load(cg_emitter *e, LLVMValueRef base, LLVMValueRef off,
                     raf_dtype dt);
void cg_store(cg_emitter *e, LLVMValueRef base, LLVMValueRef off,
              raf_dtype dt, LLVMValueRef v);
/* v (compute type of dt) rounded to dt's precision (f16, bf16; else v). */
LLVMValueRef cg_round(cg_emitter *e, raf_dtype dt, LLVMValueRef v);
/* A number in dt's compute type. */
LLVMValueRef cg_const(cg_emitter *e, raf_dtype dt, double v);
/* Converts v from dtype `from` to `to` as cast (and raf_elem_convert) do. */
LLVMValueRef cg_convert(cg_emitter *e, LLVMValueRef v, raf_dtype from,
                        raf_dtype to);
/* A float in work dtype w (RAF_F32 or RAF_F64) widened to double, or
 * narrowed back. */
LLVMValueRef cg_to_f64(cg_emitter *e, LLVMValueRef v);
LLVMValueRef cg_from_f64(cg_emitter *e, LLVMValueRef v, raf_dtype w);

/* Calls the math library's fn ("exp", "log", "tanh", ...) in work dtype w:
 * libm on the host, libdevice (__nv_*) on NVPTX. y is for pow. With a
 * vector ISA, the host calls a wrapper raf_<fn> that computes lane 0 of
 * libmvec's vector variant (_ZGVdN8v_expf) and carries a
 * vector-function-abi-variant attribute naming that variant, so the loop
 * vectorizer calls the variant on whole vectors and the scalar remainder
 * computes the very same bits lane by lane. */
LLVMValueRef cg_math(cg_emitter *e, const char *fn, raf_dtype w,
                     LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_intrinsic(cg_emitter *e, const char *name, LLVMTypeRef type,
                          LLVMValueRef *args, int nargs);

/* Statement s of an op with a row in lang/scalar.def (not NO_FORMULA) on
 * operands a (and b: NULL for one operand) of dtype odt, the result in the
 * compute type of dt, its dtype, rounded to it. A backward operator
 * computes in double. An op or dtype with no lowering fails the emitter
 * ("no lowering of OP for DTYPE"). */
LLVMValueRef cg_elementwise(cg_emitter *e, const raf_stmt *s, raf_dtype odt,
                            raf_dtype dt, LLVMValueRef a, LLVMValueRef b);

/* NaN-propagating max and min of floats (llvm.maximum), and of integers. */
LLVMValueRef cg_max(cg_emitter *e, raf_dtype dt, LLVMValueRef x,
                    LLVMValueRef y, bool min);
/* x + y with reassociation allowed (accumulations the vectorizer splits). */
LLVMValueRef cg_fadd_reassoc(cg_emitter *e, LLVMValueRef x, LLVMValueRef y);

/* ---- lower_host.c --------------------------------------------------------- */

/* The host kernels of e->p (cg_lower's host half): the entry point, and
 * final_name with totals. */
LLVMValueRef cg_lower_host(cg_emitter *e, const char *name,
                           const char *final_name, int nbufs);
/* Rows [from, to), a whole number of column tiles (cg_plan_tile). */
void cg_emit_tiles(cg_emitter *e, LLVMValueRef from, LLVMValueRef to);

/* ---- lower_nvptx.c -------------------------------------------------------- */

typedef enum cg_combine { CG_ADD, CG_MAX, CG_MIN } cg_combine;

/* The combination of v (this lane's part of a row's reduction, of dtype dt:
 * RAF_F64 for a double accumulator) over the lanes of the row: every lane
 * gets the whole. v itself on the host and when a thread has the row. */
LLVMValueRef cg_lanes_combine(cg_emitter *e, cg_combine op, raf_dtype dt,
                              LLVMValueRef v);
/* The NVPTX kernels of e->p (cg_lower's NVPTX half): the kernel, and
 * final_name with totals. */
LLVMValueRef cg_lower_nvptx(cg_emitter *e, const char *name,
                            const char *final_name, int nbufs);

/* ---- lower.c: what the schedules share ---------------------------------- */

LLVMValueRef cg_i64(cg_emitter *e, int64_t v);
void cg_add_attr(cg_emitter *e, LLVMValueRef f, unsigned index,
                 const char *name);

/* for (iv = from; iv < to; iv += step): open leaves the builder in the
 * body and returns iv; close ends the loop. */
typedef struct cg_loop {
  LLVMBasicBlockRef header, exit;
  LLVMValueRef iv, step;
} cg_loop;
LLVMValueRef cg_loop_open(cg_emitter *e, cg_loop *L, LLVMValueRef from,
                          LLVMValueRef to, LLVMValueRef step);
void cg_loop_close(cg_emitter *e, cg_loop *L);

/* The inner dims' loops (on NVPTX, the lane's elements of the row): open
 * sets their indices, close clears them and drops what was remembered
 * inside. */
typedef struct cg_nest {
  cg_loop loops[CG_MAX_FDIMS];
  int n, memo_mark;
} cg_nest;
void cg_nest_open(cg_emitter *e, cg_nest *N);
void cg_nest_close(cg_emitter *e, cg_nest *N);

/* Point evaluation: v under map m at the current point (e->idx),
 * remembered per (value, map) in the current scope. */
LLVMValueRef cg_eval(cg_emitter *e, const raf_value *v, cg_map m);
void cg_memo_put(cg_emitter *e, const raf_value *v, cg_map m,
                 LLVMValueRef val);
/* Operand i of s at the point where s's result is under map m. */
LLVMValueRef cg_operand(cg_emitter *e, const raf_stmt *s, int i, cg_map m);
/* Stores result i at the current point (a partial result only where it
 * does not broadcast). */
void cg_store_output(cg_emitter *e, int i);
void cg_store_part(cg_emitter *e, int i);
/* sum, mean, max, min: the accumulator's type and first value, a step, and
 * the row's result from the accumulator. */
LLVMValueRef cg_reduce_init(cg_emitter *e, const raf_stmt *s,
                            LLVMTypeRef *type);
LLVMValueRef cg_reduce_step(cg_emitter *e, const raf_stmt *s,
                            LLVMValueRef acc, LLVMValueRef v);
LLVMValueRef cg_reduce_finish(cg_emitter *e, const raf_stmt *s,
                              LLVMValueRef r);

/* if (cond) { ... }: open returns the block after (NULL when cond is
 * NULL: no guard), close ends the block; what is computed inside dominates
 * nothing after. */
LLVMBasicBlockRef cg_guard_open(cg_emitter *e, LLVMValueRef cond, int *mark);
void cg_guard_close(cg_emitter *e, LLVMBasicBlockRef next, int mark);

/* ---- lower_rows.c: the row ops ------------------------------------------ */

/* Row op k's phase over the current row: its passes, and its row values
 * in e->aux[k]. */
void cg_row_phase(cg_emitter *e, int k);
/* A full result of row op s at the current point, from its row values. */
LLVMValueRef cg_row_full(cg_emitter *e, const raf_stmt *s, cg_map m);
/* The labels cross_entropy_grad s counts ("mean"), over every row. */
LLVMValueRef cg_count_labels(cg_emitter *e, const raf_stmt *s);
/* The final step of the totals (on NVPTX over e->lanes threads). */
void cg_emit_final(cg_emitter *e);

/* ---- lower.c: the body ---------------------------------------------------- */

/* Starts function `name` of nbufs noalias pointers and `tail` i64
 * parameters (on NVPTX a kernel), e->bufs its buffers (see cg_lower). */
LLVMValueRef cg_body_fn(cg_emitter *e, const char *name, int nbufs, int tail);
/* The rows [from, to) stepping by step (on NVPTX, e->slot added to each,
 * see above); `first` owns the uniform results. */
void cg_emit_body(cg_emitter *e, LLVMValueRef first, LLVMValueRef from,
                  LLVMValueRef to, LLVMValueRef step);
/* Adds the kernel of plan p to module M as function `name`:
 *   host:  void name(void *const *bufs, int64_t begin, int64_t end)
 *          (bufs: the arguments' buffers, the results', then two scratch
 *          arrays of p->rows doubles per total; rows [begin, end) of the
 *          parallel range)
 *   NVPTX: a kernel void name(ptr arg0, ..., ptr res0, ..., ptr scratch0,
 *          ...), launched as cg_gpu_schedule (plan.h) says.
 * With totals, also `name_final`, to run once after every row: host
 * void name_final(void *const *bufs), NVPTX a kernel of the same buffers
 * run by one block, which adds the rows' values up.
 * With o->inplace, a result r given an argument a computes in a's buffer:
 * the kernel reads and writes it through a's parameter (r's goes unused),
 * so LLVM sees the true dependences and still vectorizes, and at each
 * point it loads every such argument before it stores any result. Only a
 * kernel with no row ops whose result r is stored at every point, and that
 * reads a nowhere else, can (else NULL with the reason).
 * Returns the function, or NULL with the reason in why. */
LLVMValueRef cg_lower(const cg_plan *p, LLVMModuleRef M, const cg_options *o,
                      const char *name, char *why, size_t size);

#endif
