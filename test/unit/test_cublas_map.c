/* test_cublas_map.c: the cublas dialect's logic that runs without a GPU.
 *
 * The mapping of matmul onto cuBLASLt's column-major GEMMs
 * (runtime/cublas_map.h): for shapes with both transposes, batches,
 * broadcast batches (some dims only, which needs the outer loop) and the
 * folded batch, a host column-major GEMM that reads the operands exactly
 * as cuBLASLt would be told (m, n, k, leading dims, ops, batch strides,
 * outer offsets) must give raf's row-major matmul, element for element;
 * and so must the row-major strided batches of the attention kernels'
 * products, each with both transposes it uses; and the alignment the
 * heuristic is promised follows the strides.
 * In a build with CUDA also the loader of cuBLASLt
 * (runtime/cuda/cublaslt.h): RAF_CUBLASLT naming no file is one line that
 * says what to do, and the toolkit's library, where found, resolves every
 * entry point.
 */
#include "runtime/cublas_map.h"
#include "runtime/kernel.h"

#ifdef RAF_HAVE_CUDA
#include "runtime/cuda/cublaslt.h"
#endif

#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

/* raf's matmul on the host: out [batch.., M, N], row-major, broadcast. */
static void reference(const raf_type *at, const raf_type *bt,
                      const raf_type *ot, bool ta, bool tb, const double *a,
                      const double *b, double *out) {
  int r = ot->rank;
  int64_t M = ot->dims[r - 2], N = ot->dims[r - 1];
  int64_t K = at->dims[at->rank - 1 - ta];
  int64_t sa[RAF_MAX_RANK], sb[RAF_MAX_RANK];
  raf_broadcast_strides(at, ot, sa);
  raf_broadcast_strides(bt, ot, sb);
  int64_t nb = ot->numel / (M * N > 0 ? M * N : 1);
  for (int64_t t = 0; t < nb; t++) {
    int64_t rest = t, oa = 0, ob = 0;
    for (int d = r - 3; d >= 0; d--) {
      int64_t idx = rest % ot->dims[d];
      rest /= ot->dims[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t l = 0; l < K; l++)
          s += a[oa + (ta ? l * M + i : i * K + l)] *
               b[ob + (tb ? j * K + l : l * N + j)];
        out[t * M * N + i * N + j] = s;
      }
  }
}

/* The GEMMs of map, column-major, as cuBLASLt computes them. */
static void mapped(const raf_gemm_map *mp, const double *a, const double *b,
                   double *out) {
  /* cuBLASLt's A is raf's b, its B raf's a. */
  const double *A0 = b, *B0 = a;
  for (int64_t o = 0; o < mp->outer; o++) {
    int64_t oa, ob, oc;
    raf_gemm_map_offsets(mp, o, &oa, &ob, &oc);
    for (int64_t t = 0; t < mp->batch; t++) {
      const double *A = A0 + oa + t * mp->stride_a;
      const double *B = B0 + ob + t * mp->stride_b;
      double *D = out + oc + t * mp->stride_c;
      for (int64_t i = 0; i < mp->m; i++)
        for (int64_t j = 0; j < mp->n; j++) {
          double s = 0;
          for (int64_t l = 0; l < mp->k; l++)
            s += (mp->trans_a ? A[l + i * mp->lda] : A[i + l * mp->lda]) *
                 (mp->trans_b ? B[j + l * mp->ldb] : B[l + j * mp->ldb]);
          D[i + j * mp->ldc] = s;
        }
    }
  }
}

/* One case: a and b dims (matrix dims as stored), the transposes. */
static void check_case(raf_module *m, int ra, const int64_t *da, int rb,
                       const int64_t *db, bool ta, bool tb,
                       int64_t want_outer, int64_t want_batch) {
  raf_type *at = raf_type_get(m, RAF_F64, ra, da);
  raf_type *bt = raf_type_get(m, RAF_F64, rb, db);
  int ro = ra > rb ? ra : rb;
  int64_t dout[RAF_MAX_RANK];
  for (int d = 0; d < ro - 2; d++) {
    int ia = d - (ro - ra), ib = d - (ro - rb);
    int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
    dout[d] = x > y ? x : y;
  }
  dout[ro - 2] = ta ? da[ra - 1] : da[ra - 2];
  dout[ro - 1] = tb ? db[rb - 2] : db[rb - 1];
  raf_type *ot = raf_type_get(m, RAF_F64, ro, dout);
  raf_gemm_map mp;
  CHECK(raf_gemm_map_make(at, bt, ot, ta, tb, &mp));
  CHECK(mp.outer == want_outer);
  CHECK(mp.batch == want_batch);
  /* The stored matrices' layouts are what the products read. */
  CHECK(mp.a_rows == (mp.trans_a ? mp.k : mp.m));
  CHECK(mp.a_cols == (mp.trans_a ? mp.m : mp.k));
  CHECK(mp.b_rows == (mp.trans_b ? mp.n : mp.k));
  CHECK(mp.b_cols == (mp.trans_b ? mp.k : mp.n));
  CHECK(mp.lda >= mp.a_rows && mp.ldb >= mp.b_rows && mp.ldc >= mp.m);
  double *a = malloc(sizeof *a * (size_t)at->numel);
  double *b = malloc(sizeof *b * (size_t)bt->numel);
  double *want = calloc((size_t)ot->numel, sizeof *want);
  double *got = calloc((size_t)ot->numel, sizeof *got);
  for (int64_t i = 0; i < at->numel; i++)
    a[i] = (double)((i * 7 + 3) % 11) - 5;
  for (int64_t i = 0; i < bt->numel; i++)
    b[i] = (double)((i * 5 + 1) % 13) - 6;
  reference(at, bt, ot, ta, tb, a, b, want);
  mapped(&mp, a, b, got);
  int64_t bad = 0;
  for (int64_t i = 0; i < ot->numel; i++)
    bad += want[i] != got[i];
  if (bad)
    fprintf(stderr, "case rank %d x %d ta=%d tb=%d: %lld wrong\n", ra, rb,
            ta, tb, (long long)bad);
  CHECK(bad == 0);
  free(a);
  free(b);
  free(want);
  free(got);
}

static void check_mapping(raf_module *m) {
  for (int t = 0; t < 4; t++) {
    bool ta = t & 1, tb = t & 2;
    /* [M, K] @ [K, N]: one product. */
    int64_t a2[] = {ta ? 5 : 3, ta ? 3 : 5}, b2[] = {tb ? 4 : 5, tb ? 5 : 4};
    check_case(m, 2, a2, 2, b2, ta, tb, 1, 1);
    /* [2, 3, M, K] @ [2, 3, K, N]: one strided batch of 6. */
    int64_t a4[] = {2, 3, a2[0], a2[1]}, b4[] = {2, 3, b2[0], b2[1]};
    check_case(m, 4, a4, 4, b4, ta, tb, 1, 6);
    /* [2, 3, M, K] @ [K, N]: folded into one product unless a is
     * transposed (then a batch of 6 with b's stride 0). */
    check_case(m, 4, a4, 2, b2, ta, tb, 1, ta ? 6 : 1);
    /* [M, K] @ [2, 3, K, N]: a broadcast, stride 0. */
    check_case(m, 2, a2, 4, b4, ta, tb, 1, 6);
    /* [2, 1, M, K] @ [1, 3, K, N]: no single stride; an outer loop of 2
     * over batches of 3. */
    int64_t a5[] = {2, 1, a2[0], a2[1]}, b5[] = {1, 3, b2[0], b2[1]};
    check_case(m, 4, a5, 4, b5, ta, tb, 2, 3);
    /* [2, 3, M, K] @ [2, 1, K, N]: b broadcast along the inner dim only. */
    int64_t b6[] = {2, 1, b2[0], b2[1]};
    check_case(m, 4, a4, 4, b6, ta, tb, 2, 3);
  }
  /* An empty K: the result is zeros, no GEMM. */
  int64_t ak[] = {3, 0}, bk[] = {0, 4}, ok[] = {3, 4};
  raf_gemm_map mp;
  CHECK(raf_gemm_map_make(raf_type_get(m, RAF_F32, 2, ak),
                          raf_type_get(m, RAF_F32, 2, bk),
                          raf_type_get(m, RAF_F32, 2, ok), false, false,
                          &mp));
  CHECK(mp.zero && !mp.empty);
}

/* A row-major strided batch (the attention kernels' products): C [M, N]
 * = op(A) op(B), A [M, K] or (ta) [K, M], B [K, N] or (tb) [N, K]. */
static void check_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                           int64_t batch) {
  int64_t lda = ta ? M : K, ldb = tb ? K : N;
  int64_t sa = M * K, sb = K * N, sc = M * N;
  raf_gemm_map mp;
  raf_gemm_map_rowmajor(ta, tb, M, N, K, lda, sa, ldb, sb, N, sc, batch,
                        &mp);
  CHECK(mp.outer == 1 && mp.batch == batch && !mp.empty && !mp.zero);
  double *a = malloc(sizeof *a * (size_t)(sa * batch));
  double *b = malloc(sizeof *b * (size_t)(sb * batch));
  double *want = calloc((size_t)(sc * batch), sizeof *want);
  double *got = calloc((size_t)(sc * batch), sizeof *got);
  for (int64_t i = 0; i < sa * batch; i++)
    a[i] = (double)((i * 7 + 3) % 11) - 5;
  for (int64_t i = 0; i < sb * batch; i++)
    b[i] = (double)((i * 5 + 1) % 13) - 6;
  for (int64_t t = 0; t < batch; t++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t l = 0; l < K; l++)
          s += a[t * sa + (ta ? l * lda + i : i * lda + l)] *
               b[t * sb + (tb ? j * ldb + l : l * ldb + j)];
        want[t * sc + i * N + j] = s;
      }
  mapped(&mp, a, b, got);
  int64_t bad = 0;
  for (int64_t i = 0; i < sc * batch; i++)
    bad += want[i] != got[i];
  CHECK(bad == 0);
  free(a);
  free(b);
  free(want);
  free(got);
}

/* The products of attention.cu's callers, L = 7 queries, S = 5 keys,
 * E = 3, Ev = 4, over 3 heads. */
static void check_attention_products(void) {
  int64_t L = 7, S = 5, E = 3, Ev = 4, BH = 3;
  check_rowmajor(false, true, L, S, E, BH);   /* s = q k^T */
  check_rowmajor(false, false, L, Ev, S, BH); /* out = p v */
  check_rowmajor(true, false, S, Ev, L, BH);  /* dv = p^T dy */
  check_rowmajor(false, true, L, S, Ev, BH);  /* dp = dy v^T */
  check_rowmajor(false, false, L, E, S, BH);  /* dq = ds k */
  check_rowmajor(true, false, S, E, L, BH);   /* dk = ds^T q */
}

/* The alignment the heuristic is promised. */
static void check_align(raf_module *m) {
  raf_gemm_map mp;
  int64_t a1[] = {4, 8, 8}, b1[] = {4, 8, 8}, o1[] = {4, 8, 8};
  CHECK(raf_gemm_map_make(raf_type_get(m, RAF_F32, 3, a1),
                          raf_type_get(m, RAF_F32, 3, b1),
                          raf_type_get(m, RAF_F32, 3, o1), false, false,
                          &mp));
  CHECK(raf_gemm_map_align(&mp, 64, 4, 4) == 64); /* strides of 256 bytes */
  int64_t a2[] = {3, 5, 7}, b2[] = {3, 7, 9}, o2[] = {3, 5, 9};
  CHECK(raf_gemm_map_make(raf_type_get(m, RAF_F32, 3, a2),
                          raf_type_get(m, RAF_F32, 3, b2),
                          raf_type_get(m, RAF_F32, 3, o2), false, false,
                          &mp));
  CHECK(raf_gemm_map_align(&mp, 64, 4, 4) == 4);  /* 140 bytes */
  CHECK(raf_gemm_map_align(&mp, 64, 2, 2) == 2);  /* 70 bytes */
  int64_t b3[] = {7, 9};
  CHECK(raf_gemm_map_make(raf_type_get(m, RAF_F32, 3, a2),
                          raf_type_get(m, RAF_F32, 2, b3),
                          raf_type_get(m, RAF_F32, 3, o2), false, false,
                          &mp));
  CHECK(mp.batch == 1 && raf_gemm_map_align(&mp, 64, 4, 4) == 64); /* folded */
}

#ifdef RAF_HAVE_CUDA
static const char *last_error(raf_ctx *ctx) {
  const char *msg = "";
  if (raf_diag_count(ctx))
    raf_diag_get(ctx, raf_diag_count(ctx) - 1, NULL, NULL, &msg);
  return msg;
}

static void check_loader(raf_ctx *ctx) {
  raf_cublaslt *lt = (raf_cublaslt *)1;
  setenv("RAF_CUBLASLT", "/nonexistent/libcublasLt.so", 1);
  CHECK(raf_cublaslt_load(ctx, 0, &lt) == RAF_ERROR);
  CHECK(lt == NULL);
  CHECK(strcmp(last_error(ctx),
               "no /nonexistent/libcublasLt.so (cuBLASLt, RAF_CUBLASLT): set "
               "RAF_CUBLASLT or install the CUDA toolkit") == 0);
  /* A file that is no library: dlerror's reason. */
  setenv("RAF_CUBLASLT", "/dev/null", 1);
  CHECK(raf_cublaslt_load(ctx, 0, &lt) == RAF_ERROR);
  CHECK(strncmp(last_error(ctx), "cannot load /dev/null: ", 23) == 0);
  unsetenv("RAF_CUBLASLT");
  /* The toolkit's library, which needs no GPU to be loaded. */
  size_t before = raf_diag_count(ctx);
  if (raf_cublaslt_load(ctx, 0, &lt) == RAF_OK) {
    CHECK(lt->version >= 120000);
    CHECK(lt->cublasLtMatmul != NULL && lt->cublasLtCreate != NULL);
    raf_cublaslt_unload(lt);
  } else {
    CHECK(raf_diag_count(ctx) == before + 1);
    CHECK(strncmp(last_error(ctx), "no libcublasLt.so.13, .so.12 or .so "
                                   "(cuBLASLt) on the loader's path",
                  67) == 0);
  }
}
#endif

int main(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_module_create(ctx);
  check_mapping(m);
  check_attention_products();
  check_align(m);
#ifdef RAF_HAVE_CUDA
  check_loader(ctx);
#endif
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  return failures != 0;
}
