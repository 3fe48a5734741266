/* memplan.h: a function's memory plan, as the IR carries it.
 *
 * The plan-memory pass (passes/plan_memory.c) writes the plan as
 * attributes; the verifier checks it; the executor (runtime/exec.c) runs
 * it; raf-opt --stats reports it. The attributes (docs/LangRef.md,
 * docs/Memory.md):
 *   func       {arena = BYTES}      the function is planned: each call gets
 *                                   one block of BYTES for its values
 *   statement  {offsets = [..]}     per result, its byte offset in the
 *                                   arena, or -1: not in the arena (a
 *                                   returned value, in the buffer its
 *                                   caller gives; a value in a donated
 *                                   argument's buffer)
 *   statement  {inplace = [..]}     per result, the operand whose buffer it
 *                                   overwrites (that operand's last use),
 *                                   or -1
 *   statement  {scratch = OFFSET}   the byte offset in the arena of the
 *                                   scratch its kernel uses
 *                                   (raf_mem_scratch_of), alive during
 *                                   the statement only
 *   result     {donated}            the result (an {updates = %a} one) is
 *                                   computed directly in %a's buffer
 * Positions: a function's statements before its return are numbered from
 * 0 in order; the return is position nstmts. A value lives from its
 * definition to its last reader, inclusive; values read by the return live
 * to nstmts.
 */
#ifndef RAF_MEMPLAN_H
#define RAF_MEMPLAN_H

#include "ir/ir.h"

#define RAF_MEM_ALIGN 64
/* A statement's scratch is placed at this alignment: cuBLASLt's workspace
 * (the start of a cublas statement's scratch) must be 256-byte aligned,
 * and cuMemAlloc's arenas are at least that, so arena + offset is too. */
#define RAF_MEM_SCRATCH_ALIGN 256

/* Where a value lives during a call of its function. */
typedef enum raf_mem_kind {
  RAF_MEM_ARG,    /* an argument: the caller's buffer */
  RAF_MEM_ARENA,  /* [offset, offset + size) of the call's arena (also a
                   * returned value with an offset: see docs/Memory.md) */
  RAF_MEM_RESULT, /* the buffer of result `index`, which the caller gives */
  RAF_MEM_DONATED /* the buffer of argument `index` */
} raf_mem_kind;

typedef struct raf_mem_value {
  raf_value *value;
  raf_mem_kind kind;
  int index;      /* RESULT: result position; ARG, DONATED: argument */
  int64_t offset; /* ARENA */
  int64_t bytes;  /* numel * element size */
  int def;        /* position of the definition; -1 for an argument */
  int last;       /* the last position that reads it; def when none does
                   * (-1 for an argument nothing reads) */
  int returned;   /* the first result position that returns it, or -1 */
  int nreturned;  /* how many result positions return it */
  int inplace;    /* the operand of its statement it overwrites, or -1 */
  bool staged;    /* DONATED: made at `offset` of the arena, moved into
                   * the argument's buffer after its statement */
} raf_mem_value;

/* A function's values, their lifetimes and (when planned) their places.
 * Value ids: the arguments, then every statement's results in order. */
typedef struct raf_mem_plan {
  raf_func *f;
  bool planned; /* f has {arena}; the places below are the plan's */
  /* f's module carries dispatch marks (raf_mem_dispatched): its calls are
   * compiled as their marks say, not as raf_mem_call_compiled_estimate
   * guesses. */
  bool dispatched;
  int64_t arena;
  int nstmts;      /* statements before the return */
  raf_stmt **stmt; /* by position */
  int *first;      /* per position: the id of its first result */
  int nvalues;
  raf_mem_value *v; /* by id */
  /* Per position: the offset of its scratch in the arena, or -1 (none
   * planned). */
  int64_t *scratch;
} raf_mem_plan;

/* The lifetimes of f's values (every value ARG, RESULT when returned, else
 * ARENA at offset 0; inplace -1); renumbers f's statements. f must have
 * its return. RAF_ERROR only when out of memory. Free with raf_mem_free. */
raf_status raf_mem_analyze(raf_func *f, raf_mem_plan *p);
/* The analysis plus f's plan read from its attributes and checked: every
 * statement has offsets, each arena value lies inside the arena at an
 * aligned offset, no two arena values live at once overlap (but a value
 * and the operand it overwrites), every inplace is allowed (below) and
 * every donation sound. Each violation is reported to ctx (when not
 * NULL) at the statement; RAF_ERROR then. A function without {arena} is
 * read as unplanned (planned false) and only checked for stray plan
 * attributes. */
raf_status raf_mem_read(raf_ctx *ctx, raf_func *f, raf_mem_plan *p);
void raf_mem_free(raf_mem_plan *p);
/* The id of v, a value of p's function. */
int raf_mem_id(const raf_mem_plan *p, const raf_value *v);
/* v's type's size in bytes, and rounded up to RAF_MEM_ALIGN. */
int64_t raf_mem_bytes(const raf_type *t);
int64_t raf_mem_aligned(int64_t bytes);

/* Whether s's result 0 may overwrite operand i's buffer: s is one of the
 * cpu-ref elementwise ops whose kernel reads each element of the operand
 * before it writes the same element of the result, and nothing else of it
 * (unary, binary, comparison, where), or a copy (reshape, stop_gradient,
 * which in place cost nothing); the operand has the result's size (and,
 * but for the copies, its type); s has no dialect other than cpu-ref. A
 * row op (inplace ROWS: cross_entropy_grad over its logits) may run in
 * place on cpu-ref or cblas, whose kernels read a row before writing it. */
bool raf_mem_op_inplace(const raf_stmt *s, int operand);
/* Whether a call of callee may give result `result` the buffer of argument
 * `arg` and still compute what it would with separate buffers, when it
 * runs statement by statement: callee is {fused}, calls nothing, the
 * argument has the result's type and is not returned; the result is
 * returned once and made by a statement; every read of the argument comes
 * at or before that statement, which reads it (if at all) as
 * raf_mem_op_inplace allows. */
bool raf_mem_call_inplace(const raf_func *callee, int arg, int result);
/* Whether a kernel compiled from callee (the llvm dialect) may write result
 * `result` over argument `arg`: raf_mem_call_inplace holds, and callee is
 * elementwise through and through: every statement a constant, a cast or
 * an elementwise op (raf_mem_op_inplace's), every argument and value of a
 * shape that broadcasts to the argument's (so that is the kernel's
 * iteration space) or read only by reshapes into the argument's shape
 * (which read element i at point i: the sharded step's gradient, a flat
 * slice of its bucket), and every value computed from the argument of its
 * shape. Each point of such a kernel then reads the argument and writes
 * the result at one index, and the lowering loads the argument there
 * before it stores anything (codegen/lower.c). */
bool raf_mem_compiled_call_inplace(const raf_func *callee, int arg,
                                   int result);
/* Whether call s runs as one compiled kernel: its {dialect} mark, the
 * dispatch pass's choice (which raf-run keeps), names a dialect whose
 * traits run the call whole. A call without a mark runs statement by
 * statement. ir/dialect.c. */
bool raf_mem_call_compiled(const raf_stmt *s);
/* The estimate for a module dispatch has not reached, which raf-run will
 * dispatch with every dialect of the device (remat's peak model, --stats
 * before dispatch): a marked call as its mark says, another one compiled
 * when some dialect's traits run it whole. plan-memory never needs it: it
 * requires dispatch (passes.def). ir/dialect.c. */
bool raf_mem_call_compiled_estimate(const raf_stmt *s);
/* Whether a statement of m carries a dispatch mark ({dialect}). */
bool raf_mem_dispatched(const raf_module *m);
/* Whether a call statement of f's module names f. */
bool raf_mem_is_called(const raf_func *f);

/* ---- Scratch ---------------------------------------------------------------
 *
 * Device memory a library kernel uses beside its operands and results. The
 * plan places it in the arena for its statement's position alone, so
 * that the plan's peak is the device's; the executor hands it to the
 * kernel (raf_kernel.scratch). A statement without a planned scratch (a
 * plan made before dispatch chose its dialect, or no plan) gets the
 * dialect's own. */

/* A statement's scratch: its size and where its parts start, in bytes
 * from its start (each 64-aligned; -1 for a part it has not). What a
 * library keeps at the start (cuBLASLt's workspace) is the dialect's
 * business: runtime/cuda/traits.h. */
typedef struct raf_scratch {
  int64_t bytes;     /* the whole; 0 when the kernel needs none */
  int64_t scores;    /* attention: s, BH * L * S floats */
  int64_t dscores;   /* attention's gradient: dp, BH * L * S floats */
  int64_t probs;     /* attention in bf16 or f16: p, BH * L * S elements */
} raf_scratch;

/* The scratch of s, as the traits of the dialect it is annotated with
 * say (ir/dialect.h); none when it has no dialect. ir/dialect.c. */
raf_scratch raf_mem_scratch_of(const raf_stmt *s);

/* Checks the plan of every planned function of m (the verifier's part). */
raf_status raf_mem_verify_module(raf_ctx *ctx, raf_module *m);

/* f's figures (raf_memory_stats of include/raf/raf.h; func is left NULL). */
raf_status raf_mem_stats_of(raf_func *f, raf_memory_stats *out);

#endif
