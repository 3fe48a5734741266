/* test_cblas_nn.c: property tests of the cblas dialect's float kernels
 * that are not matrix products (runtime/cblas.c): cross_entropy and
 * cross_entropy_grad in f32, over random shapes (up to a vocabulary-wide
 * row), reductions, ignored labels, and logits of several scales, each
 * module built from text, dispatched and run through the executor:
 *   - with `cblas,cpu-ref` the dispatch pass binds them to cblas;
 *   - their results agree with cpu-ref's within float rounding (the loss
 *     relative to log(C) + |loss|, each gradient element relative to the
 *     row's scale);
 *   - they are bit-identical at 1 and 3 threads;
 *   - a label out of range is reported with cpu-ref's message.
 * The generator is a fixed-seed xorshift, so failures reproduce; each
 * failure prints the module text. */
#include "ir/ir.h"
#include "runtime/exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/program.h"

static const char *const REDUCTIONS[] = {"mean", "sum", "none"};

typedef struct ce_case {
  int64_t rows, classes, ignore;
  const char *reduction;
  double spread; /* logits uniform in [-spread, spread) */
} ce_case;

/* Fills the arguments: floats uniform in [-spread, spread) (dy in
 * [-1, 1)), labels in [0, C) with some equal to ignore_index. */
static void fill(const ce_case *c, program *p, raf_tensor **args,
                 int logits_at) {
  raf_func *f = p->m->first;
  for (int i = 0; i < f->nargs; i++) {
    raf_tensor *t = args[i];
    for (int64_t e = 0; e < t->type->numel; e++) {
      if (t->type->dtype == RAF_I64) {
        int64_t v = rand_int(0, c->classes - 1);
        if (rand_int(0, 7) == 0)
          v = c->ignore;
        ((int64_t *)t->data)[e] = v;
      } else {
        double s = i == logits_at ? c->spread : 1;
        ((float *)t->data)[e] = (float)(s * rand_unit());
      }
    }
  }
}

static bool agree(const raf_tensor *want, const raf_tensor *got, double tol,
                  const char *who) {
  for (int64_t e = 0; e < want->type->numel; e++) {
    double x = ((const float *)want->data)[e],
           y = ((const float *)got->data)[e];
    if (!(fabs(x - y) <= tol) && !(isnan(x) && isnan(y))) {
      fprintf(stderr, "%s: element %lld is %.9g, cpu-ref %.9g (tol %g)\n",
              who, (long long)e, y, x, tol);
      return false;
    }
  }
  return true;
}

static void test_cross_entropy(int trials) {
  char text[1024];
  for (int t = 0; t < trials; t++) {
    ce_case c = {.rows = rand_int(1, 12), .classes = rand_int(1, 40),
                 .reduction = REDUCTIONS[t % 3],
                 .spread = (double[]){0.5, 4, 30}[rand_int(0, 2)]};
    if (rand_int(0, 3) == 0)
      c.classes = rand_int(2000, 9000);
    if (t % 17 == 0)
      c.classes = 50257, c.rows = 3;
    c.ignore = rand_int(0, 1) ? -100 : rand_int(0, c.classes - 1);
    bool grad = t % 2 == 1;
    char dyt[64] = "f32[]";
    if (strcmp(c.reduction, "none") == 0)
      snprintf(dyt, sizeof dyt, "f32[%lld]", (long long)c.rows);
    if (grad)
      snprintf(text, sizeof text,
               "func @f(%%dy: %s, %%x: f32[%lld,%lld], %%l: i64[%lld]) -> "
               "f32[%lld,%lld] {\n"
               "  %%g = cross_entropy_grad(%%dy, %%x, %%l) {reduction = "
               "\"%s\", ignore_index = %lld}\n"
               "  return %%g\n}\n",
               dyt, (long long)c.rows, (long long)c.classes,
               (long long)c.rows, (long long)c.rows, (long long)c.classes,
               c.reduction, (long long)c.ignore);
    else
      snprintf(text, sizeof text,
               "func @f(%%x: f32[%lld,%lld], %%l: i64[%lld]) -> %s {\n"
               "  %%y = cross_entropy(%%x, %%l) {reduction = \"%s\", "
               "ignore_index = %lld}\n"
               "  return %%y\n}\n",
               (long long)c.rows, (long long)c.classes, (long long)c.rows,
               dyt, c.reduction, (long long)c.ignore);
    program ref, blas, blas3;
    bool ok = program_open_cblas_trio(&ref, &blas, &blas3, text);
    CHECK(ok);
    if (!ok)
      return;
    CHECK(strcmp(dialect_of_first(&blas), "cblas") == 0);
    int nargs = ref.m->first->nargs;
    raf_tensor **args = random_args(&ref);
    fill(&c, &ref, args, grad ? 1 : 0);
    raf_tensor **argsb = copy_args(&blas, args);
    raf_tensor **argsb3 = copy_args(&blas3, args);
    raf_tensor *want = run_one(&ref, args), *got = run_one(&blas, argsb),
               *got3 = run_one(&blas3, argsb3);
    CHECK(want && got && got3);
    if (want && got && got3) {
      bool good = memcmp(got->data, got3->data, got->nbytes) == 0;
      if (grad) {
        /* Each element is (p - onehot) * g: float rounding of p and g. */
        double g = 0;
        for (int64_t e = 0; e < args[0]->type->numel; e++)
          g = fmax(g, fabs(((const float *)args[0]->data)[e]));
        good &= agree(want, got, 1e-6 * g, "cross_entropy_grad");
      } else {
        /* A loss is log(sum exp) - x: rounding of order log(C) ulps,
         * summed over the rows for "sum" and "mean". */
        double tol = 4e-7 * (log((double)c.classes) + 2 * c.spread + 1) *
                     (strcmp(c.reduction, "none") ? (double)c.rows : 1);
        good &= agree(want, got, tol, "cross_entropy");
      }
      if (!good)
        fprintf(stderr, "in trial %d (logits in +-%g):\n%s", t, c.spread,
                text);
      CHECK(good);
    }
    if (want)
      raf_exec_free(ref.ex, want);
    if (got)
      raf_exec_free(blas.ex, got);
    if (got3)
      raf_exec_free(blas3.ex, got3);
    free_tensors(&ref, args, nargs);
    free_tensors(&blas, argsb, nargs);
    free_tensors(&blas3, argsb3, nargs);
    program_close(&ref);
    program_close(&blas);
    program_close(&blas3);
  }
}

/* A label out of range: the same error as cpu-ref's, forward and
 * backward. */
static void test_bad_label(void) {
  const char *text =
      "func @f(%x: f32[2,3], %l: i64[2]) -> (f32[], f32[2,3]) {\n"
      "  %one = constant 1.0 : f32[]\n"
      "  %y = cross_entropy(%x, %l)\n"
      "  %g = cross_entropy_grad(%one, %x, %l)\n"
      "  return %y, %g\n}\n";
  for (int way = 0; way < 2; way++) {
    program p;
    bool ok = program_open(&p, text, way ? "cblas,cpu-ref" : "cpu-ref", 2);
    CHECK(ok);
    if (!ok)
      return;
    raf_tensor **args = random_args(&p);
    int64_t *l = args[1]->data;
    l[0] = 1, l[1] = 3;
    raf_tensor *res[2] = {NULL, NULL};
    CHECK(raf_exec_call(p.ex, p.m->first, args, res) != RAF_OK);
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    raf_diag_render(p.ctx, f);
    fclose(f);
    CHECK(strstr(buf, "cross_entropy: label 3 at [1] is out of range for 3 "
                      "classes") != NULL);
    free_tensors(&p, args, 2);
    program_close(&p);
  }
}

int main(void) {
  test_cross_entropy(120);
  test_bad_label();
  if (failures)
    fprintf(stderr, "test_cblas_nn: %d failures\n", failures);
  return failures != 0;
}
