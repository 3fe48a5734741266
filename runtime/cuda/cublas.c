/* cublas.c: the cublas dialect: matmul, and scaled_dot_product_attention
 * and its gradient (cublas_attention.c), on cuBLASLt, on a CUDA device.
 *
 * cuBLASLt is loaded at run time (cublaslt.h) by the prepare hook, and
 * only when a statement of the module is bound to the dialect, with one
 * handle per executor. Each product's workspace of RAF_CUBLAS_WORKSPACE
 * bytes is its statement's scratch, which the memory plan places in the
 * arena (ir/memplan.h); the state has one of its own only for statements
 * planned without it. Every product is described to cuBLASLt once: the
 * bind hook maps the statement's shapes (cublas_map.h), builds the
 * descriptors and asks cublasLtMatmulAlgoGetHeuristic for the best
 * algorithm that fits the workspace, and keeps them in a cache keyed on
 * the product's shape, dtypes and transposes, which every statement of
 * that shape shares; the kernel only calls cublasLtMatmul on the device's
 * stream.
 *
 * Numerics: f32 products in f32 (CUBLAS_COMPUTE_32F: TF32 is off, so
 * results match the CPU's to float rounding) unless the environment says
 * RAF_CUBLAS_TF32=1 (CUBLAS_COMPUTE_32F_FAST_TF32); bf16 and f16 with f32
 * accumulation and scale, the result rounded once.
 *
 * Never run on a GPU yet: written against cublasLt.h, its mapping checked
 * on the host (test/unit/test_cublas_map.c).
 */
#include "ir/epilogue.h"
#include "runtime/cuda/cublas_internal.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/dialects.h"
#include "runtime/exec.h"

#include <stdlib.h>
#include <string.h>

static cudaDataType_t lt_type(raf_dtype dt) {
  return dt == RAF_BF16  ? CUDA_R_16BF
         : dt == RAF_F16 ? CUDA_R_16F
                         : CUDA_R_32F;
}

/* Reports at k's statement, or to the state's context without one. */
static raf_status fail(cublas_state *st, const raf_kernel *k,
                       const char *what, cublasStatus_t s) {
  const char *why = raf_cublaslt_status_text(st->lt, s);
  if (k)
    return raf_kernel_fail(k, "%s: %s", what, why);
  raf_diag_report(st->ctx, (raf_loc){0}, RAF_SEV_ERROR, "cublas: %s: %s",
                  what, why);
  return RAF_ERROR;
}

static void plan_free(cublas_state *st, lt_plan *p) {
  if (!p)
    return;
  if (p->desc)
    st->lt->cublasLtMatmulDescDestroy(p->desc);
  if (p->a)
    st->lt->cublasLtMatrixLayoutDestroy(p->a);
  if (p->b)
    st->lt->cublasLtMatrixLayoutDestroy(p->b);
  if (p->c)
    st->lt->cublasLtMatrixLayoutDestroy(p->c);
  free(p);
}

/* A layout of rows x cols (ld), with a strided batch when batch > 1. */
static cublasStatus_t layout(cublas_state *st, cublasLtMatrixLayout_t *out,
                             raf_dtype dt, int64_t rows, int64_t cols,
                             int64_t ld, int64_t batch, int64_t stride) {
  const raf_cublaslt *lt = st->lt;
  cublasStatus_t s = lt->cublasLtMatrixLayoutCreate(
      out, lt_type(dt), (uint64_t)rows, (uint64_t)cols, ld);
  if (s != CUBLAS_STATUS_SUCCESS || batch <= 1)
    return s;
  int32_t count = (int32_t)batch;
  s = lt->cublasLtMatrixLayoutSetAttribute(
      *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = lt->cublasLtMatrixLayoutSetAttribute(
        *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof stride);
  return s;
}

static bool epilogue_has_aux(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU;
}

static bool epilogue_has_bias(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_BGRADA;
}

/* The epilogue of sh on desc. The heuristic reads the bias and aux
 * pointers only for their alignment, so they are set here to a stand-in
 * with the buffers' alignment; each run sets the real ones. */
static cublasStatus_t set_epilogue(cublas_state *st, cublasLtMatmulDesc_t desc,
                                   const lt_shape *sh) {
  const raf_cublaslt *lt = st->lt;
  cublasLtEpilogue_t e = (cublasLtEpilogue_t)sh->epilogue;
  const void *aligned = (const void *)(uintptr_t)RAF_CUBLAS_BUFFER_ALIGN;
  cublasStatus_t s = lt->cublasLtMatmulDescSetAttribute(
      desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
  if (s == CUBLAS_STATUS_SUCCESS && epilogue_has_bias(sh->epilogue))
    s = lt->cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &aligned, sizeof aligned);
  if (s == CUBLAS_STATUS_SUCCESS && epilogue_has_aux(sh->epilogue))
    s = lt->cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aligned,
        sizeof aligned);
  if (s == CUBLAS_STATUS_SUCCESS && epilogue_has_aux(sh->epilogue))
    s = lt->cublasLtMatmulDescSetAttribute(
        desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &sh->aux_ld,
        sizeof sh->aux_ld);
  return s;
}

/* A new plan for shape: descriptors and the heuristic's algorithm. */
static lt_plan *plan_make(cublas_state *st, const raf_kernel *k,
                          const lt_shape *sh) {
  const raf_cublaslt *lt = st->lt;
  lt_plan *p = calloc(1, sizeof *p);
  if (!p) {
    if (k)
      raf_kernel_fail(k, "out of memory");
    return NULL;
  }
  p->shape = *sh;
  cublasComputeType_t compute = sh->ab == RAF_F32 && st->tf32
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  cublasStatus_t s = lt->cublasLtMatmulDescCreate(&p->desc, compute,
                                                  CUDA_R_32F);
  const char *what = "cublasLtMatmulDescCreate";
  cublasOperation_t ta = sh->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = sh->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (s == CUBLAS_STATUS_SUCCESS) {
    what = "cublasLtMatmulDescSetAttribute";
    s = lt->cublasLtMatmulDescSetAttribute(
        p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  }
  if (s == CUBLAS_STATUS_SUCCESS)
    s = lt->cublasLtMatmulDescSetAttribute(
        p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  if (s == CUBLAS_STATUS_SUCCESS && sh->epilogue)
    s = set_epilogue(st, p->desc, sh);
  if (s == CUBLAS_STATUS_SUCCESS) {
    what = "cublasLtMatrixLayoutCreate";
    s = layout(st, &p->a, sh->ab, sh->a_rows, sh->a_cols, sh->lda, sh->batch,
               sh->stride_a);
  }
  if (s == CUBLAS_STATUS_SUCCESS)
    s = layout(st, &p->b, sh->ab, sh->b_rows, sh->b_cols, sh->ldb, sh->batch,
               sh->stride_b);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = layout(st, &p->c, sh->c, sh->m, sh->n, sh->ldc, sh->batch,
               sh->stride_c);
  cublasLtMatmulPreference_t pref = NULL;
  if (s == CUBLAS_STATUS_SUCCESS) {
    what = "cublasLtMatmulPreferenceCreate";
    s = lt->cublasLtMatmulPreferenceCreate(&pref);
  }
  size_t ws = RAF_CUBLAS_WORKSPACE;
  if (s == CUBLAS_STATUS_SUCCESS) {
    what = "cublasLtMatmulPreferenceSetAttribute";
    s = lt->cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  }
  static const cublasLtMatmulPreferenceAttributes_t aligns[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; i++)
    s = lt->cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &sh->align,
                                                 sizeof sh->align);
  cublasLtMatmulHeuristicResult_t found;
  int nfound = 0;
  if (s == CUBLAS_STATUS_SUCCESS) {
    what = "cublasLtMatmulAlgoGetHeuristic";
    s = lt->cublasLtMatmulAlgoGetHeuristic(st->handle, p->desc, p->a, p->b,
                                           p->c, p->c, pref, 1, &found,
                                           &nfound);
  }
  if (pref)
    lt->cublasLtMatmulPreferenceDestroy(pref);
  if (s == CUBLAS_STATUS_SUCCESS && nfound < 1)
    s = CUBLAS_STATUS_NOT_SUPPORTED;
  if (s != CUBLAS_STATUS_SUCCESS) {
    if (k)
      fail(st, k, what, s);
    plan_free(st, p);
    return NULL;
  }
  p->algo = found.algo;
  return p;
}

lt_plan *cublas_plan(cublas_state *st, const raf_kernel *k,
                     const lt_shape *shape) {
  for (int i = 0; i < st->nplans; i++)
    if (memcmp(&st->plans[i]->shape, shape, sizeof *shape) == 0)
      return st->plans[i];
  if (st->nplans == st->cap_plans) {
    int cap = st->cap_plans ? 2 * st->cap_plans : 16;
    lt_plan **grown = realloc(st->plans, sizeof *grown * (size_t)cap);
    if (!grown) {
      if (k)
        raf_kernel_fail(k, "out of memory");
      return NULL;
    }
    st->plans = grown;
    st->cap_plans = cap;
  }
  lt_plan *p = plan_make(st, k, shape);
  if (p)
    st->plans[st->nplans++] = p;
  return p;
}

/* The pointers of one product: D = epilogue(alpha op(A) op(B) + beta C),
 * with the epilogue's bias (or bias gradient) and aux matrix when its plan
 * has them. */
typedef struct lt_args {
  const void *a, *b, *c;
  void *d;
  float alpha, beta;
  const void *bias, *aux;
} lt_args;

/* The workspace of k's products: the start of its planned scratch
 * (raf_scratch), else the state's. */
static void *workspace_of(cublas_state *st, const raf_kernel *k) {
  return k->scratch ? k->scratch : st->workspace;
}

static raf_status run_product(cublas_state *st, const raf_kernel *k,
                              const lt_plan *p, const lt_args *x) {
  /* cuBLASLt runs in the context current on the calling thread, which may
   * be any of the executor's. */
  if (raf_cuda_device_make_current(st->dev) != RAF_OK)
    return RAF_ERROR;
  const raf_cublaslt *lt = st->lt;
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  /* Statements run one at a time, so a plan shared by several epilogue
   * calls of one shape can take each one's pointers in turn. */
  if (epilogue_has_bias(p->shape.epilogue))
    s = lt->cublasLtMatmulDescSetAttribute(
        p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &x->bias, sizeof x->bias);
  if (s == CUBLAS_STATUS_SUCCESS && epilogue_has_aux(p->shape.epilogue))
    s = lt->cublasLtMatmulDescSetAttribute(
        p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &x->aux,
        sizeof x->aux);
  if (s != CUBLAS_STATUS_SUCCESS)
    return fail(st, k, "cublasLtMatmulDescSetAttribute", s);
  cudaStream_t stream = (cudaStream_t)raf_device_stream(st->dev);
  void *ws = workspace_of(st, k);
  if (!ws)
    return raf_kernel_fail(k, "cublas: no workspace (planned or the "
                              "dialect's)");
  /* cuBLASLt needs a 256-byte aligned workspace; the plan places scratch
   * so (RAF_MEM_SCRATCH_ALIGN) and cuMemAlloc's blocks are, so this only
   * fails on a plan or an allocator that broke the rule. */
  if ((uintptr_t)ws % RAF_MEM_SCRATCH_ALIGN)
    return raf_kernel_fail(k, "cublas: the workspace at %p is not %d-byte "
                              "aligned (cuBLASLt needs it)",
                           ws, RAF_MEM_SCRATCH_ALIGN);
  s = lt->cublasLtMatmul(st->handle, p->desc, &x->alpha, x->a, p->a, x->b,
                         p->b, &x->beta, x->c, p->c, x->d, p->c, &p->algo, ws,
                         RAF_CUBLAS_WORKSPACE, stream);
  return s == CUBLAS_STATUS_SUCCESS ? RAF_OK
                                    : fail(st, k, "cublasLtMatmul", s);
}

raf_status cublas_run(cublas_state *st, const raf_kernel *k, const lt_plan *p,
                      const void *a, const void *b, void *d, float alpha,
                      float beta) {
  lt_args x = {.a = a, .b = b, .c = d, .d = d, .alpha = alpha, .beta = beta};
  return run_product(st, k, p, &x);
}

/* The cache key of one strided batch of map: dtypes ab (A and B) and c,
 * and the alignment every matrix pointer keeps: the buffers', less what
 * batch strides and outer offsets (in bytes) break. */
static void shape_of_map(const raf_gemm_map *map, raf_dtype ab, raf_dtype c,
                         lt_shape *sh) {
  memset(sh, 0, sizeof *sh);
  sh->ab = ab;
  sh->c = c;
  sh->trans_a = map->trans_a;
  sh->trans_b = map->trans_b;
  sh->m = map->m;
  sh->n = map->n;
  sh->k = map->k;
  sh->a_rows = map->a_rows;
  sh->a_cols = map->a_cols;
  sh->lda = map->lda;
  sh->b_rows = map->b_rows;
  sh->b_cols = map->b_cols;
  sh->ldb = map->ldb;
  sh->ldc = map->ldc;
  sh->batch = map->batch;
  sh->stride_a = map->stride_a;
  sh->stride_b = map->stride_b;
  sh->stride_c = map->stride_c;
  sh->align = raf_gemm_map_align(map, RAF_CUBLAS_BUFFER_ALIGN,
                                 raf_dtype_size(ab), raf_dtype_size(c));
}

raf_status cublas_rowmajor(cublas_state *st, const raf_kernel *k,
                           raf_dtype ab, raf_dtype c, bool ta, bool tb,
                           int64_t M, int64_t N, int64_t K, const void *a,
                           int64_t lda, int64_t sa, const void *b,
                           int64_t ldb, int64_t sb, void *cp, int64_t ldc,
                           int64_t sc, int64_t batch, float alpha,
                           float beta) {
  raf_gemm_map map;
  lt_shape sh;
  raf_gemm_map_rowmajor(ta, tb, M, N, K, lda, sa, ldb, sb, ldc, sc, batch,
                        &map);
  shape_of_map(&map, ab, c, &sh);
  /* cuBLASLt's A is raf's b, its B raf's a. */
  const lt_plan *p = cublas_plan(st, k, &sh);
  return p ? cublas_run(st, k, p, b, a, cp, alpha, beta) : RAF_ERROR;
}

/* ---- matmul --------------------------------------------------------------- */

/* What bind prepares for a statement: the state, and for a matmul its
 * mapped shape. */
typedef struct mm_bound {
  cublas_state *st; /* first: cublas_state_of reads it */
  raf_gemm_map map;
  lt_shape shape;
  bool mapped; /* map and shape are valid */
} mm_bound;

static bool mm_shape(const raf_type *at, const raf_type *bt,
                     const raf_type *ot, bool ta, bool tb, raf_gemm_map *map,
                     lt_shape *sh) {
  if (!raf_gemm_map_make(at, bt, ot, ta, tb, map))
    return false;
  shape_of_map(map, at->dtype, ot->dtype, sh);
  return true;
}

cublas_state *cublas_state_of(const raf_kernel *k) {
  const mm_bound *bd = k->bound;
  return bd ? bd->st : NULL;
}

static raf_status cublas_matmul(const raf_kernel *k) {
  const mm_bound *bd = k->bound;
  if (!bd || !bd->st)
    return raf_kernel_fail(k, "cublas: the dialect was not prepared");
  cublas_state *st = bd->st;
  raf_gemm_map map;
  lt_shape sh;
  if (bd->mapped) {
    map = bd->map;
    sh = bd->shape;
  } else if (!mm_shape(k->in[0]->type, k->in[1]->type, k->out[0]->type,
                       raf_stmt_attr_bool(k->stmt, "transpose_a"),
                       raf_stmt_attr_bool(k->stmt, "transpose_b"), &map,
                       &sh)) {
    return raf_kernel_fail(k, "cublas: a batch of more than 2^31 products");
  }
  if (map.empty)
    return RAF_OK;
  if (map.zero)
    return raf_device_memset(st->dev, k->out[0]->data, 0, k->out[0]->nbytes);
  const lt_plan *p = cublas_plan(st, k, &sh);
  if (!p)
    return RAF_ERROR;
  size_t ab = (size_t)raf_dtype_size(sh.ab), c = (size_t)raf_dtype_size(sh.c);
  /* cuBLASLt's A is raf's b, its B raf's a. */
  const char *a = k->in[1]->data, *b = k->in[0]->data;
  char *d = k->out[0]->data;
  for (int64_t i = 0; i < map.outer; i++) {
    int64_t oa, ob, oc;
    raf_gemm_map_offsets(&map, i, &oa, &ob, &oc);
    if (cublas_run(st, k, p, a + (size_t)oa * ab, b + (size_t)ob * ab,
                   d + (size_t)oc * c, 1.0f, 0.0f) != RAF_OK)
      return RAF_ERROR;
  }
  return RAF_OK;
}

/* ---- Epilogues ------------------------------------------------------------ */

/* What bind prepares for a call of a product with its epilogue
 * (ir/epilogue.h): the product's plan key, and where each matrix is among
 * the call's operands (in) and results (out); -1 where it has none. */
typedef struct epi_bound {
  mm_bound mm; /* first: cublas_state_of reads its st */
  int a, b, bias, residual, aux_in; /* operands */
  int out, aux_out, bias_grad;      /* results */
} epi_bound;

/* The index of callee value v among its arguments, or -1. */
static int arg_index(const raf_value *v) {
  return v && !v->def ? v->index : -1;
}

/* The index of callee value v among what its return reads, or -1. */
static int result_index(const raf_func *f, const raf_value *v) {
  const raf_stmt *ret = f->last;
  for (int i = 0; v && ret && ret->op == RAF_OP_RETURN && i < ret->noperands;
       i++)
    if (ret->operands[i].value == v)
      return i;
  return -1;
}

static uint32_t epilogue_of(const raf_epilogue *e) {
  if (e->kind == RAF_EPILOGUE_DGELU)
    return CUBLASLT_EPILOGUE_DGELU;
  if (e->kind == RAF_EPILOGUE_BIAS_GRAD)
    return CUBLASLT_EPILOGUE_BGRADA;
  if (e->gelu && e->aux)
    return e->bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                   : CUBLASLT_EPILOGUE_GELU_AUX;
  if (e->gelu)
    return e->bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  return e->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

/* Fills bd for call s, whose callee has an epilogue form; false declines
 * the call (it then runs statement by statement): a product that is not
 * one GEMM (a batch), an aux matrix whose leading dimension cuBLASLt
 * refuses (a multiple of 8), or a plan the heuristic has none for. */
static bool epi_bind(cublas_state *st, const raf_stmt *s, epi_bound *bd) {
  raf_epilogue e;
  if (!raf_epilogue_of_func(s->callee, &e))
    return false;
  const raf_stmt *mm = e.matmul;
  raf_gemm_map *map = &bd->mm.map;
  lt_shape *sh = &bd->mm.shape;
  if (!mm_shape(mm->operands[0].value->type, mm->operands[1].value->type,
                mm->results[0]->type, raf_stmt_attr_bool(mm, "transpose_a"),
                raf_stmt_attr_bool(mm, "transpose_b"), map, sh) ||
      map->empty || map->zero || map->batch != 1 || map->outer != 1)
    return false;
  sh->epilogue = epilogue_of(&e);
  if (epilogue_has_aux(sh->epilogue)) {
    sh->aux_ld = map->ldc;
    if (sh->aux_ld % 8 != 0)
      return false;
  }
  const raf_func *f = s->callee;
  bd->a = arg_index(mm->operands[0].value);
  bd->b = arg_index(mm->operands[1].value);
  bd->bias = arg_index(e.bias);
  bd->residual = arg_index(e.residual);
  bd->out = result_index(f, e.out);
  bd->bias_grad = result_index(f, e.bias_grad);
  bd->aux_in = e.kind == RAF_EPILOGUE_DGELU ? arg_index(e.aux) : -1;
  bd->aux_out = e.kind == RAF_EPILOGUE_FORWARD ? result_index(f, e.aux) : -1;
  bool complete = bd->a >= 0 && bd->b >= 0 && bd->out >= 0 &&
                  (!e.bias || bd->bias >= 0) &&
                  (!e.residual || bd->residual >= 0) &&
                  (!e.bias_grad || bd->bias_grad >= 0) &&
                  (!e.aux || bd->aux_in >= 0 || bd->aux_out >= 0);
  return complete && cublas_plan(st, NULL, sh) != NULL;
}

static raf_status cublas_call(const raf_kernel *k) {
  const epi_bound *bd = k->bound;
  if (!bd || !bd->mm.st)
    return raf_kernel_fail(k, "cublas: the dialect was not prepared");
  cublas_state *st = bd->mm.st;
  const lt_plan *p = cublas_plan(st, k, &bd->mm.shape);
  if (!p)
    return RAF_ERROR;
  /* cuBLASLt's A is raf's b, its B raf's a; C is the residual (beta 1). */
  lt_args x = {.a = k->in[bd->b]->data,
               .b = k->in[bd->a]->data,
               .d = k->out[bd->out]->data,
               .alpha = 1.0f};
  x.c = bd->residual >= 0 ? k->in[bd->residual]->data : x.d;
  x.beta = bd->residual >= 0 ? 1.0f : 0.0f;
  x.bias = bd->bias >= 0        ? k->in[bd->bias]->data
           : bd->bias_grad >= 0 ? k->out[bd->bias_grad]->data
                                : NULL;
  x.aux = bd->aux_in >= 0    ? k->in[bd->aux_in]->data
          : bd->aux_out >= 0 ? k->out[bd->aux_out]->data
                             : NULL;
  return run_product(st, k, p, &x);
}

/* ---- Hooks ---------------------------------------------------------------- */

static bool is_attention(const raf_stmt *s) {
  return s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION ||
         s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD;
}

static void cublas_release(void *state) {
  cublas_state *st = state;
  if (!st)
    return;
  for (int i = 0; i < st->nplans; i++)
    plan_free(st, st->plans[i]);
  free(st->plans);
  for (int i = 0; i < st->nbound; i++)
    free(st->bound[i]);
  free(st->bound);
  raf_cuda_module_unload(st->dev, st->attention);
  if (st->workspace)
    raf_device_free(st->dev, st->workspace);
  if (st->handle)
    st->lt->cublasLtDestroy(st->handle);
  raf_cublaslt_unload(st->lt);
  free(st);
}

static raf_status cublas_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                                 void **state) {
  *state = NULL;
  bool any = false, attention = false, unplanned = false;
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_CUBLAS)) {
        any = true;
        attention |= is_attention(s);
        unplanned |= !raf_attrs_find(&s->attrs, "scratch");
      }
  if (!any)
    return RAF_OK;
  raf_device *dev = raf_exec_device(ex);
  if (raf_device_kind_of(dev) != RAF_DEVICE_CUDA)
    return RAF_OK; /* binding refuses the statements, saying where */
  cublas_state *st = calloc(1, sizeof *st);
  if (!st) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  st->dev = dev;
  st->ctx = ctx;
  const char *tf32 = getenv("RAF_CUBLAS_TF32");
  st->tf32 = tf32 && strcmp(tf32, "1") == 0;
  raf_status rc = raf_cublaslt_load(
      ctx, raf_cuda_device_driver(dev)->version, &st->lt);
  if (rc == RAF_OK)
    rc = raf_cuda_device_make_current(dev);
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  if (rc == RAF_OK &&
      (s = st->lt->cublasLtCreate(&st->handle)) != CUBLAS_STATUS_SUCCESS)
    rc = fail(st, NULL, "cublasLtCreate", s);
  size_t ws = RAF_CUBLAS_WORKSPACE;
  if (rc == RAF_OK && unplanned &&
      raf_device_alloc(dev, ws, &st->workspace) != RAF_OK) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "%s: out of memory for cuBLASLt's workspace (%zu MiB)",
                    raf_device_name(dev), ws >> 20);
    rc = RAF_ERROR;
  }
  if (rc == RAF_OK && attention)
    rc = cublas_attention_load(st);
  if (rc != RAF_OK) {
    cublas_release(st);
    return RAF_ERROR;
  }
  *state = st;
  return RAF_OK;
}

/* Every statement gets data naming the state; a matmul's also its mapped
 * shape, whose plan (heuristic included) is made here, ahead of the
 * first run. NULL only when the dialect was not prepared (then the kernel
 * says so) or memory ran out. */
static const void *cublas_bind(void *state, const raf_stmt *s) {
  cublas_state *st = state;
  if (!st)
    return NULL;
  if (st->nbound == st->cap_bound) {
    int cap = st->cap_bound ? 2 * st->cap_bound : 16;
    void **grown = realloc(st->bound, sizeof *grown * (size_t)cap);
    if (!grown)
      return NULL;
    st->bound = grown;
    st->cap_bound = cap;
  }
  if (s->op == RAF_OP_CALL) {
    epi_bound *eb = calloc(1, sizeof *eb);
    if (!eb)
      return NULL;
    eb->mm.st = st;
    st->bound[st->nbound++] = eb;
    return epi_bind(st, s, eb) ? eb : NULL;
  }
  mm_bound *bd = calloc(1, sizeof *bd);
  if (!bd)
    return NULL;
  bd->st = st;
  st->bound[st->nbound++] = bd;
  if (s->op == RAF_OP_MATMUL && s->noperands == 2 && s->nresults == 1) {
    bd->mapped = mm_shape(s->operands[0].value->type,
                          s->operands[1].value->type, s->results[0]->type,
                          raf_stmt_attr_bool(s, "transpose_a"),
                          raf_stmt_attr_bool(s, "transpose_b"), &bd->map,
                          &bd->shape);
    /* A plan that cannot be made now is made again, and reported, at the
     * first run. */
    if (bd->mapped && !bd->map.empty && !bd->map.zero)
      (void)cublas_plan(st, NULL, &bd->shape);
  }
  return bd;
}

const raf_dialect_hooks raf_cublas_hooks = {
    .prepare = cublas_prepare,
    .bind = cublas_bind,
    .release = cublas_release,
};


const raf_kernel_fn raf_cublas_kernels[RAF_OP_COUNT] = {
    [RAF_OP_MATMUL] = cublas_matmul,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION] = cublas_attention,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD] = cublas_attention_grad,
    [RAF_OP_CALL] = cublas_call,
};
