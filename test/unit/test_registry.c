/* test_registry.c: the registries of lang/ and passes/ against the code
 * that depends on them, so that a new op or pass row cannot be left out.
 *
 *   - the inplace column of lang/ops.def (memory planning, ir/memplan.c):
 *     an op that may overwrite its operand (OVER) is elementwise in the
 *     fusion column, has one result, and is one the llvm dialect compiles
 *     element by element (a FUSED row, not a row op), since a fused call of
 *     OVER statements runs in place either way; a VIEW op has one operand
 *     and one result of the same elements;
 *   - the llvm dialect's FUSED rows of lang/dialects.def against the
 *     lowering (codegen/): a fused function of one statement of every FUSED
 *     op is emitted as LLVM IR in every dtype of its row, and declined, with
 *     "no lowering of OP for DTYPE", in the dtypes the op admits but the row
 *     does not. Every FUSED op needs a sample statement below: a new row
 *     without one fails, and so does a sample of an op with no row;
 *   - lang/scalar.def against the fusion column: every elementwise op
 *     (ELEMWISE, BROADCAST) has exactly one row, a formula or NO_FORMULA,
 *     every row names such an op, and a formula row's kind has the op's
 *     operand count;
 *   - the cost column: an op that says -1 (its work is not per element) is
 *     costed from its shapes by ir/cost.c; each needs a sample below, on
 *     which the model must give a positive figure;
 *   - passes/passes.def: every pass its `after`, `before` and `requires`
 *     name is registered, the registry order keeps every constraint (the
 *     fuzzer runs it) and puts a required pass before the passes that
 *     require it, and each constraint turned round is refused;
 *   - `requires`: plan-memory on a module without dispatch marks gets
 *     dispatch run first, with a note, and the same plan as
 *     dispatch,plan-memory; on a dispatched module it gets neither.
 */
#include "codegen/codegen.h"
#include "codegen/plan.h"
#include "ir/cost.h"
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

/* ---- The inplace column --------------------------------------------------- */

static bool fuses_some_dtype(raf_opcode op) {
  for (int d = 0; d < RAF_DTYPE_COUNT; d++)
    if (raf_dialect_fuses(RAF_DIALECT_LLVM, op, (raf_dtype)d))
      return true;
  return false;
}

static void test_inplace_column(void) {
  for (int op = 0; op < RAF_OP_COUNT; op++) {
    const raf_op_info *o = &raf_op_table[op];
    if (o->inplace == RAF_INPLACE_OVER) {
      bool elementwise = o->fusion == RAF_FUSE_ELEMWISE ||
                         o->fusion == RAF_FUSE_BROADCAST;
      if (!elementwise || o->nresults != 1 || !fuses_some_dtype(op)) {
        fprintf(stderr, "%s: inplace OVER, but not an elementwise op with "
                        "one result and a FUSED(LLVM) row\n", o->name);
        failures++;
      }
    }
    if (o->inplace == RAF_INPLACE_ROWS &&
        (o->nresults != 1 || o->fusion != RAF_FUSE_REDUCE)) {
      fprintf(stderr, "%s: inplace ROWS, but not a row reduction with one "
                      "result\n", o->name);
      failures++;
    }
    /* wait is a view that fuse must never compile: OPAQUE. */
    if (o->inplace == RAF_INPLACE_VIEW &&
        (o->noperands != 1 || o->nresults != 1 ||
         o->fusion == RAF_FUSE_REDUCE ||
         (o->fusion == RAF_FUSE_OPAQUE && op != RAF_OP_WAIT))) {
      fprintf(stderr, "%s: inplace VIEW, but not one operand's elements\n",
              o->name);
      failures++;
    }
  }
}

/* ---- The FUSED rows against the lowering ---------------------------------- */

/* One statement per FUSED op, over the arguments of fused_text: T stands
 * for the dtype under test. */
typedef struct sample {
  const char *op, *stmt, *result;
} sample;

static const sample samples[] = {
    {"constant", "%r = constant 1 : T[4,8]", "T[4,8]"},
    {"neg", "%r = neg(%x)", "T[4,8]"},
    {"abs", "%r = abs(%x)", "T[4,8]"},
    {"exp", "%r = exp(%x)", "T[4,8]"},
    {"log", "%r = log(%x)", "T[4,8]"},
    {"sqrt", "%r = sqrt(%x)", "T[4,8]"},
    {"rsqrt", "%r = rsqrt(%x)", "T[4,8]"},
    {"tanh", "%r = tanh(%x)", "T[4,8]"},
    {"sigmoid", "%r = sigmoid(%x)", "T[4,8]"},
    {"relu", "%r = relu(%x)", "T[4,8]"},
    {"erf", "%r = erf(%x)", "T[4,8]"},
    {"cos", "%r = cos(%x)", "T[4,8]"},
    {"sin", "%r = sin(%x)", "T[4,8]"},
    {"gelu", "%r = gelu(%x)", "T[4,8]"},
    {"silu", "%r = silu(%x)", "T[4,8]"},
    {"add", "%r = add(%x, %v)", "T[4,8]"},
    {"sub", "%r = sub(%x, %y)", "T[4,8]"},
    {"mul", "%r = mul(%x, %y)", "T[4,8]"},
    {"div", "%r = div(%x, %y)", "T[4,8]"},
    {"pow", "%r = pow(%x, %y)", "T[4,8]"},
    {"maximum", "%r = maximum(%x, %y)", "T[4,8]"},
    {"minimum", "%r = minimum(%x, %y)", "T[4,8]"},
    {"eq", "%r = eq(%x, %y)", "bool[4,8]"},
    {"ne", "%r = ne(%x, %y)", "bool[4,8]"},
    {"lt", "%r = lt(%x, %y)", "bool[4,8]"},
    {"le", "%r = le(%x, %y)", "bool[4,8]"},
    {"gt", "%r = gt(%x, %y)", "bool[4,8]"},
    {"ge", "%r = ge(%x, %y)", "bool[4,8]"},
    {"where", "%r = where(%b, %x, %y)", "T[4,8]"},
    {"cast", "%r = cast(%x) {dtype = f32}", "f32[4,8]"},
    {"isfinite", "%r = isfinite(%x)", "bool[4,8]"},
    {"broadcast_to", "%r = broadcast_to(%v) {shape = [4, 8]}", "T[4,8]"},
    {"reshape", "%r = reshape(%x) {shape = [32]}", "T[32]"},
    {"stop_gradient", "%r = stop_gradient(%x)", "T[4,8]"},
    {"sum", "%r = sum(%x) {axes = [1]}", "T[4]"},
    {"mean", "%r = mean(%x) {axes = [1]}", "T[4]"},
    {"max", "%r = max(%x) {axes = [1]}", "T[4]"},
    {"min", "%r = min(%x) {axes = [1]}", "T[4]"},
    {"softmax", "%r = softmax(%x)", "T[4,8]"},
    {"log_softmax", "%r = log_softmax(%x)", "T[4,8]"},
    {"layer_norm", "%r = layer_norm(%x, %v, %v)", "T[4,8]"},
    {"cross_entropy", "%r = cross_entropy(%x, %l)", "T[]"},
    {"mse_loss", "%r = mse_loss(%x, %y)", "T[]"},
    {"gelu_grad", "%r = gelu_grad(%x, %y)", "T[4,8]"},
    {"silu_grad", "%r = silu_grad(%x, %y)", "T[4,8]"},
    {"softmax_grad", "%r = softmax_grad(%x, %y)", "T[4,8]"},
    {"log_softmax_grad", "%r = log_softmax_grad(%x, %y)", "T[4,8]"},
    {"cross_entropy_grad", "%r = cross_entropy_grad(%d, %x, %l)", "T[4,8]"},
};
#define NSAMPLES (sizeof samples / sizeof samples[0])

/* s with every "T[" made "<dtype>[". */
static void subst(char *out, size_t size, const char *s, const char *dt) {
  size_t n = 0;
  for (; *s && n + 16 < size; s++) {
    if (s[0] == 'T' && s[1] == '[')
      n += (size_t)snprintf(out + n, size - n, "%s", dt);
    else
      out[n++] = *s;
  }
  out[n] = 0;
}

static raf_module *fused_module(raf_ctx *ctx, const sample *sm, raf_dtype dt,
                                char *text, size_t size) {
  char body[512];
  snprintf(body, sizeof body,
           "func @fused_0(%%x: T[4,8], %%y: T[4,8], %%v: T[8], "
           "%%b: bool[4,8], %%l: i64[4], %%d: T[]) -> %s {fused} {\n"
           "  %s\n  return %%r\n}\n",
           sm->result, sm->stmt);
  subst(text, size, body, raf_dtype_name(dt));
  raf_module *m = raf_parse_module(ctx, "sample.raf", text, strlen(text), 1);
  if (m && raf_verify_module(ctx, m) != RAF_OK) {
    raf_module_destroy(m);
    m = NULL;
  }
  return m;
}

/* Emits the sample in dtype dt; returns whether the lowering took it. */
static bool lowers(const sample *sm, raf_opcode op, raf_dtype dt) {
  raf_ctx *ctx = raf_ctx_create();
  char text[1024];
  raf_module *m = fused_module(ctx, sm, dt, text, sizeof text);
  bool ok = false;
  if (!m) {
    fprintf(stderr, "sample of %s in %s does not verify:\n%s", sm->op,
            raf_dtype_name(dt), text);
    raf_diag_render(ctx, stderr);
    failures++;
  } else {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    raf_cg_emit_options o = {RAF_CG_EMIT_LLVM, NULL, NULL, false};
    raf_status st = out ? raf_cg_emit(ctx, m, &o, out) : RAF_ERROR;
    if (out)
      fclose(out);
    ok = st == RAF_OK && buf && !strstr(buf, "not compiled") &&
         strstr(buf, "define void @fused_0(");
    char why[256] = "";
    bool declined = !raf_cg_supports(raf_module_find_func(m, "fused_0"),
                                     NULL, why, sizeof why);
    if (!ok && declined) {
      char want[128];
      snprintf(want, sizeof want, "no lowering of %s for %s",
               raf_op_table[op].name, raf_dtype_name(dt));
      if (!raf_dialect_fuses(RAF_DIALECT_LLVM, op, dt) && !strstr(why, want)) {
        fprintf(stderr, "%s in %s: declined for '%s', not '%s'\n", sm->op,
                raf_dtype_name(dt), why, want);
        failures++;
      }
    }
    free(buf);
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  return ok;
}

static void test_fused_rows(void) {
  for (int op = 0; op < RAF_OP_COUNT; op++) {
    const char *name = raf_op_table[op].name;
    const sample *sm = NULL;
    for (size_t i = 0; i < NSAMPLES; i++)
      if (strcmp(samples[i].op, name) == 0)
        sm = &samples[i];
    if (!fuses_some_dtype(op)) {
      if (sm) {
        fprintf(stderr, "%s: a sample, but no FUSED(LLVM) row\n", name);
        failures++;
      }
      continue;
    }
    if (!sm) {
      fprintf(stderr, "%s: a FUSED(LLVM) row, but no sample in "
                      "test_registry.c to lower\n", name);
      failures++;
      continue;
    }
    for (int d = 0; d < RAF_DTYPE_COUNT; d++) {
      raf_dtype dt = (raf_dtype)d;
      /* The key dtype is the first operand's: bool for where. */
      raf_dtype key = op == RAF_OP_WHERE ? RAF_BOOL : dt;
      if (!((raf_op_table[op].dtypes >> d) & 1))
        continue;
      bool fused = raf_dialect_fuses(RAF_DIALECT_LLVM, (raf_opcode)op, key);
      if (op == RAF_OP_CAST && dt == RAF_F32)
        continue; /* a cast to its own dtype */
      bool ok = lowers(sm, (raf_opcode)op, dt);
      if (ok != fused) {
        fprintf(stderr, "%s in %s: the FUSED rows say %s, the lowering %s\n",
                name, raf_dtype_name(dt), fused ? "fused" : "not fused",
                ok ? "lowers it" : "declines it");
        failures++;
      }
    }
  }
}

/* ---- lang/scalar.def ------------------------------------------------------ */

typedef struct scalar_row {
  raf_opcode op;
  const char *kind;
  int arity; /* of the formula's kind; -1 for NO_FORMULA */
} scalar_row;

static const scalar_row scalar_rows[] = {
#define UNARY(OP, f) {RAF_OP_##OP, "UNARY", 1},
#define BINARY(OP, f) {RAF_OP_##OP, "BINARY", 2},
#define COMPARE(OP, f) {RAF_OP_##OP, "COMPARE", 2},
#define TEST(OP, f) {RAF_OP_##OP, "TEST", 1},
#define BACKWARD(OP, f) {RAF_OP_##OP, "BACKWARD", 2},
#define NO_FORMULA(OP, why) {RAF_OP_##OP, "NO_FORMULA", -1},
#include "lang/scalar.def"
#include "lang/scalar_end.h"
};
#define NSCALAR (sizeof scalar_rows / sizeof scalar_rows[0])

static bool elementwise(raf_opcode op) {
  return raf_op_table[op].fusion == RAF_FUSE_ELEMWISE ||
         raf_op_table[op].fusion == RAF_FUSE_BROADCAST;
}

static void test_scalar_rows(void) {
  for (int op = 0; op < RAF_OP_COUNT; op++) {
    int rows = 0;
    for (size_t i = 0; i < NSCALAR; i++)
      rows += scalar_rows[i].op == (raf_opcode)op;
    if (elementwise((raf_opcode)op) && rows != 1) {
      fprintf(stderr, "%s: elementwise, but %d rows in lang/scalar.def\n",
              raf_op_table[op].name, rows);
      failures++;
    }
  }
  for (size_t i = 0; i < NSCALAR; i++) {
    const scalar_row *r = &scalar_rows[i];
    const raf_op_info *info = &raf_op_table[r->op];
    if (!elementwise(r->op)) {
      fprintf(stderr, "%s: a %s row in lang/scalar.def, but not elementwise "
                      "in lang/ops.def\n", info->name, r->kind);
      failures++;
    }
    if (r->arity >= 0 && (info->noperands != r->arity || info->nresults != 1)) {
      fprintf(stderr, "%s: a %s row in lang/scalar.def, but %d operands and "
                      "%d results\n", info->name, r->kind, info->noperands,
              info->nresults);
      failures++;
    }
  }
}

/* ---- The cost column ------------------------------------------------------ */

/* A statement per op of cost -1, over the arguments of cost_text. */
static const sample shaped[] = {
    {"matmul", "%r = matmul(%a, %b)", NULL},
    {"conv2d", "%r = conv2d(%x, %w)", NULL},
    {"conv2d_grad_input", "%r = conv2d_grad_input(%dy, %w) {shape = [1, 2, 5, 5]}", NULL},
    {"conv2d_grad_weight", "%r = conv2d_grad_weight(%dy, %x) {shape = [3, 2, 3, 3]}", NULL},
    {"scaled_dot_product_attention", "%r = scaled_dot_product_attention(%q, %q, %q)", NULL},
    {"scaled_dot_product_attention_grad",
     "%r, %r1, %r2 = scaled_dot_product_attention_grad(%q, %q, %q, %q)", NULL},
};

static void test_cost_column(void) {
  for (int op = 0; op < RAF_OP_COUNT; op++) {
    const char *name = raf_op_table[op].name;
    if (raf_op_table[op].cost != -1 || op == RAF_OP_CALL)
      continue;
    const sample *sm = NULL;
    for (size_t i = 0; i < sizeof shaped / sizeof shaped[0]; i++)
      if (strcmp(shaped[i].op, name) == 0)
        sm = &shaped[i];
    if (!sm) {
      fprintf(stderr, "%s: cost -1, but no sample in test_registry.c for "
                      "the cost model\n", name);
      failures++;
      continue;
    }
    char text[512];
    snprintf(text, sizeof text,
             "func @c(%%a: f32[4,8], %%b: f32[8,2], %%x: f32[1,2,5,5], "
             "%%w: f32[3,2,3,3], %%dy: f32[1,3,3,3], %%q: f32[1,2,4,8]) -> () {\n"
             "  %s\n  return\n}\n",
             sm->stmt);
    raf_ctx *ctx = raf_ctx_create();
    raf_module *m = raf_parse_module(ctx, "cost.raf", text, strlen(text), 1);
    if (!m || raf_verify_module(ctx, m) != RAF_OK) {
      fprintf(stderr, "cost sample of %s does not verify:\n%s", name, text);
      raf_diag_render(ctx, stderr);
      failures++;
    } else if (raf_stmt_cost(m->first->first).flops <= 0) {
      fprintf(stderr, "%s: cost -1, but the cost model gives it no flops\n",
              name);
      failures++;
    }
    raf_module_destroy(m);
    raf_ctx_destroy(ctx);
  }
}

/* ---- The pass registry ---------------------------------------------------- */

static bool registered(const char *name, size_t len) {
  size_t n;
  const raf_pass_info *p = raf_pass_list(&n);
  for (size_t i = 0; i < n; i++)
    if (strlen(p[i].name) == len && strncmp(p[i].name, name, len) == 0)
      return true;
  return false;
}

/* Checks every name of list; for each, the pipeline "first,second" (with
 * the name standing for first or second as `name_first` says) must be
 * refused. */
static void check_list(const char *pass, const char *list, bool name_first) {
  for (const char *s = list; *s;) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char other[64];
    snprintf(other, sizeof other, "%.*s", (int)len, s);
    if (!registered(s, len)) {
      fprintf(stderr, "pass %s names '%s', which is not registered\n", pass,
              other);
      failures++;
    } else {
      char text[160];
      snprintf(text, sizeof text, "%s,%s", name_first ? other : pass,
               name_first ? pass : other);
      raf_ctx *ctx = raf_ctx_create();
      raf_pipeline *p = raf_pipeline_create(ctx);
      CHECK(raf_pipeline_parse(p, text) == RAF_OK);
      if (raf_pipeline_check(p) == RAF_OK) {
        fprintf(stderr, "pipeline '%s' is not refused\n", text);
        failures++;
      }
      raf_pipeline_destroy(p);
      raf_ctx_destroy(ctx);
    }
    s += len + (end != NULL);
  }
}

/* Checks that every pass the `requires` of passes[i] names is registered
 * before it. */
static void check_required(const raf_pass_info *passes, size_t i) {
  for (const char *s = passes[i].required; *s;) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    size_t k = 0;
    while (k < i && (strlen(passes[k].name) != len ||
                     strncmp(passes[k].name, s, len) != 0))
      k++;
    if (k == i) {
      fprintf(stderr, "pass %s requires '%.*s', which is not registered "
                      "before it\n", passes[i].name, (int)len, s);
      failures++;
    }
    s += len + (end != NULL);
  }
}

static void test_pass_registry(void) {
  size_t n;
  const raf_pass_info *passes = raf_pass_list(&n);
  raf_ctx *ctx = raf_ctx_create();
  raf_pipeline *all = raf_pipeline_create(ctx);
  for (size_t i = 0; i < n; i++) {
    CHECK(raf_pipeline_add(all, passes[i].name, NULL) == RAF_OK);
    /* after: running the other one later is refused; before: earlier. */
    check_list(passes[i].name, passes[i].after, false);
    check_list(passes[i].name, passes[i].before, true);
    check_required(passes, i);
    if (strcmp(passes[i].name, "plan-memory") == 0)
      CHECK(strcmp(passes[i].required, "dispatch") == 0);
  }
  if (raf_pipeline_check(all) != RAF_OK) {
    fprintf(stderr, "the registry order is not a valid pipeline:\n");
    raf_diag_render(ctx, stderr);
    failures++;
  }
  raf_pipeline_destroy(all);
  raf_ctx_destroy(ctx);
}

/* ---- requires ------------------------------------------------------------ */

/* A fused call the llvm dialect compiles once dispatched, between
 * statements the plan may run in place. */
static const char requires_text[] =
    "func @fused_0(%a: f32[4], %s: f32[1]) -> f32[4] {fused} {\n"
    "  %e = exp(%a)\n"
    "  %m = mul(%e, %s)\n"
    "  return %m\n"
    "}\n"
    "func @f(%x: f32[4], %s: f32[1]) -> f32[4] {\n"
    "  %a = neg(%x)\n"
    "  %b = call @fused_0(%a, %s)\n"
    "  %c = exp(%b)\n"
    "  return %c\n"
    "}\n";

/* Runs pipeline text on a fresh parse of src; returns the module printed
 * and the number of notes that say "requires" in *notes. */
static char *run_printed(const char *pipeline, const char *src, int *notes) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, "requires.raf", src, strlen(src), 1);
  raf_pipeline *p = raf_pipeline_create(ctx);
  CHECK(m && raf_pipeline_parse(p, pipeline) == RAF_OK);
  CHECK(m && raf_pipeline_run(p, m, NULL) == RAF_OK);
  *notes = 0;
  for (size_t i = 0; i < raf_diag_count(ctx); i++) {
    raf_severity sev;
    const char *msg;
    raf_loc loc;
    raf_diag_get(ctx, i, &loc, &sev, &msg);
    if (sev == RAF_SEV_NOTE &&
        strcmp(msg, "plan-memory requires dispatch; running dispatch "
                    "(device=cpu) first") == 0)
      (*notes)++;
    else {
      fprintf(stderr, "%s: unexpected diagnostic: %s\n", pipeline, msg);
      failures++;
    }
  }
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (m && out)
    raf_print_module(m, out, 0);
  if (out)
    fclose(out);
  raf_pipeline_destroy(p);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  return text;
}

static void test_requires(void) {
  int notes;
  char *added = run_printed("plan-memory", requires_text, &notes);
  CHECK(notes == 1);
  char *written = run_printed("dispatch,plan-memory", requires_text, &notes);
  CHECK(notes == 0);
  CHECK(added && written && strcmp(added, written) == 0);
  CHECK(added && strstr(added, "dialect = \"llvm\""));
  /* Dispatched already: the marks say so, and nothing is added. */
  char *again = added ? run_printed("plan-memory", added, &notes) : NULL;
  CHECK(notes == 0);
  CHECK(again && strcmp(again, added) == 0);
  free(added);
  free(written);
  free(again);
}

int main(void) {
  test_inplace_column();
  test_fused_rows();
  test_scalar_rows();
  test_cost_column();
  test_pass_registry();
  test_requires();
  if (failures)
    fprintf(stderr, "test_registry: %d failures\n", failures);
  return failures != 0;
}
