/* ir.h: the IR data structures, shared by every layer inside the library.
 *
 * A module is a list of functions; a function is a list of statements in
 * straight-line SSA form, ended by a `return` statement. Each statement has
 * an opcode from lang/ops.def, operand slots (raf_use, threaded on the used
 * value's use list), result values and attributes. Types are interned per
 * module, so two types are equal exactly when their pointers are.
 *
 * All objects live in the module's arena. Passes edit the IR with the
 * builder functions below, which keep use lists and name tables right.
 * Statements removed from a function stay in the arena until the module dies.
 */
#ifndef RAF_IR_H
#define RAF_IR_H

#include "include/raf/raf.h"
#include "ir/arena.h"
#include "ir/strmap.h"
#include "lang/lang.h"

#include <stdarg.h>

#define RAF_MAX_RANK 8

/* An interned tensor type: element type and static shape. */
struct raf_type {
  raf_dtype dtype;
  int rank;
  int64_t numel;
  const int64_t *dims; /* rank entries */
  struct raf_type *hash_next;
};

/* A named attribute as written. name points to the schema's spelling for
 * known attributes, or into the arena. */
typedef struct raf_attr {
  const char *name;
  raf_attr_kind kind;
  raf_attr_value val;
  raf_loc loc;
} raf_attr;

typedef struct raf_attrs {
  raf_attr *v;
  int n;
} raf_attrs;

/* An operand slot of a statement, on the used value's use list. */
typedef struct raf_use {
  struct raf_value *value;
  struct raf_stmt *user;
  struct raf_use *next, *prev;
  raf_loc loc; /* where the operand is written; line 0 when a pass made it */
} raf_use;

/* An SSA value: a function argument (def == NULL) or a statement result. */
struct raf_value {
  const char *name; /* without the '%' */
  raf_type *type;
  raf_stmt *def;
  raf_func *func;
  int index; /* argument or result index */
  raf_use *uses;
  raf_loc loc;
};

/* Data of a `constant` statement, in the result's element type. */
typedef struct raf_const {
  int64_t count; /* elements stored: 1 for a splat */
  bool splat;    /* one element repeated over the whole shape */
  void *data;    /* count elements of the dtype, little-endian */
} raf_const;

struct raf_stmt {
  raf_opcode op;
  int noperands, nresults;
  raf_use *operands;
  raf_value **results;
  raf_attrs attrs;
  raf_func *callee;   /* call: the function called */
  raf_const *cdata;   /* constant: its data */
  raf_loc loc;
  raf_stmt *prev, *next;
  raf_func *func;
  int64_t order; /* position in the function; see raf_func_number */
};

typedef struct raf_arg {
  raf_value *value;
  raf_attrs attrs;
} raf_arg;

typedef struct raf_result_sig {
  raf_type *type;
  raf_attrs attrs;
} raf_result_sig;

struct raf_func {
  const char *name; /* without the '@' */
  raf_loc loc;
  int nargs, nresults;
  raf_arg *args;
  raf_result_sig *results;
  raf_attrs attrs;
  raf_stmt *first, *last;
  raf_strmap names; /* value name -> raf_value* */
  uint64_t fresh;   /* counter for fresh value names */
  raf_func *prev, *next;
  raf_module *module;
};

struct raf_module {
  raf_ctx *ctx;
  raf_arena arena;
  raf_func *first, *last;
  raf_strmap funcs; /* function name -> raf_func* */
  raf_type **type_table;
  size_t type_buckets, type_count;
  int64_t order_clock; /* the next statement order; only grows */
};

/* ---- The op table (ir/optable.c, expanded from lang/ops.def) ------------- */

#define RAF_VARIADIC (-1)

typedef struct raf_infer raf_infer;
typedef raf_status (*raf_infer_fn)(raf_infer *in);

typedef struct raf_op_info {
  const char *name;
  int noperands, nresults; /* or RAF_VARIADIC */
  const raf_attr_spec *attrs;
  int nattrs;
  raf_infer_fn infer;
  unsigned dtypes;    /* RAF_DTYPES_* mask for the data operands */
  unsigned diff_mask; /* differentiable operands */
  raf_fusion_class fusion;
  raf_amp_class amp;
  int cost;
  raf_inplace_class inplace;
} raf_op_info;

extern const raf_op_info raf_op_table[RAF_OP_COUNT];
/* Finds an op by spelling; returns false when none has it. */
bool raf_op_lookup(const char *name, size_t len, raf_opcode *out);

/* Whether dialect d implements op for a first operand of dtype dt (the
 * result's dtype for ops without operands). call and return belong to no
 * dialect: the executor runs them. */
bool raf_dialect_implements(raf_dialect d, raf_opcode op, raf_dtype dt);
/* Whether dialect d compiles op, for a first operand of dtype dt, inside a
 * fused function (the FUSED rows of lang/dialects.def). */
bool raf_dialect_fuses(raf_dialect d, raf_opcode op, raf_dtype dt);
/* Whether d has FUSED rows: it implements calls of fused functions. */
bool raf_dialect_compiles_fused(raf_dialect d);
/* Whether d implements a call of callee as one kernel: the runs_call
 * question of d's traits (ir/dialect.h). */
bool raf_dialect_implements_call(raf_dialect d, const raf_func *callee);
/* The dialect of s's annotation {dialect = "D"} (the dispatch pass's,
 * resolved when parsed), or RAF_DIALECT_COUNT when it has none. */
raf_dialect raf_stmt_dialect(const raf_stmt *s);
/* The name of that dialect, or NULL. */
const char *raf_stmt_dialect_name(const raf_stmt *s);
/* Whether s carries the annotation for dialect d. */
bool raf_stmt_bound_to(const raf_stmt *s, raf_dialect d);
/* The dtype that decides which dialects implement s: its first operand's,
 * or its first result's when it has no operands. */
raf_dtype raf_stmt_key_dtype(const raf_stmt *s);

/* Schemas of attributes that are not an op's (lang/attrs.def). */
typedef enum raf_entity {
  RAF_ENTITY_ARG,
  RAF_ENTITY_RESULT,
  RAF_ENTITY_FUNC,
  RAF_ENTITY_STMT
} raf_entity;
const raf_attr_spec *raf_entity_attrs(raf_entity e, int *count);

/* ---- Type inference (ir/infer.c, ir/infer_nn.c) -------------------------- */

/* What a shape function sees: the statement (for attributes and callee),
 * its operand types, and room for the result types it must fill. On failure
 * it writes a message (without the op name) with raf_infer_fail, and may
 * name what is at fault, where the error is then reported. */
struct raf_infer {
  raf_module *m;
  const raf_stmt *stmt;
  int noperands;
  raf_type **operands;
  int nresults;
  raf_type **results;
  char message[512];
  int fault_operand;      /* the operand at fault, or -1 */
  const char *fault_attr; /* the attribute at fault, or NULL */
};

raf_status raf_infer_fail(raf_infer *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Infers stmt's result types from its operands into types[]; on error reports
 * a located diagnostic "OP: message" and returns RAF_ERROR. */
raf_status raf_infer_stmt(raf_module *m, const raf_stmt *stmt,
                          raf_type **types, int ntypes);

/* The verifier's checks of a statement's attributes (known, given once, of
 * the schema's kind and choices, required ones present), each reported at
 * the attribute; false when one failed. The parser runs them before it
 * infers a type the text leaves out, so that an attribute error reads the
 * same whether or not the type is stated. */
bool raf_verify_stmt_attrs(raf_ctx *ctx, raf_module *m, const raf_stmt *s);
/* For a module whose parse-time inference failed: reports the verifier's
 * other errors, leaving out the statements the parser could not type and
 * the uses of their results (already reported), so that one run reports
 * every error. */
void raf_verify_unreported(raf_ctx *ctx, raf_module *m);

/* ---- Types --------------------------------------------------------------- */

/* The interned type; NULL only when out of memory. */
raf_type *raf_type_get(raf_module *m, raf_dtype dt, int rank,
                       const int64_t *dims);
raf_type *raf_type_with_dtype(raf_module *m, const raf_type *t, raf_dtype dt);
/* Whether a and b have the same dims, and the same dims and dtype: for
 * types of two modules, which are not the same pointers even then. */
bool raf_type_same_shape(const raf_type *a, const raf_type *b);
bool raf_type_equal(const raf_type *a, const raf_type *b);
/* Python's range(dim)[b:e:step] (step != 0), as slice and slice_grad
 * take it: negative indices count from the end, then clamp into the range
 * the step can reach. Returns its length; *start gets its first index
 * (in [0, dim) whenever the length is positive). */
int64_t raf_slice_range(int64_t dim, int64_t b, int64_t e, int64_t step,
                        int64_t *start);
/* Writes "f32[2,3]" into buf (NUL-terminated, truncated to size). */
void raf_type_str(const raf_type *t, char *buf, size_t size);

/* ---- Attributes ---------------------------------------------------------- */

/* The attribute named name, or NULL. */
const raf_attr *raf_attrs_find(const raf_attrs *a, const char *name);
/* The spec of name in a schema, or NULL. */
const raf_attr_spec *raf_spec_find(const raf_attr_spec *s, int n,
                                   const char *name);
/* Value of a statement's op attribute: the one written, else the schema
 * default. Returns false when it is absent and has no default. */
bool raf_stmt_attr(const raf_stmt *s, const char *name, raf_attr_value *out);
int64_t raf_stmt_attr_int(const raf_stmt *s, const char *name);
double raf_stmt_attr_float(const raf_stmt *s, const char *name);
bool raf_stmt_attr_bool(const raf_stmt *s, const char *name);
const char *raf_stmt_attr_str(const raf_stmt *s, const char *name);
bool raf_attr_value_equal(raf_attr_kind k, const raf_attr_value *a,
                          const raf_attr_value *b);
/* Whether op has the `async` attribute (lang/ops.def): the collectives
 * that may only start, a `wait` ending them. */
bool raf_op_can_be_async(raf_opcode op);
/* Whether s is a collective that only starts (`async`), whose result a
 * `wait` makes ready; false for NULL. */
bool raf_stmt_is_async(const raf_stmt *s);
/* The wait of async collective s, or NULL. */
raf_stmt *raf_stmt_async_wait(const raf_stmt *s);
bool raf_arg_flag(const raf_arg *a, const char *name);
/* The argument that result i of f updates ({updates = %a}), or NULL. */
const raf_arg *raf_result_updates(const raf_func *f, int i);
/* Whether f is a training step: a result updates a {param} argument. (A
 * forward model in training mode updates only {state}: batch_norm's
 * running statistics.) */
bool raf_func_updates_params(const raf_func *f);
/* The forward of f, where f has a loss: a {param} argument and a first
 * result that is a scalar float made by a statement of f (a loss, its
 * gradient function @f_grad, a training step). The forward is the
 * statement that makes the returned loss and, transitively, those that make
 * its operands; every other statement but the return is the backward
 * (autodiff's seed and gradient rules, an optimizer's update). The order
 * of the statements does not matter (a sharded step's loss, averaged over
 * the ranks after the backward, has the same forward). Sets *fwd to an
 * array with one flag per statement before the return, in order (true:
 * forward), and *n to their number, renumbering f's statements; *fwd is
 * NULL when f has no loss. The caller frees *fwd. RAF_ERROR only when out
 * of memory. */
raf_status raf_func_forward(raf_func *f, bool **fwd, int *n);
/* Whether s is one of the '|'-separated choices of an enumerated string
 * attribute ("mean|sum|none"). */
bool raf_choices_include(const char *choices, const char *s);

/* An argument's `init` attribute: "zeros", "ones", "normal(MEAN, STD)"
 * (STD >= 0), "uniform(LOW, HIGH)" (LOW <= HIGH) or "constant(V)", with
 * finite numbers. */
typedef enum raf_init_kind {
  RAF_INIT_ZEROS,
  RAF_INIT_ONES,
  RAF_INIT_NORMAL,
  RAF_INIT_UNIFORM,
  RAF_INIT_CONSTANT /* "constant(V)": every element V (nn.init.constant_) */
} raf_init_kind;
typedef struct raf_init_spec {
  raf_init_kind kind;
  double a, b; /* mean and std, or low and high, or the constant in a */
} raf_init_spec;
/* Parses s into *out (which may be NULL); false when s is not valid. */
bool raf_init_parse(const char *s, raf_init_spec *out);

/* ---- Building and editing ------------------------------------------------ */

raf_module *raf_module_create(raf_ctx *ctx);
/* A new function, appended to the module; NULL if the name is taken. */
raf_func *raf_func_create(raf_module *m, const char *name, raf_loc loc);
raf_func *raf_module_find_func(const raf_module *m, const char *name);
/* Adds an argument; name NULL picks a fresh name. */
raf_value *raf_func_add_arg(raf_func *f, const char *name, raf_type *t,
                            raf_loc loc);
void raf_func_set_results(raf_func *f, int n, raf_type *const *types);
/* A value name unused in f, built from hint ("x" -> "x", "x.1", ...; NULL
 * gives "0", "1", ...). Owned by the module. */
const char *raf_func_fresh_name(raf_func *f, const char *hint);
/* A fresh name for a value made from one named `name`: the name without its
 * fresh suffix ".N" as the hint, so rewriting "c.1" gives "c.2", not
 * "c.1.1"; plain numbers for numbered values. Owned by the module. */
const char *raf_func_derived_name(raf_func *f, const char *name);
/* Names a value, registering it in its function. Fails on a duplicate. */
raf_status raf_value_set_name(raf_value *v, const char *name);

/* A new statement, not yet in a function. Results get fresh names when the
 * statement is inserted. operands may be NULL when noperands is 0. */
raf_stmt *raf_stmt_create(raf_module *m, raf_opcode op, int noperands,
                          raf_value *const *operands, int nresults,
                          raf_type *const *result_types, raf_loc loc);
/* Gives s a copy (in m's arena) of attrs[0..n-1], in place of its own. */
void raf_stmt_set_attrs(raf_module *m, raf_stmt *s, const raf_attr *attrs,
                        int n);
/* Sets one attribute of s: replaces the one of the same name (keeping its
 * location) or appends it; the others stay as they are. a->name must live
 * as long as m (a schema's spelling, a literal, or m's arena); a's value is
 * used as it is (the attribute makers of passes/emit.h copy lists into the
 * arena). RAF_ERROR, with s unchanged, when memory runs out. */
raf_status raf_stmt_set_attr(raf_module *m, raf_stmt *s, const raf_attr *a);
/* The same for any attribute list (a function's, an argument's, a
 * result's); a new attribute takes a's location, else loc. */
raf_status raf_attrs_set(raf_module *m, raf_attrs *attrs, const raf_attr *a,
                         raf_loc loc);
/* raf_stmt_set_attr of the integer list `name = [v[0], ..., v[n-1]]`, the
 * list copied into m's arena. */
raf_status raf_stmt_set_attr_ints(raf_module *m, raf_stmt *s, const char *name,
                                  const int64_t *v, int n);
/* Linking: before == NULL appends at the end. */
void raf_stmt_insert_before(raf_func *f, raf_stmt *s, raf_stmt *before);
/* Moves s, a statement of f, to just before `before` (NULL: the end),
 * keeping its operands, results and uses. */
void raf_stmt_move_before(raf_stmt *s, raf_stmt *before);
/* Unlinks s from its function and drops its operand uses. Its results must
 * be unused. */
void raf_stmt_erase(raf_stmt *s);
void raf_use_set(raf_use *u, raf_value *v);
/* Points every use of from at to. */
void raf_value_replace_uses(raf_value *from, raf_value *to);
bool raf_value_has_uses(const raf_value *v);
/* Removes f from its module, with the other functions' attributes that
 * name it (a training step's {step_of}); calls of it must be gone. */
void raf_func_erase(raf_func *f);
/* Moves g to just before `before` in m's list of functions (a function a
 * pass makes for a caller goes before it, as the printer then shows). */
void raf_func_move_before(raf_module *m, raf_func *g, raf_func *before);
/* Renumbers f's statements in list order, for dominance queries: a
 * statement dominates another of f when its order is smaller. Orders only
 * grow across calls, so stale orders are always older than fresh ones. */
void raf_func_number(raf_func *f);
/* The return statement of f, or NULL. */
raf_stmt *raf_func_return(const raf_func *f);

/* Calls visit on every attribute list of the module: each function's, its
 * arguments', its results' and its statements'. */
void raf_module_visit_attrs(raf_module *m,
                            void (*visit)(raf_attrs *attrs, void *data),
                            void *data);

/* Copies of raw data into the module arena. */
char *raf_module_strdup(raf_module *m, const char *s);

/* ---- Diagnostics inside the library -------------------------------------- */

void raf_diag_vreport(raf_ctx *ctx, raf_loc loc, raf_severity sev,
                      const char *fmt, va_list ap);
/* Registers a copy of text so diagnostics can show its lines; returns the
 * interned name. When copy_out is not NULL it receives the copy (owned by
 * the context, followed by two NUL bytes), or NULL when out of memory. */
const char *raf_ctx_add_source(raf_ctx *ctx, const char *name,
                               const char *text, size_t len,
                               uint32_t first_line, char **copy_out);
/* An interned copy of a file name, owned by the context. */
const char *raf_ctx_intern(raf_ctx *ctx, const char *name);
const char *raf_ctx_intern_span(raf_ctx *ctx, const char *name, size_t len);

/* Element conversions used by constants. */
float raf_half_to_float(uint16_t h);
uint16_t raf_float_to_half(float f);
float raf_bf16_to_float(uint16_t h);
uint16_t raf_float_to_bf16(float f);
/* Element i of constant data as a double (integers converted). */
double raf_const_get_f64(raf_dtype dt, const raf_const *c, int64_t i);
int64_t raf_const_get_i64(raf_dtype dt, const raf_const *c, int64_t i);

#endif
