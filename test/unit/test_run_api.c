/* test_run_api.c: the public executor API (include/raf/run.h), used as an
 * embedding program would, through the public headers alone: a module
 * parsed from text runs on the CPU and its results read back; a
 * statement's dialect mark is kept, or replaced when the dialects asked
 * for leave it out (and counted); and the errors (an unknown function, a
 * wrong argument shape or count, a wrong byte count, an unknown dtype)
 * are reported in the context, never a crash. */
#include "include/raf/run.h"

#include <string.h>

static int failures;
#include "test/unit/check.h"

static const char TEXT[] =
    "func @affine(%x: f32[2,3], %w: f32[3,2]) -> f32[2,2] {\n"
    "  %y = matmul(%x, %w) {dialect = \"cpu-ref\"}\n"
    "  %z = add(%y, %y)\n"
    "  return %z\n"
    "}\n"
    "func @neg(%a: i64[3]) -> i64[3] {\n"
    "  %b = neg(%a)\n"
    "  return %b\n"
    "}\n";

/* TEXT with its matmul marked with dialect instead of cpu-ref. */
static raf_module *parse_marked(raf_ctx *ctx, const char *dialect) {
  char text[sizeof TEXT + 32];
  const char *mark = strstr(TEXT, "cpu-ref");
  snprintf(text, sizeof text, "%.*s%s%s", (int)(mark - TEXT), TEXT, dialect,
           mark + strlen("cpu-ref"));
  raf_module *m = raf_parse_module(ctx, "api.raf", text, strlen(text), 1);
  CHECK(m && raf_verify_module(ctx, m) == RAF_OK);
  return m;
}

static raf_module *parse(raf_ctx *ctx) { return parse_marked(ctx, "cpu-ref"); }

/* Whether one of ctx's diagnostics contains text. */
static bool reported(const raf_ctx *ctx, const char *text) {
  for (size_t i = 0; i < raf_diag_count(ctx); i++) {
    const char *msg;
    raf_diag_get(ctx, i, NULL, NULL, &msg);
    if (strstr(msg, text))
      return true;
  }
  return false;
}

static void test_call(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = parse(ctx);
  raf_executor_options o;
  raf_executor_options_init(&o);
  o.threads = 1;
  raf_executor *ex = NULL;
  CHECK(raf_executor_create(m, &o, &ex) == RAF_OK && ex);
  if (!ex) {
    raf_diag_render(ctx, stderr);
    return;
  }
  CHECK(strcmp(raf_executor_device(ex), "cpu") == 0);
  CHECK(raf_executor_replaced_marks(ex) == 0); /* cpu-ref is enabled */

  raf_func *f = raf_executor_find(ex, "affine");
  CHECK(f && strcmp(raf_func_name(f), "affine") == 0);
  CHECK(f && raf_func_arg_count(f) == 2 && raf_func_result_count(f) == 1);
  const float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, 0, 1, 1, 1};
  raf_tensor *args[2] = {raf_tensor_create(ex, "f32", 2, (int64_t[]){2, 3}),
                         raf_tensor_create_arg(ex, f, 1)};
  CHECK(args[0] && args[1]);
  CHECK(strcmp(raf_tensor_dtype(args[1]), "f32") == 0);
  CHECK(raf_tensor_rank(args[1]) == 2 && raf_tensor_dim(args[1], 0) == 3);
  CHECK(raf_tensor_bytes(args[0]) == sizeof x);
  CHECK(raf_tensor_write(ex, args[0], x, sizeof x) == RAF_OK);
  CHECK(raf_tensor_write(ex, args[1], w, sizeof w) == RAF_OK);
  raf_tensor *y = NULL;
  CHECK(raf_executor_call(ex, f, args, 2, &y, 1) == RAF_OK && y);
  float got[4] = {0};
  CHECK(y && raf_tensor_read(ex, y, got, sizeof got) == RAF_OK);
  /* x w = [[4, 5], [10, 11]], doubled */
  CHECK(got[0] == 8 && got[1] == 10 && got[2] == 20 && got[3] == 22);
  CHECK(raf_executor_peak_bytes(ex) >= sizeof x + sizeof w + sizeof got);
  CHECK(raf_error_count(ctx) == 0);

  /* The errors, each reported. */
  CHECK(!raf_executor_find(ex, "affin"));
  CHECK(reported(ctx, "no function @affin (the module has @affine, @neg)"));
  raf_tensor *wrong = raf_tensor_create(ex, "f32", 2, (int64_t[]){3, 2});
  raf_tensor *bad[2] = {wrong, args[1]};
  raf_tensor *r = (raf_tensor *)1;
  CHECK(raf_executor_call(ex, f, bad, 2, &r, 1) == RAF_ERROR && !r);
  CHECK(reported(ctx, "@affine: argument %x is f32[2,3], not f32[3,2]"));
  CHECK(raf_executor_call(ex, f, args, 1, &r, 1) == RAF_ERROR);
  CHECK(reported(ctx, "takes 2 arguments and returns 1 results, not 1"));
  CHECK(raf_tensor_read(ex, y, got, 3) == RAF_ERROR);
  CHECK(reported(ctx, "cannot read 3 bytes: a tensor of f32[2,2] holds 16"));
  CHECK(!raf_tensor_create(ex, "f33", 1, (int64_t[]){2}));
  CHECK(reported(ctx, "no dtype 'f33'"));
  CHECK(!raf_tensor_create(ex, "f32", 1, (int64_t[]){-2}));

  /* Integers, on a function found second. */
  raf_func *g = raf_executor_find(ex, "neg");
  raf_tensor *a = g ? raf_tensor_create_arg(ex, g, 0) : NULL, *b = NULL;
  const int64_t av[3] = {1, -2, 3};
  int64_t bv[3] = {0};
  CHECK(a && raf_tensor_write(ex, a, av, sizeof av) == RAF_OK);
  CHECK(g && raf_executor_call(ex, g, &a, 1, &b, 1) == RAF_OK);
  CHECK(b && raf_tensor_read(ex, b, bv, sizeof bv) == RAF_OK);
  CHECK(bv[0] == -1 && bv[1] == 2 && bv[2] == -3);

  raf_tensor_destroy(ex, a);
  raf_tensor_destroy(ex, b);
  raf_tensor_destroy(ex, wrong);
  raf_tensor_destroy(ex, y);
  raf_tensor_destroy(ex, args[0]);
  raf_tensor_destroy(ex, args[1]);
  raf_executor_destroy(ex);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

/* Asking for cblas alone replaces the matmul's cpu-ref mark (the add,
 * unmarked, is not counted); the results do not change. */
static void test_replaced_marks(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = parse(ctx);
  raf_executor_options o;
  raf_executor_options_init(&o);
  o.dialects = "cblas,cpu-ref";
  raf_executor *ex = NULL;
  CHECK(raf_executor_create(m, &o, &ex) == RAF_OK);
  CHECK(ex && raf_executor_replaced_marks(ex) == 0);
  raf_executor_destroy(ex);
  o.dialects = "cblas";
  ex = NULL;
  /* cblas has no add: the choice fails, saying so */
  CHECK(raf_executor_create(m, &o, &ex) == RAF_ERROR && !ex);
  CHECK(reported(ctx, "dispatch: no enabled dialect implements add"));
  raf_module_destroy(m);
  raf_diag_clear(ctx);
  m = parse(ctx);
  o.dialects = "cblas,llvm,cpu-ref";
  o.device = "cpu";
  CHECK(raf_executor_create(m, &o, &ex) == RAF_OK);
  CHECK(ex && raf_executor_replaced_marks(ex) == 0);
  CHECK(ex && strcmp(raf_executor_dialects(ex), "cblas,llvm,cpu-ref") == 0);
  raf_executor_destroy(ex);
  raf_module_destroy(m);

  /* the cpu-ref mark left out: matmul goes to cblas, add stays unmarked
   * until chosen (cpu-ref) */
  m = parse(ctx);
  o.dialects = "cblas";
  o.device = NULL;
  CHECK(raf_executor_create(m, &o, &ex) == RAF_ERROR); /* add: no cblas */
  raf_module_destroy(m);
  raf_diag_clear(ctx);
  m = parse_marked(ctx, "cblas");
  o.dialects = "cpu-ref";
  ex = NULL;
  CHECK(raf_executor_create(m, &o, &ex) == RAF_OK);
  CHECK(ex && raf_executor_replaced_marks(ex) == 1);
  raf_executor_destroy(ex);
  raf_module_destroy(m);

  o.device = "tpu";
  m = parse(ctx);
  CHECK(raf_executor_create(m, &o, &ex) == RAF_ERROR && !ex);
  CHECK(reported(ctx, "device 'tpu' is not cpu or cuda"));
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

int main(void) {
  test_call();
  test_replaced_marks();
  if (failures)
    fprintf(stderr, "%d check(s) failed\n", failures);
  return failures != 0;
}
