/* test_onednn.c: the onednn dialect's kernels against cpu-ref and a
 * double reference, each module built from text as a user writes it,
 * dispatched by the dispatch pass and run through the executor:
 *   - with `onednn,cblas,cpu-ref` bf16 matmul binds to onednn, f32 and
 *     f16 to cblas;
 *   - on fixed shapes (odd sizes 1, 7, 33, every transpose pair, batch
 *     broadcasts either way, folded batches, products split into several
 *     row blocks, a transposed A packed per block, empty products) and
 *     random ones, onednn's result is within bf16 rounding of a double
 *     reference (one rounding of an f32 sum: |got - sum| <= 2^-7 |sum| +
 *     (k + 1) 2^-23 sum |a b|), and so is cpu-ref's where it is cheap
 *     enough to run; the two agree with each other as closely;
 *   - results are bit-identical at 1 and 3 threads;
 *   - statements of the same shape share their primitives (the cache);
 *   - bf16 scaled_dot_product_attention and its gradient bind to onednn
 *     and agree with cpu-ref's (double inside, one rounding) within bf16
 *     rounding of P and dS (relative L2 error of each result at most
 *     2^-6), causal or not, over odd sizes, empty ones and several 64-row
 *     blocks, bit-identical at 1 and 3 threads;
 *   - f32 and bf16 conv2d and both its gradients, max and avg pooling and
 *     their gradients, f32 batch_norm and its gradient (training or not)
 *     bind to onednn and agree with cpu-ref's within docs/Dialects.md's
 *     tolerances (the worst errors are printed), on ResNet's shapes and
 *     random ones (strides, padding, dilation, groups, odd sizes, batch 1;
 *     ties and NaNs in pooling windows; rank 2 to 4 for batch_norm),
 *     bit-identical at 1 and 3 threads; bf16 batch_norm stays with
 *     cpu-ref; convolutions of one shape share their primitives.
 * In a build without oneDNN the test checks that the dialect is refused
 * with its reason, and exits 77 (CTest: skipped). */
#include "ir/ir.h"
#include "runtime/dialects.h"
#include "runtime/onednn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/program.h"

enum { SKIPPED = 77 };

#define BF16_EPS 0x1p-7
#define F32_EPS 0x1p-23

typedef struct mm_case {
  bool ta, tb;
  int64_t m, k, n;
  int ra, rb, ro; /* batch ranks of a, b and the result */
  int64_t ba[3], bb[3], bo[3];
} mm_case;

/* The result's batch dims: what a's and b's broadcast to. */
static void broadcast_batch(mm_case *c) {
  c->ro = c->ra > c->rb ? c->ra : c->rb;
  for (int d = 0; d < c->ro; d++) {
    int da = d - (c->ro - c->ra), db = d - (c->ro - c->rb);
    int64_t x = da >= 0 ? c->ba[da] : 1, y = db >= 0 ? c->bb[db] : 1;
    c->bo[d] = x > y ? x : y;
  }
}

static void mm_text(const mm_case *c, raf_dtype dt, char *buf, size_t size) {
  int64_t da[5], db[5], dout[5];
  memcpy(da, c->ba, sizeof c->ba);
  memcpy(db, c->bb, sizeof c->bb);
  memcpy(dout, c->bo, sizeof c->bo);
  da[c->ra] = c->ta ? c->k : c->m;
  da[c->ra + 1] = c->ta ? c->m : c->k;
  db[c->rb] = c->tb ? c->n : c->k;
  db[c->rb + 1] = c->tb ? c->k : c->n;
  dout[c->ro] = c->m;
  dout[c->ro + 1] = c->n;
  char ta[64], tb[64], to[64];
  type_text(ta, sizeof ta, dt, c->ra + 2, da);
  type_text(tb, sizeof tb, dt, c->rb + 2, db);
  type_text(to, sizeof to, dt, c->ro + 2, dout);
  snprintf(buf, size,
           "func @f(%%a: %s, %%b: %s) -> %s {\n"
           "  %%r = matmul(%%a, %%b) {transpose_a = %s, transpose_b = %s}\n"
           "  return %%r\n"
           "}\n",
           ta, tb, to, c->ta ? "true" : "false", c->tb ? "true" : "false");
}

/* Element offset of a's (or b's) matrix for result batch index `batch`. */
static int64_t batch_offset(const mm_case *c, int64_t batch, int r,
                            const int64_t *dims, int64_t mat) {
  int64_t off = 0, stride = mat;
  for (int d = c->ro - 1; d >= 0; d--) {
    int64_t idx = batch % c->bo[d];
    batch /= c->bo[d];
    int od = d - (c->ro - r);
    if (od < 0)
      continue;
    if (dims[od] != 1)
      off += idx * stride;
    stride *= dims[od];
  }
  return off;
}

/* The exact sums (in double) of every result element and their sums of
 * |a b|, in new arrays. */
typedef struct reference {
  double *sum, *abs_sum;
  int64_t numel;
} reference;

static reference reference_of(const mm_case *c, raf_tensor *const *args) {
  int64_t nbatch = 1;
  for (int d = 0; d < c->ro; d++)
    nbatch *= c->bo[d];
  reference r = {.numel = nbatch * c->m * c->n};
  r.sum = calloc((size_t)r.numel + 1, sizeof *r.sum);
  r.abs_sum = calloc((size_t)r.numel + 1, sizeof *r.abs_sum);
  double *a = malloc(sizeof *a * (size_t)(args[0]->type->numel + 1));
  double *b = malloc(sizeof *b * (size_t)(args[1]->type->numel + 1));
  for (int64_t e = 0; e < args[0]->type->numel; e++)
    a[e] = raf_elem_get_f64(RAF_BF16, args[0]->data, e);
  for (int64_t e = 0; e < args[1]->type->numel; e++)
    b[e] = raf_elem_get_f64(RAF_BF16, args[1]->data, e);
  for (int64_t bi = 0; bi < nbatch; bi++) {
    const double *am = a + batch_offset(c, bi, c->ra, c->ba, c->m * c->k);
    const double *bm = b + batch_offset(c, bi, c->rb, c->bb, c->k * c->n);
    for (int64_t i = 0; i < c->m; i++) {
      double *sum = r.sum + (bi * c->m + i) * c->n,
             *abs_sum = r.abs_sum + (bi * c->m + i) * c->n;
      for (int64_t kk = 0; kk < c->k; kk++) {
        double x = am[c->ta ? kk * c->m + i : i * c->k + kk];
        for (int64_t j = 0; j < c->n; j++) {
          double p = x * bm[c->tb ? j * c->k + kk : kk * c->n + j];
          sum[j] += p;
          abs_sum[j] += fabs(p);
        }
      }
    }
  }
  free(a);
  free(b);
  return r;
}

/* Whether bf16 result t is within one rounding of an f32 sum of the
 * reference (the first mismatch printed). */
static bool within_bf16(const mm_case *c, const reference *r,
                        const raf_tensor *t, const char *who) {
  for (int64_t e = 0; e < r->numel; e++) {
    double got = raf_elem_get_f64(RAF_BF16, t->data, e);
    double tol = BF16_EPS * fabs(r->sum[e]) +
                 (double)(c->k + 1) * F32_EPS * r->abs_sum[e] + 1e-300;
    if (!(fabs(got - r->sum[e]) <= tol)) {
      fprintf(stderr, "%s: element %lld is %.9g, expected %.9g\n", who,
              (long long)e, got, r->sum[e]);
      return false;
    }
  }
  return true;
}

/* Runs case c through onednn at 1 and 3 threads and, when cheap, through
 * cpu-ref; checks them as the header says. */
static void run_case(const mm_case *c, bool with_cpuref) {
  char text[1024];
  mm_text(c, RAF_BF16, text, sizeof text);
  program one, three, ref;
  bool ok = program_open(&one, text, "onednn,cblas,cpu-ref", 1) &&
            program_open(&three, text, "onednn,cblas,cpu-ref", 3) &&
            (!with_cpuref || program_open(&ref, text, "cpu-ref", 2));
  CHECK(ok);
  if (!ok)
    return; /* the programs leak; the test has failed anyway */
  CHECK(strcmp(dialect_of_first(&one), "onednn") == 0);
  raf_tensor **args = random_args(&one);
  raf_tensor **args3 = copy_args(&three, args);
  raf_tensor **argsr = with_cpuref ? copy_args(&ref, args) : NULL;
  raf_tensor *r1 = run_one(&one, args), *r3 = run_one(&three, args3);
  raf_tensor *rr = with_cpuref ? run_one(&ref, argsr) : NULL;
  CHECK(r1 && r3 && (rr || !with_cpuref));
  if (r1 && r3 && (rr || !with_cpuref)) {
    reference want = reference_of(c, args);
    bool good = within_bf16(c, &want, r1, "onednn");
    good &= memcmp(r1->data, r3->data, r1->nbytes) == 0; /* 1 vs 3 threads */
    if (rr) {
      good &= within_bf16(c, &want, rr, "cpu-ref");
      for (int64_t e = 0; e < want.numel; e++) {
        double x = raf_elem_get_f64(RAF_BF16, r1->data, e),
               y = raf_elem_get_f64(RAF_BF16, rr->data, e);
        good &= fabs(x - y) <= 2 * BF16_EPS * fabs(want.sum[e]) +
                                   2 * (double)(c->k + 1) * F32_EPS *
                                       want.abs_sum[e] +
                                   1e-300;
      }
    }
    if (!good)
      fprintf(stderr, "in:\n%s", text);
    CHECK(good);
    free(want.sum);
    free(want.abs_sum);
  }
  if (r1)
    raf_exec_free(one.ex, r1);
  if (r3)
    raf_exec_free(three.ex, r3);
  if (rr)
    raf_exec_free(ref.ex, rr);
  free_tensors(&one, args, 2);
  free_tensors(&three, args3, 2);
  program_close(&one);
  program_close(&three);
  if (with_cpuref) {
    free_tensors(&ref, argsr, 2);
    program_close(&ref);
  }
}

static mm_case plain(bool ta, bool tb, int64_t m, int64_t k, int64_t n) {
  return (mm_case){.ta = ta, .tb = tb, .m = m, .k = k, .n = n};
}

static void test_fixed_shapes(void) {
  static const int64_t odd[][3] = {{1, 1, 1},  {7, 33, 1},   {1, 7, 33},
                                   {33, 1, 7}, {33, 33, 33}, {7, 7, 7},
                                   {5, 0, 3},  {0, 4, 3},    {64, 48, 80}};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
    for (int t = 0; t < 4; t++)
      run_case(&(mm_case){.ta = t & 1, .tb = t >> 1, .m = odd[i][0],
                          .k = odd[i][1], .n = odd[i][2]},
               true);
  /* Batches: b shared (folded into rows), a shared, both, broadcasts of
   * 1s in either operand, a transposed A beside a shared b (not folded). */
  mm_case c = plain(false, false, 7, 33, 5);
  c.ra = 1, c.ba[0] = 3;
  broadcast_batch(&c);
  run_case(&c, true);
  c.ta = true;
  run_case(&c, true);
  c = plain(false, true, 33, 7, 9);
  c.rb = 2, c.bb[0] = 2, c.bb[1] = 3;
  broadcast_batch(&c);
  run_case(&c, true);
  c = plain(true, true, 9, 17, 33);
  c.ra = 2, c.ba[0] = 2, c.ba[1] = 1;
  c.rb = 2, c.bb[0] = 1, c.bb[1] = 3;
  broadcast_batch(&c);
  run_case(&c, true);
  c = plain(false, false, 1, 7, 1);
  c.ra = 3, c.ba[0] = 2, c.ba[1] = 1, c.ba[2] = 3;
  c.rb = 1, c.bb[0] = 3;
  broadcast_batch(&c);
  run_case(&c, true);
  /* Several row blocks (more than 2^27 multiply-adds), a shorter last
   * block, transposed A packed per block; GPT-2-like widths. The
   * reference is the double one (cpu-ref is slow at this size). */
  run_case(&(mm_case){.m = 700, .k = 768, .n = 520}, false);
  run_case(&(mm_case){.ta = true, .m = 700, .k = 768, .n = 520}, false);
  run_case(&(mm_case){.ta = true, .tb = true, .m = 520, .k = 640, .n = 900},
           false);
  c = plain(false, true, 300, 512, 512);
  c.ra = 1, c.ba[0] = 3; /* folded: 900 rows, 4 blocks */
  broadcast_batch(&c);
  run_case(&c, false);
  c = plain(true, false, 520, 512, 640);
  c.ra = 1, c.ba[0] = 2;
  c.rb = 1, c.bb[0] = 2; /* two matrices of two blocks each */
  broadcast_batch(&c);
  run_case(&c, false);
}

static void test_random_shapes(int trials) {
  for (int t = 0; t < trials; t++) {
    mm_case c = plain(next_u64() & 1, next_u64() & 1, rand_int(1, 40),
                      rand_int(1, 40), rand_int(1, 40));
    if (rand_int(0, 4) == 0)
      c.n = rand_int(100, 300);
    c.ra = (int)rand_int(0, 2);
    c.rb = (int)rand_int(0, 2);
    for (int d = 0; d < c.ra; d++)
      c.ba[d] = rand_int(1, 3);
    for (int d = 0; d < c.rb; d++) { /* a's where a's is not 1, or 1 */
      int da = d - (c.rb - c.ra);
      bool fixed = da >= 0 && c.ba[da] != 1;
      c.bb[d] = !fixed ? rand_int(1, 3) : rand_int(0, 2) ? c.ba[da] : 1;
    }
    broadcast_batch(&c);
    run_case(&c, true);
  }
}

/* ---- attention -------------------------------------------------------- */

typedef struct attn_case {
  int lead_rank;
  int64_t lead[2], lq, lk, d, dv;
  bool causal, has_scale, backward;
  double scale;
} attn_case;

static void attn_text(const attn_case *c, char *buf, size_t size) {
  int64_t dims[4];
  char tq[64], tk[64], tv[64], to[64], attrs[96] = "";
  int r = c->lead_rank + 2;
  memcpy(dims, c->lead, sizeof c->lead);
  dims[r - 2] = c->lq, dims[r - 1] = c->d;
  type_text(tq, sizeof tq, RAF_BF16, r, dims);
  dims[r - 2] = c->lk;
  type_text(tk, sizeof tk, RAF_BF16, r, dims);
  dims[r - 1] = c->dv;
  type_text(tv, sizeof tv, RAF_BF16, r, dims);
  dims[r - 2] = c->lq;
  type_text(to, sizeof to, RAF_BF16, r, dims); /* out and dy */
  if (c->has_scale)
    snprintf(attrs, sizeof attrs, " {causal = %s, scale = %.17g}",
             c->causal ? "true" : "false", c->scale);
  else
    snprintf(attrs, sizeof attrs, " {causal = %s}",
             c->causal ? "true" : "false");
  if (c->backward)
    snprintf(buf, size,
             "func @f(%%dy: %s, %%q: %s, %%k: %s, %%v: %s) -> (%s, %s, %s) {\n"
             "  %%dq, %%dk, %%dv = scaled_dot_product_attention_grad(%%dy, "
             "%%q, %%k, %%v)%s\n"
             "  return %%dq, %%dk, %%dv\n"
             "}\n",
             to, tq, tk, tv, tq, tk, tv, attrs);
  else
    snprintf(buf, size,
             "func @f(%%q: %s, %%k: %s, %%v: %s) -> %s {\n"
             "  %%r = scaled_dot_product_attention(%%q, %%k, %%v)%s\n"
             "  return %%r\n"
             "}\n",
             tq, tk, tv, to, attrs);
}

/* Whether bf16 tensor got is within relative L2 error 2^-6 of want. */
static bool close_l2(const raf_tensor *got, const raf_tensor *want,
                     const char *what) {
  double err = 0, norm = 0;
  for (int64_t e = 0; e < want->type->numel; e++) {
    double x = raf_elem_get_f64(RAF_BF16, got->data, e),
           y = raf_elem_get_f64(RAF_BF16, want->data, e);
    err += (x - y) * (x - y);
    norm += y * y;
  }
  bool ok = sqrt(err) <= 0x1p-6 * sqrt(norm) + 1e-30;
  if (!ok)
    fprintf(stderr, "%s: relative L2 error %g\n", what,
            sqrt(err) / sqrt(norm));
  return ok;
}

static void run_attention_case(const attn_case *c) {
  char text[1024];
  attn_text(c, text, sizeof text);
  program one, three, ref;
  bool ok = program_open(&ref, text, "cpu-ref", 2) &&
            program_open(&one, text, "onednn,cblas,cpu-ref", 1) &&
            program_open(&three, text, "onednn,cblas,cpu-ref", 3);
  CHECK(ok);
  if (!ok)
    return;
  CHECK(strcmp(dialect_of_first(&one), "onednn") == 0);
  int nres = c->backward ? 3 : 1, nargs = c->backward ? 4 : 3;
  raf_tensor **args = random_args(&ref);
  raf_tensor **args1 = copy_args(&one, args);
  raf_tensor **args3 = copy_args(&three, args);
  raf_tensor **rr = run_all(&ref, args), **r1 = run_all(&one, args1),
             **r3 = run_all(&three, args3);
  CHECK(rr && r1 && r3);
  if (rr && r1 && r3) {
    bool good = true;
    static const char *names[] = {"out or dq", "dk", "dv"};
    for (int i = 0; i < nres; i++) {
      good &= close_l2(r1[i], rr[i], names[i]);
      good &= memcmp(r1[i]->data, r3[i]->data, r1[i]->nbytes) == 0;
    }
    if (!good)
      fprintf(stderr, "in:\n%s", text);
    CHECK(good);
  }
  program *ps[] = {&ref, &one, &three};
  raf_tensor **res[] = {rr, r1, r3}, **as[] = {args, args1, args3};
  for (int i = 0; i < 3; i++) {
    if (res[i])
      free_tensors(ps[i], res[i], nres);
    free_tensors(ps[i], as[i], nargs);
    program_close(ps[i]);
  }
}

static void test_attention(int trials) {
  static const int64_t odd[][4] = {{1, 1, 1, 1}, {7, 33, 5, 3},
                                   {33, 7, 8, 16}, {0, 5, 4, 4},
                                   {5, 0, 4, 4}, {130, 130, 16, 8},
                                   {150, 40, 8, 8}, {64, 256, 64, 64}};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
    for (int t = 0; t < 4; t++)
      run_attention_case(&(attn_case){
          .lead_rank = 2, .lead = {2, 3}, .lq = odd[i][0], .lk = odd[i][1],
          .d = odd[i][2], .dv = odd[i][3], .causal = t & 1,
          .backward = t >> 1});
  for (int t = 0; t < trials; t++) {
    attn_case c = {.lead_rank = (int)rand_int(1, 2), .backward = t & 1};
    for (int i = 0; i < c.lead_rank; i++)
      c.lead[i] = rand_int(1, 3);
    bool big = rand_int(0, 3) == 0;
    c.lq = big ? rand_int(60, 140) : rand_int(1, 12);
    c.lk = big && rand_int(0, 1) ? c.lq : rand_int(1, big ? 140 : 12);
    c.d = rand_int(1, 24);
    c.dv = rand_int(1, 24);
    c.causal = next_u64() & 1;
    c.has_scale = next_u64() & 1;
    c.scale = 0.1 + (rand_unit() + 1);
    run_attention_case(&c);
  }
}

/* ---- conv2d, pooling, batch_norm against cpu-ref ------------------------ */

/* The worst error seen per family, |got - want| / (|want| + rms(want)):
 * docs/Dialects.md states the tolerances these stay under. */
static double worst_f32[3], worst_bf16[3];
enum { FAMILY_CONV, FAMILY_POOL, FAMILY_NORM };
static const char *const family_names[] = {"conv", "pool", "batch_norm"};

/* Whether got is within tol of want, elementwise relative to |want| plus
 * the root mean square of want (sums that cancel keep the error of their
 * terms); records the worst. */
static bool close_rms(const raf_tensor *got, const raf_tensor *want,
                      double tol, double *worst, const char *what) {
  raf_dtype dt = want->type->dtype;
  int64_t n = want->type->numel;
  double sq = 0, bad = 0;
  for (int64_t e = 0; e < n; e++) {
    double y = raf_elem_get_f64(dt, want->data, e);
    sq += isnan(y) ? 0 : y * y;
  }
  double rms = n ? sqrt(sq / (double)n) : 0;
  for (int64_t e = 0; e < n; e++) {
    double x = raf_elem_get_f64(dt, got->data, e),
           y = raf_elem_get_f64(dt, want->data, e);
    if (isnan(x) && isnan(y))
      continue;
    double r = fabs(x - y) / (fabs(y) + rms + 1e-30);
    if (!(r <= bad)) /* NaN counts as bad */
      bad = r;
  }
  if (bad > *worst)
    *worst = bad;
  if (!(bad <= tol))
    fprintf(stderr, "%s: error %g over tolerance %g\n", what, bad, tol);
  return bad <= tol;
}

/* Runs text (function @f, nargs operands, nres results) on cpu-ref and on
 * onednn at 1 and 3 threads; every statement but return must bind to
 * onednn; results within tol of cpu-ref's and the same bits at 1 and 3
 * threads. fix adjusts the random arguments (or NULL). */
static void compare_with_cpuref(const char *text, int nargs, int nres,
                                double tol, int family,
                                void (*fix)(raf_tensor **args)) {
  program one, three, ref;
  bool ok = program_open(&ref, text, "cpu-ref", 2) &&
            program_open(&one, text, "onednn,cblas,cpu-ref", 1) &&
            program_open(&three, text, "onednn,cblas,cpu-ref", 3);
  CHECK(ok);
  if (!ok)
    return;
  for (const raf_stmt *s = one.m->first->first; s; s = s->next)
    if (s->op != RAF_OP_RETURN)
      CHECK(strcmp(raf_stmt_dialect_name(s), "onednn") == 0);
  raf_tensor **args = random_args(&ref);
  if (fix)
    fix(args);
  raf_tensor **args1 = copy_args(&one, args);
  raf_tensor **args3 = copy_args(&three, args);
  raf_tensor **rr = run_all(&ref, args), **r1 = run_all(&one, args1),
             **r3 = run_all(&three, args3);
  CHECK(rr && r1 && r3);
  if (rr && r1 && r3) {
    bool good = true;
    double *worst = args[0]->type->dtype == RAF_BF16 ? &worst_bf16[family]
                                                     : &worst_f32[family];
    for (int i = 0; i < nres; i++) {
      char what[64];
      snprintf(what, sizeof what, "result %d", i);
      good &= close_rms(r1[i], rr[i], tol, worst, what);
      good &= memcmp(r1[i]->data, r3[i]->data, r1[i]->nbytes) == 0;
    }
    if (!good)
      fprintf(stderr, "in:\n%s", text);
    CHECK(good);
  }
  program *ps[] = {&ref, &one, &three};
  raf_tensor **res[] = {rr, r1, r3}, **as[] = {args, args1, args3};
  for (int i = 0; i < 3; i++) {
    if (res[i])
      free_tensors(ps[i], res[i], nres);
    free_tensors(ps[i], as[i], nargs);
    program_close(ps[i]);
  }
}

/* Tolerances (close_rms's measure) of f32 and bf16 results. */
#define TOL_F32 1e-5
#define TOL_BF16 0x1p-6

typedef struct conv_case {
  raf_dtype dt;
  int64_t n, c, h, w, o, groups, kh, kw;
  int64_t stride[2], pad[2], dil[2];
} conv_case;

static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p,
                        int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* conv2d and both gradients of one case. */
static void run_conv_case(const conv_case *c) {
  int64_t oh = conv_out(c->h, c->kh, c->stride[0], c->pad[0], c->dil[0]),
          ow = conv_out(c->w, c->kw, c->stride[1], c->pad[1], c->dil[1]);
  int64_t xd[4] = {c->n, c->c, c->h, c->w},
          wd[4] = {c->o, c->c / c->groups, c->kh, c->kw},
          yd[4] = {c->n, c->o, oh, ow};
  char tx[64], tw[64], ty[64], attrs[256], text[2048];
  type_text(tx, sizeof tx, c->dt, 4, xd);
  type_text(tw, sizeof tw, c->dt, 4, wd);
  type_text(ty, sizeof ty, c->dt, 4, yd);
  snprintf(attrs, sizeof attrs,
           "stride = [%lld, %lld], padding = [%lld, %lld], "
           "dilation = [%lld, %lld], groups = %lld",
           (long long)c->stride[0], (long long)c->stride[1],
           (long long)c->pad[0], (long long)c->pad[1], (long long)c->dil[0],
           (long long)c->dil[1], (long long)c->groups);
  snprintf(text, sizeof text,
           "func @f(%%x: %s, %%w: %s, %%dy: %s) -> (%s, %s, %s) {\n"
           "  %%y = conv2d(%%x, %%w) {%s}\n"
           "  %%dx = conv2d_grad_input(%%dy, %%w) {%s, shape = [%lld, %lld, "
           "%lld, %lld]}\n"
           "  %%dw = conv2d_grad_weight(%%dy, %%x) {%s, shape = [%lld, %lld, "
           "%lld, %lld]}\n"
           "  return %%y, %%dx, %%dw\n"
           "}\n",
           tx, tw, ty, ty, tx, tw, attrs, attrs, (long long)xd[0],
           (long long)xd[1], (long long)xd[2], (long long)xd[3], attrs,
           (long long)wd[0], (long long)wd[1], (long long)wd[2],
           (long long)wd[3]);
  compare_with_cpuref(text, 3, 3, c->dt == RAF_BF16 ? TOL_BF16 : TOL_F32,
                      FAMILY_CONV, NULL);
}

static void test_conv(int trials) {
  /* ResNet's shapes (small batches), a 1x1 downsample, a depthwise
   * convolution, batch 1, odd sizes, a last row of the input never read,
   * an empty batch. */
  static const conv_case fixed[] = {
      {RAF_F32, 2, 3, 32, 32, 16, 1, 7, 7, {2, 2}, {3, 3}, {1, 1}},
      {RAF_F32, 4, 64, 8, 8, 64, 1, 3, 3, {1, 1}, {1, 1}, {1, 1}},
      {RAF_F32, 3, 512, 3, 3, 512, 1, 3, 3, {1, 1}, {1, 1}, {1, 1}},
      {RAF_F32, 4, 64, 8, 8, 128, 1, 1, 1, {2, 2}, {0, 0}, {1, 1}},
      {RAF_F32, 2, 32, 9, 9, 32, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}},
      {RAF_F32, 1, 5, 7, 11, 3, 1, 2, 3, {2, 3}, {0, 1}, {2, 1}},
      {RAF_F32, 5, 6, 7, 7, 4, 2, 2, 2, {2, 2}, {0, 0}, {1, 1}},
      {RAF_BF16, 2, 64, 8, 8, 64, 1, 3, 3, {1, 1}, {1, 1}, {1, 1}},
      {RAF_BF16, 2, 3, 16, 16, 16, 1, 7, 7, {2, 2}, {3, 3}, {1, 1}},
      {RAF_F32, 0, 4, 5, 5, 4, 1, 3, 3, {1, 1}, {1, 1}, {1, 1}},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    run_conv_case(&fixed[i]);
  for (int t = 0; t < trials; t++) {
    conv_case c = {.dt = t % 4 == 3 ? RAF_BF16 : RAF_F32};
    c.groups = rand_int(0, 2) ? 1 : rand_int(1, 4);
    c.n = rand_int(1, 5);
    c.c = c.groups * rand_int(1, 12);
    c.o = c.groups * rand_int(1, 12);
    for (int d = 0; d < 2; d++) {
      int64_t k = rand_int(1, 5), dil = rand_int(0, 3) ? 1 : rand_int(1, 3);
      int64_t pad = rand_int(0, 2), stride = rand_int(1, 3);
      int64_t in = rand_int(1, 14);
      if (in + 2 * pad < dil * (k - 1) + 1) /* the kernel must fit */
        in = dil * (k - 1) + 1;
      c.stride[d] = stride;
      c.pad[d] = pad;
      c.dil[d] = dil;
      *(d ? &c.kw : &c.kh) = k;
      *(d ? &c.w : &c.h) = in;
    }
    run_conv_case(&c);
  }
}

typedef struct pool_case {
  raf_dtype dt;
  int64_t n, c, h, w, kernel[2], stride[2], pad[2];
  bool ties; /* x takes few values: windows with equal maxima */
  bool nans; /* some of x is NaN: it wins its windows */
} pool_case;

/* Every 13th element of x (the first argument) NaN. */
static void make_nans(raf_tensor **args) {
  raf_tensor *x = args[0];
  for (int64_t e = 0; e < x->type->numel; e += 13)
    raf_elem_set_f64(x->type->dtype, x->data, e, NAN);
}

/* x (the first argument) rounded to multiples of 1/2: ties. */
static void make_ties(raf_tensor **args) {
  raf_tensor *x = args[0];
  for (int64_t e = 0; e < x->type->numel; e++)
    raf_elem_set_f64(x->type->dtype, x->data, e,
                     floor(2 * raf_elem_get_f64(x->type->dtype, x->data, e)) /
                         2);
}

/* Both poolings and their gradients of one case. */
static void run_pool_case(const pool_case *c) {
  int64_t oh = (c->h + 2 * c->pad[0] - c->kernel[0]) / c->stride[0] + 1,
          ow = (c->w + 2 * c->pad[1] - c->kernel[1]) / c->stride[1] + 1;
  int64_t xd[4] = {c->n, c->c, c->h, c->w}, yd[4] = {c->n, c->c, oh, ow};
  char tx[64], ty[64], attrs[160], text[2048];
  type_text(tx, sizeof tx, c->dt, 4, xd);
  type_text(ty, sizeof ty, c->dt, 4, yd);
  snprintf(attrs, sizeof attrs,
           "kernel = [%lld, %lld], stride = [%lld, %lld], "
           "padding = [%lld, %lld]",
           (long long)c->kernel[0], (long long)c->kernel[1],
           (long long)c->stride[0], (long long)c->stride[1],
           (long long)c->pad[0], (long long)c->pad[1]);
  snprintf(text, sizeof text,
           "func @f(%%x: %s, %%dy: %s) -> (%s, %s, %s, %s) {\n"
           "  %%m = max_pool2d(%%x) {%s}\n"
           "  %%a = avg_pool2d(%%x) {%s}\n"
           "  %%dm = max_pool2d_grad(%%dy, %%x) {%s}\n"
           "  %%da = avg_pool2d_grad(%%dy) {%s, shape = [%lld, %lld, %lld, "
           "%lld]}\n"
           "  return %%m, %%a, %%dm, %%da\n"
           "}\n",
           tx, ty, ty, ty, tx, tx, attrs, attrs, attrs, attrs,
           (long long)xd[0], (long long)xd[1], (long long)xd[2],
           (long long)xd[3]);
  compare_with_cpuref(text, 2, 4, c->dt == RAF_BF16 ? TOL_BF16 : TOL_F32,
                      FAMILY_POOL,
                      c->nans ? make_nans : c->ties ? make_ties : NULL);
}

static void test_pool(int trials) {
  /* ResNet's max pool (3x3, stride 2, padding 1) and global average pool,
   * a last row never read, batch 1, ties, NaNs, an empty batch. */
  static const pool_case fixed[] = {
      {RAF_F32, 2, 8, 16, 16, {3, 3}, {2, 2}, {1, 1}, false, false},
      {RAF_F32, 3, 16, 7, 7, {7, 7}, {1, 1}, {0, 0}, false, false},
      {RAF_F32, 1, 3, 7, 9, {2, 2}, {2, 2}, {0, 0}, false, false},
      {RAF_F32, 2, 4, 9, 9, {3, 3}, {2, 2}, {1, 1}, true, false},
      {RAF_BF16, 2, 8, 16, 16, {3, 3}, {2, 2}, {1, 1}, false, false},
      {RAF_BF16, 2, 4, 9, 9, {3, 3}, {2, 2}, {1, 1}, true, false},
      {RAF_F32, 3, 4, 9, 9, {3, 3}, {2, 2}, {1, 1}, false, true},
      {RAF_BF16, 3, 4, 9, 9, {3, 3}, {2, 2}, {1, 1}, false, true},
      {RAF_F32, 0, 4, 9, 9, {3, 3}, {2, 2}, {1, 1}, false, false},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    run_pool_case(&fixed[i]);
  for (int t = 0; t < trials; t++) {
    pool_case c = {.dt = t % 4 == 3 ? RAF_BF16 : RAF_F32,
                   .n = rand_int(1, 5), .c = rand_int(1, 9),
                   .ties = rand_int(0, 2) == 0};
    for (int d = 0; d < 2; d++) {
      c.kernel[d] = rand_int(1, 5);
      c.stride[d] = rand_int(1, 3);
      c.pad[d] = rand_int(0, c.kernel[d] / 2);
      int64_t in = rand_int(1, 15);
      *(d ? &c.w : &c.h) = in < c.kernel[d] ? c.kernel[d] : in;
    }
    run_pool_case(&c);
  }
}

/* The running variance (argument 4) positive. */
static void positive_variance(raf_tensor **args) {
  raf_tensor *v = args[4];
  for (int64_t e = 0; e < v->type->numel; e++)
    raf_elem_set_f64(RAF_F32, v->data, e,
                     fabs(raf_elem_get_f64(RAF_F32, v->data, e)) + 0.1);
}

/* batch_norm and its gradient on x of rank `rank`, training or not. */
static void run_bn_case(int rank, const int64_t *dims, bool training,
                        double momentum, double eps) {
  char tx[64], tc[64], text[2048];
  type_text(tx, sizeof tx, RAF_F32, rank, dims);
  type_text(tc, sizeof tc, RAF_F32, 1, &dims[1]);
  snprintf(text, sizeof text,
           "func @f(%%x: %s, %%gamma: %s, %%beta: %s, %%mean: %s, %%var: %s, "
           "%%dy: %s) -> (%s, %s, %s, %s, %s, %s) {\n"
           "  %%y, %%nm, %%nv = batch_norm(%%x, %%gamma, %%beta, %%mean, "
           "%%var) {eps = %.17g, momentum = %.17g, training = %s}\n"
           "  %%dx, %%dg, %%db = batch_norm_grad(%%dy, %%x, %%gamma, %%mean, "
           "%%var) {eps = %.17g, training = %s}\n"
           "  return %%y, %%nm, %%nv, %%dx, %%dg, %%db\n"
           "}\n",
           tx, tc, tc, tc, tc, tx, tx, tc, tc, tx, tc, tc, eps, momentum,
           training ? "true" : "false", eps, training ? "true" : "false");
  compare_with_cpuref(text, 6, 6, TOL_F32, FAMILY_NORM, positive_variance);
}

static void test_batch_norm(int trials) {
  static const int64_t resnet[] = {4, 64, 14, 14}, fc[] = {5, 7},
                       seq[] = {3, 6, 11}, big[] = {2, 300, 30, 30};
  static const int64_t empty[] = {0, 3, 4, 4};
  run_bn_case(4, empty, false, 0.1, 1e-5);
  for (int training = 0; training < 2; training++) {
    run_bn_case(4, resnet, training, 0.1, 1e-5);
    run_bn_case(2, fc, training, 0.1, 1e-5);
    run_bn_case(3, seq, training, 0.3, 1e-3);
    run_bn_case(4, big, training, 0.1, 1e-5);
  }
  for (int t = 0; t < trials; t++) {
    int rank = (int)rand_int(2, 4);
    int64_t dims[4];
    for (int d = 0; d < rank; d++)
      dims[d] = rand_int(1, d == 1 ? 40 : 9);
    /* Training wants two values per channel; with two, dx is a
     * difference of equal terms (zero but for eps), and its error
     * measured against its own tiny rms says little: four at least. */
    if (dims[0] * (rank > 2 ? dims[2] : 1) * (rank > 3 ? dims[3] : 1) < 4)
      dims[0] = 4;
    run_bn_case(rank, dims, t & 1, 0.1 * (double)rand_int(0, 10), 1e-5);
  }
}

/* f32 and f16 matmuls stay with cblas (oneDNN 2.6 has no f16 on the CPU). */
static void test_dispatch(void) {
  static const raf_dtype others[] = {RAF_F32, RAF_F16};
  char text[1024];
  mm_case c = plain(false, false, 4, 4, 4);
  for (int i = 0; i < 2; i++) {
    mm_text(&c, others[i], text, sizeof text);
    program p;
    bool ok = program_open(&p, text, "onednn,cblas,cpu-ref", 1);
    CHECK(ok);
    if (ok)
      CHECK(strcmp(dialect_of_first(&p), "cblas") == 0);
    program_close(&p);
  }
}

/* Twelve statements of two shapes share two primitives. */
static void test_primitive_cache(void) {
  char text[4096];
  int n = snprintf(text, sizeof text,
                   "func @f(%%x: bf16[512,64], %%w: bf16[64,64], "
                   "%%v: bf16[64,48]) -> bf16[512,48] {\n"
                   "  %%h0 = matmul(%%x, %%w)\n");
  for (int i = 1; i < 11; i++)
    n += snprintf(text + n, sizeof text - (size_t)n,
                  "  %%h%d = matmul(%%h%d, %%w)\n", i, i - 1);
  snprintf(text + n, sizeof text - (size_t)n,
           "  %%r = matmul(%%h10, %%v)\n  return %%r\n}\n");
  program p;
  bool ok = program_open(&p, text, "onednn,cpu-ref", 2);
  CHECK(ok);
  if (ok)
    CHECK(raf_onednn_primitives(p.ex) == 2);
  program_close(&p);
}

/* bf16 batch_norm stays with cpu-ref (onednn's is f32 only), and two
 * convolutions of one shape share one primitive (a third of another
 * stride has its own). */
static void test_conv_dispatch_and_cache(void) {
  const char *bn = "func @f(%x: bf16[2,3,4,4], %g: bf16[3], %b: bf16[3], "
                   "%m: bf16[3], %v: bf16[3]) -> bf16[2,3,4,4] {\n"
                   "  %y, %nm, %nv = batch_norm(%x, %g, %b, %m, %v)\n"
                   "  return %y\n}\n";
  program p;
  bool ok = program_open(&p, bn, "onednn,cblas,cpu-ref", 1);
  CHECK(ok);
  if (ok)
    CHECK(strcmp(dialect_of_first(&p), "cpu-ref") == 0);
  program_close(&p);
  const char *convs =
      "func @f(%x: f32[2,8,9,9], %w: f32[8,8,3,3]) -> f32[2,8,4,4] {\n"
      "  %a = conv2d(%x, %w) {padding = [1, 1]}\n"
      "  %b = conv2d(%a, %w) {padding = [1, 1]}\n"
      "  %c = conv2d(%b, %w) {stride = [2, 2]}\n"
      "  return %c\n}\n";
  ok = program_open(&p, convs, "onednn,cpu-ref", 2);
  CHECK(ok);
  if (ok)
    CHECK(raf_onednn_primitives(p.ex) == 2);
  program_close(&p);
}

/* A build without oneDNN: the dialect is refused, saying why. */
static void test_refused(const char *why) {
  const char *text = "func @f(%a: bf16[2,2], %b: bf16[2,2]) -> bf16[2,2] {\n"
                     "  %r = matmul(%a, %b) {dialect = \"onednn\"}\n"
                     "  return %r\n}\n";
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, "refused.raf", text, strlen(text), 1);
  CHECK(m && raf_verify_module(ctx, m) == RAF_OK);
  raf_exec *ex = m ? raf_exec_create(ctx, m, NULL) : NULL;
  CHECK(ex == NULL);
  char *rendered = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&rendered, &len);
  raf_diag_render(ctx, out);
  fclose(out);
  CHECK(rendered && strstr(rendered, why) != NULL);
  free(rendered);
  raf_exec_destroy(ex);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

int main(void) {
  const char *why = raf_dialect_unavailable(RAF_DIALECT_ONEDNN);
  if (why) {
    test_refused(why);
    printf("test_onednn: skipped: %s\n", why);
    return failures ? 1 : SKIPPED;
  }
  test_dispatch();
  test_primitive_cache();
  test_fixed_shapes();
  test_random_shapes(60);
  test_attention(40);
  test_conv_dispatch_and_cache();
  test_conv(60);
  test_pool(60);
  test_batch_norm(40);
  for (int f = 0; f < 3; f++)
    printf("test_onednn: %s: worst error f32 %.3g, bf16 %.3g\n",
           family_names[f], worst_f32[f], worst_bf16[f]);
  if (failures)
    fprintf(stderr, "test_onednn: %d failures\n", failures);
  return failures != 0;
}
