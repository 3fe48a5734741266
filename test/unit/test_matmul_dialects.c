/* test_matmul_dialects.c: property tests of the matmul and attention
 * kernels over many random shapes, transpose flags, batch broadcasts and
 * attributes, each module built from text as a user writes it, dispatched
 * by the dispatch pass and run through the executor:
 *   - cpu-ref's matmul matches a naive reference in every NUMBERS dtype
 *     (floats summed in double, within a tolerance scaled by sum |a b|;
 *     integers exactly, wrapped to their width);
 *   - with `cblas,cpu-ref` the dispatch pass binds every float dtype
 *     (f64, f32, bf16, f16) to cblas (and the integers to cpu-ref), and
 *     its results agree with cpu-ref's and the reference's within the
 *     same tolerance;
 *   - cpu-ref's results are bit-identical at 1 and 3 threads;
 *   - cpu-ref's attention matches a naive double softmax(q k^T s) v with
 *     PyTorch's causal mask (keys j <= i, top-left aligned), bit-identical
 *     at 1 and 3 threads; with `cblas,cpu-ref` f32, bf16 and f16 bind to
 *     cblas, which matches the same reference, at 1 and 3 threads
 *     bit-identically;
 *   - cblas's scaled_dot_product_attention_grad (f32, bf16, f16) agrees
 *     with cpu-ref's (computed in double) within float rounding and one
 *     rounding of the result to the dtype, over shapes that span several
 *     64-row blocks, causal or not, and is bit-identical at 1 and 3
 *     threads.
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

static const raf_dtype NUMBERS[] = {RAF_F64, RAF_F32, RAF_F16, RAF_BF16,
                                    RAF_I64, RAF_I32, RAF_I8,  RAF_U8};

/* Relative rounding error of a storage dtype, and of the working type its
 * kernels accumulate in (cpuref.h). */
static double store_eps(raf_dtype dt) {
  switch (dt) {
  case RAF_F64: return 0x1p-52;
  case RAF_F32: return 0x1p-23;
  case RAF_F16: return 0x1p-10;
  default: return 0x1p-7; /* bf16 */
  }
}

static double work_eps(raf_dtype dt) {
  return dt == RAF_F64 ? 0x1p-52 : 0x1p-23;
}

/* ---- matmul --------------------------------------------------------------- */

typedef struct mm_case {
  raf_dtype dt;
  bool ta, tb;
  int64_t m, k, n;
  int ra, rb, ro; /* batch ranks of a, b and the result */
  int64_t ba[3], bb[3], bo[3];
} mm_case;

static void random_mm_case(mm_case *c, raf_dtype dt) {
  memset(c, 0, sizeof *c);
  c->dt = dt;
  c->ta = next_u64() & 1;
  c->tb = next_u64() & 1;
  int64_t *mkn[] = {&c->m, &c->k, &c->n};
  for (int i = 0; i < 3; i++) {
    int64_t roll = rand_int(0, 19);
    *mkn[i] = roll == 0 ? 0 : rand_int(1, 9);
  }
  if (rand_int(0, 9) == 0)
    c->n = rand_int(250, 300); /* more than one tile of output columns */
  /* Batch dims: each operand keeps a suffix of the result's, some set to 1. */
  c->ro = (int)rand_int(0, 3);
  for (int d = 0; d < c->ro; d++)
    c->bo[d] = rand_int(1, 3);
  c->ra = (int)rand_int(0, c->ro);
  c->rb = (int)rand_int(0, c->ro);
  for (int d = 0; d < c->ra; d++)
    c->ba[d] = rand_int(0, 2) ? c->bo[c->ro - c->ra + d] : 1;
  for (int d = 0; d < c->rb; d++)
    c->bb[d] = rand_int(0, 2) ? c->bo[c->ro - c->rb + d] : 1;
  /* The result's batch is what the operands broadcast to: as many dims as
   * the longer operand batch. */
  int drop = c->ro - (c->ra > c->rb ? c->ra : c->rb);
  c->ro -= drop;
  memmove(c->bo, c->bo + drop, (size_t)c->ro * sizeof *c->bo);
  for (int d = 0; d < c->ro; d++) {
    int da = d - (c->ro - c->ra), db = d - (c->ro - c->rb);
    int64_t x = da >= 0 ? c->ba[da] : 1, y = db >= 0 ? c->bb[db] : 1;
    c->bo[d] = x > y ? x : y;
  }
  if (rand_int(0, 30) == 0 && c->ro > 0) { /* an empty batch, from a */
    c->ra = c->ro;
    memcpy(c->ba, c->bo, sizeof c->ba);
    c->ba[0] = c->bo[0] = 0;
    if (c->rb == c->ro)
      c->bb[0] = 1;
  }
}

static void mm_text(const mm_case *c, char *buf, size_t size) {
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
  type_text(ta, sizeof ta, c->dt, c->ra + 2, da);
  type_text(tb, sizeof tb, c->dt, c->rb + 2, db);
  type_text(to, sizeof to, c->dt, c->ro + 2, dout);
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

/* Checks result r against the naive reference; returns false on the first
 * mismatch (printed). */
static bool mm_check(const mm_case *c, raf_tensor *const *args,
                     const raf_tensor *r, const char *who) {
  raf_dtype dt = c->dt;
  int64_t nbatch = 1;
  for (int d = 0; d < c->ro; d++)
    nbatch *= c->bo[d];
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t ao = batch_offset(c, bi, c->ra, c->ba, c->m * c->k);
    int64_t bo = batch_offset(c, bi, c->rb, c->bb, c->k * c->n);
    for (int64_t i = 0; i < c->m; i++)
      for (int64_t j = 0; j < c->n; j++) {
        int64_t oe = (bi * c->m + i) * c->n + j;
        double sum = 0, abs_sum = 0;
        uint64_t isum = 0;
        for (int64_t kk = 0; kk < c->k; kk++) {
          int64_t ae = ao + (c->ta ? kk * c->m + i : i * c->k + kk);
          int64_t be = bo + (c->tb ? j * c->k + kk : kk * c->n + j);
          if (raf_dtype_is_float(dt)) {
            double p = raf_elem_get_f64(dt, args[0]->data, ae) *
                       raf_elem_get_f64(dt, args[1]->data, be);
            sum += p;
            abs_sum += fabs(p);
          } else {
            isum += (uint64_t)raf_elem_get_i64(dt, args[0]->data, ae) *
                    (uint64_t)raf_elem_get_i64(dt, args[1]->data, be);
          }
        }
        bool ok;
        double got;
        if (raf_dtype_is_float(dt)) {
          got = raf_elem_get_f64(dt, r->data, oe);
          double tol = (double)(c->k + 1) * work_eps(dt) * abs_sum +
                       store_eps(dt) * fabs(sum) + 1e-300;
          ok = fabs(got - sum) <= tol;
        } else {
          int64_t wrapped; /* the exact sum, wrapped to the dtype's width */
          char cell[8];
          raf_elem_set_i64(dt, cell, 0, (int64_t)isum);
          wrapped = raf_elem_get_i64(dt, cell, 0);
          got = (double)raf_elem_get_i64(dt, r->data, oe);
          ok = raf_elem_get_i64(dt, r->data, oe) == wrapped;
          sum = (double)wrapped;
        }
        if (!ok) {
          fprintf(stderr, "%s: element %lld is %.17g, expected %.17g\n", who,
                  (long long)oe, got, sum);
          return false;
        }
      }
  }
  return true;
}

static void test_matmul(int trials) {
  char text[1024];
  int ran_cblas = 0;
  for (int t = 0; t < trials; t++) {
    mm_case c;
    random_mm_case(&c, NUMBERS[t % 8]);
    mm_text(&c, text, sizeof text);
    program ref, ref3, blas;
    bool ok = program_open(&ref, text, "cpu-ref", 1) &&
              program_open(&ref3, text, "cpu-ref", 3) &&
              program_open(&blas, text, "cblas,cpu-ref", 2);
    CHECK(ok);
    if (!ok)
      return; /* the programs leak; the test has failed anyway */
    bool blas_dt = raf_dtype_is_float(c.dt);
    CHECK(strcmp(dialect_of_first(&ref), "cpu-ref") == 0);
    CHECK(strcmp(dialect_of_first(&blas), blas_dt ? "cblas" : "cpu-ref") == 0);
    ran_cblas += blas_dt;

    raf_tensor **args = random_args(&ref);
    raf_tensor **args3 = copy_args(&ref3, args);
    raf_tensor **argsb = copy_args(&blas, args);
    raf_tensor *r1 = run_one(&ref, args), *r3 = run_one(&ref3, args3),
               *rb = run_one(&blas, argsb);
    CHECK(r1 && r3 && rb);
    if (r1 && r3 && rb) {
      bool good = mm_check(&c, args, r1, "cpu-ref");
      CHECK(memcmp(r1->data, r3->data, r1->nbytes) == 0); /* 1 vs 3 threads */
      good &= mm_check(&c, args, rb, blas_dt ? "cblas" : "cpu-ref (2)");
      /* The two dialects agree with each other as with the reference. */
      for (int64_t e = 0; raf_dtype_is_float(c.dt) && e < r1->type->numel;
           e++) {
        double x = raf_elem_get_f64(c.dt, r1->data, e),
               y = raf_elem_get_f64(c.dt, rb->data, e);
        good &= fabs(x - y) <= 4 * store_eps(c.dt) * (fabs(x) + 1) *
                                   (double)(c.k + 1);
      }
      if (!good)
        fprintf(stderr, "in trial %d:\n%s", t, text);
      CHECK(good);
    }
    if (r1)
      raf_exec_free(ref.ex, r1);
    if (r3)
      raf_exec_free(ref3.ex, r3);
    if (rb)
      raf_exec_free(blas.ex, rb);
    free_tensors(&ref, args, 2);
    free_tensors(&ref3, args3, 2);
    free_tensors(&blas, argsb, 2);
    program_close(&ref);
    program_close(&ref3);
    program_close(&blas);
  }
  CHECK(ran_cblas > trials / 4);
}

/* ---- attention ------------------------------------------------------------ */

typedef struct attn_case {
  raf_dtype dt;
  int lead_rank;
  int64_t lead[3], lq, lk, d, dv;
  bool causal, has_scale;
  double scale;
} attn_case;

static void attn_text(const attn_case *c, char *buf, size_t size) {
  int64_t dims[5];
  char tq[64], tk[64], tv[64], to[64], attrs[96] = "";
  int r = c->lead_rank + 2;
  memcpy(dims, c->lead, sizeof c->lead);
  dims[r - 2] = c->lq, dims[r - 1] = c->d;
  type_text(tq, sizeof tq, c->dt, r, dims);
  dims[r - 2] = c->lk;
  type_text(tk, sizeof tk, c->dt, r, dims);
  dims[r - 1] = c->dv;
  type_text(tv, sizeof tv, c->dt, r, dims);
  dims[r - 2] = c->lq;
  type_text(to, sizeof to, c->dt, r, dims);
  if (c->has_scale)
    snprintf(attrs, sizeof attrs, " {causal = %s, scale = %.17g}",
             c->causal ? "true" : "false", c->scale);
  else if (c->causal)
    snprintf(attrs, sizeof attrs, " {causal}");
  snprintf(buf, size,
           "func @f(%%q: %s, %%k: %s, %%v: %s) -> %s {\n"
           "  %%r = scaled_dot_product_attention(%%q, %%k, %%v)%s\n"
           "  return %%r\n"
           "}\n",
           tq, tk, tv, to, attrs);
}

static bool attn_check(const attn_case *c, raf_tensor *const *args,
                       const raf_tensor *r) {
  raf_dtype dt = c->dt;
  int64_t nbatch = 1;
  for (int i = 0; i < c->lead_rank; i++)
    nbatch *= c->lead[i];
  double scale = c->has_scale ? c->scale : 1 / sqrt((double)c->d);
  double *p = malloc((size_t)(c->lk + 1) * sizeof *p);
  bool ok = true;
  for (int64_t b = 0; b < nbatch && ok; b++)
    for (int64_t i = 0; i < c->lq && ok; i++) {
      int64_t nk = c->causal && i + 1 < c->lk ? i + 1 : c->lk;
      double top = -INFINITY, total = 0, vmax = 0;
      for (int64_t j = 0; j < nk; j++) {
        double s = 0;
        for (int64_t e = 0; e < c->d; e++)
          s += raf_elem_get_f64(dt, args[0]->data, (b * c->lq + i) * c->d + e) *
               raf_elem_get_f64(dt, args[1]->data, (b * c->lk + j) * c->d + e);
        p[j] = s * scale;
        top = p[j] > top ? p[j] : top;
      }
      for (int64_t j = 0; j < nk; j++)
        total += p[j] = exp(p[j] - top);
      for (int64_t e = 0; e < c->dv && ok; e++) {
        double want = 0;
        for (int64_t j = 0; j < nk; j++) {
          double v = raf_elem_get_f64(dt, args[2]->data,
                                      (b * c->lk + j) * c->dv + e);
          want += p[j] / total * v;
          vmax = fabs(v) > vmax ? fabs(v) : vmax;
        }
        int64_t oe = (b * c->lq + i) * c->dv + e;
        double got = raf_elem_get_f64(dt, r->data, oe);
        double tol = store_eps(dt) * fabs(want) +
                     200 * work_eps(dt) * (double)(c->d + c->lk + 1) *
                         (vmax + 1);
        if (!(fabs(got - want) <= tol)) {
          fprintf(stderr, "attention: element %lld is %.17g, expected %.17g\n",
                  (long long)oe, got, want);
          ok = false;
        }
      }
    }
  free(p);
  return ok;
}

static void test_attention(int trials) {
  static const raf_dtype FLOATS[] = {RAF_F64, RAF_F32, RAF_F16, RAF_BF16};
  char text[1024];
  int ran_cblas = 0;
  for (int t = 0; t < trials; t++) {
    attn_case c = {.dt = FLOATS[t % 4]};
    c.lead_rank = (int)rand_int(1, 3);
    for (int i = 0; i < c.lead_rank; i++)
      c.lead[i] = rand_int(1, 3);
    c.lq = rand_int(0, 9);
    c.lk = rand_int(0, 9);
    if (rand_int(0, 9) == 0) { /* several blocks of query rows */
      c.lq = rand_int(60, 140);
      c.lk = rand_int(0, 2) ? c.lq : rand_int(1, 140);
    }
    c.d = rand_int(1, 8);
    c.dv = rand_int(1, 8);
    c.causal = next_u64() & 1;
    c.has_scale = next_u64() & 1;
    c.scale = 0.1 + 2 * (rand_unit() + 1);
    attn_text(&c, text, sizeof text);
    program ref, ref3, blas, blas3;
    bool ok = program_open(&ref, text, "cpu-ref", 1) &&
              program_open(&ref3, text, "cpu-ref", 3) &&
              program_open(&blas, text, "cblas,cpu-ref", 1) &&
              program_open(&blas3, text, "cblas,cpu-ref", 3);
    CHECK(ok);
    if (!ok)
      return;
    bool blas_dt = c.dt != RAF_F64;
    CHECK(strcmp(dialect_of_first(&blas), blas_dt ? "cblas" : "cpu-ref") == 0);
    ran_cblas += blas_dt;
    raf_tensor **args = random_args(&ref);
    raf_tensor **args3 = copy_args(&ref3, args);
    raf_tensor **argsb = copy_args(&blas, args);
    raf_tensor **argsb3 = copy_args(&blas3, args);
    raf_tensor *r1 = run_one(&ref, args), *r3 = run_one(&ref3, args3);
    raf_tensor *b1 = run_one(&blas, argsb), *b3 = run_one(&blas3, argsb3);
    CHECK(r1 && r3 && b1 && b3);
    if (r1 && r3 && b1 && b3) {
      bool good = attn_check(&c, args, r1) && attn_check(&c, args, b1);
      good &= memcmp(r1->data, r3->data, r1->nbytes) == 0;
      good &= memcmp(b1->data, b3->data, b1->nbytes) == 0;
      if (!good)
        fprintf(stderr, "in trial %d:\n%s", t, text);
      CHECK(good);
    }
    raf_tensor *res[] = {r1, r3, b1, b3};
    program *ps[] = {&ref, &ref3, &blas, &blas3};
    raf_tensor **as[] = {args, args3, argsb, argsb3};
    for (int i = 0; i < 4; i++) {
      if (res[i])
        raf_exec_free(ps[i]->ex, res[i]);
      free_tensors(ps[i], as[i], 3);
      program_close(ps[i]);
    }
  }
  CHECK(ran_cblas > trials / 2);
}

/* scaled_dot_product_attention_grad in f32, bf16 and f16: cblas against
 * cpu-ref. */
static void test_attention_grad(int trials) {
  static const raf_dtype DTS[] = {RAF_F32, RAF_BF16, RAF_F16};
  char text[2048];
  for (int t = 0; t < trials; t++) {
    attn_case c = {.dt = DTS[t % 3]};
    c.lead_rank = (int)rand_int(1, 2);
    for (int i = 0; i < c.lead_rank; i++)
      c.lead[i] = rand_int(1, 3);
    bool big = rand_int(0, 3) == 0;
    c.lq = big ? rand_int(60, 140) : rand_int(0, 9);
    c.lk = big && rand_int(0, 1) ? c.lq : rand_int(0, big ? 140 : 9);
    c.d = rand_int(1, 8);
    c.dv = rand_int(1, 8);
    c.causal = next_u64() & 1;
    c.has_scale = next_u64() & 1;
    c.scale = 0.1 + (rand_unit() + 1);
    int64_t dims[5];
    char tq[64], tk[64], tv[64], ty[64], attrs[96] = "";
    int r = c.lead_rank + 2;
    memcpy(dims, c.lead, sizeof c.lead);
    dims[r - 2] = c.lq, dims[r - 1] = c.d;
    type_text(tq, sizeof tq, c.dt, r, dims);
    dims[r - 2] = c.lk;
    type_text(tk, sizeof tk, c.dt, r, dims);
    dims[r - 1] = c.dv;
    type_text(tv, sizeof tv, c.dt, r, dims);
    dims[r - 2] = c.lq;
    type_text(ty, sizeof ty, c.dt, r, dims);
    snprintf(attrs, sizeof attrs, " {causal = %s, scale = %.17g}",
             c.causal ? "true" : "false",
             c.has_scale ? c.scale : 1 / sqrt((double)c.d));
    snprintf(text, sizeof text,
             "func @f(%%dy: %s, %%q: %s, %%k: %s, %%v: %s) -> (%s, %s, %s) {\n"
             "  %%dq, %%dk, %%dv = scaled_dot_product_attention_grad(%%dy, "
             "%%q, %%k, %%v)%s\n"
             "  return %%dq, %%dk, %%dv\n"
             "}\n",
             ty, tq, tk, tv, tq, tk, tv, attrs);
    program ref, blas, blas3;
    bool ok = program_open_cblas_trio(&ref, &blas, &blas3, text);
    CHECK(ok);
    if (!ok)
      return;
    CHECK(strcmp(dialect_of_first(&blas), "cblas") == 0);
    raf_tensor **args = random_args(&ref);
    raf_tensor **argsb = copy_args(&blas, args);
    raf_tensor **argsb3 = copy_args(&blas3, args);
    raf_tensor **want = run_all(&ref, args), **got = run_all(&blas, argsb),
               **got3 = run_all(&blas3, argsb3);
    CHECK(want && got && got3);
    if (want && got && got3) {
      bool good = true;
      /* Each gradient element is a sum of about lq + lk products of
       * O(1) values through a softmax; float rounding in every step. */
      double tol = 4e-7 * (double)(c.lq + c.lk + c.d + c.dv + 1) *
                   (1 + (c.has_scale ? c.scale : 1));
      /* bf16 and f16: both sides round their result once (an ulp of the
       * dtype between them when the float values straddle a rounding
       * boundary). */
      if (c.dt != RAF_F32)
        tol = 2 * store_eps(c.dt) + 2 * tol;
      for (int i = 0; i < 3; i++) {
        good &= memcmp(got[i]->data, got3[i]->data, got[i]->nbytes) == 0;
        for (int64_t e = 0; e < got[i]->type->numel; e++) {
          double x = raf_elem_get_f64(c.dt, want[i]->data, e),
                 y = raf_elem_get_f64(c.dt, got[i]->data, e);
          if (!(fabs(x - y) <= tol * (1 + fabs(x)))) {
            fprintf(stderr, "attention_grad: result %d element %lld is "
                    "%.9g, cpu-ref %.9g\n", i, (long long)e, y, x);
            good = false;
            break;
          }
        }
      }
      if (!good)
        fprintf(stderr, "in trial %d:\n%s", t, text);
      CHECK(good);
    }
    free_tensors(&ref, want, want ? 3 : 0);
    free_tensors(&blas, got, got ? 3 : 0);
    free_tensors(&blas3, got3, got3 ? 3 : 0);
    free_tensors(&ref, args, 4);
    free_tensors(&blas, argsb, 4);
    free_tensors(&blas3, argsb3, 4);
    program_close(&ref);
    program_close(&blas);
    program_close(&blas3);
  }
}

int main(void) {
  test_matmul(400);
  test_attention(200);
  test_attention_grad(120);
  if (failures)
    fprintf(stderr, "test_matmul_dialects: %d failures\n", failures);
  return failures != 0;
}
