/* traits.c: the traits (ir/dialect.h) of the dialects of this folder:
 * cuda (codegen's NVPTX kernels), cublas (cuBLASLt), cudnn (cuDNN's
 * graph API) and nccl.
 *
 * cublas runs a fused function only as a product and its epilogue
 * (ir/epilogue.h), needs cuBLASLt's workspace and, for attention, the
 * scores cublas_attention.c keeps, and groups those products with its
 * `matmul-epilogue` fusion pattern. cudnn's scratch holds cuDNN's
 * workspace and what its gradients recompute (raf_cudnn_scratch_of). All
 * need the CUDA toolkit at build time (nccl also NCCL's nccl.h, cudnn
 * cuDNN's cudnn_graph.h); the libraries themselves are
 * loaded at run time (runtime/cuda/library.h).
 *
 * Built into the IR library (ir/dialect.h says why): this file reads the
 * IR only.
 */
#include "runtime/cuda/traits.h"

#include "ir/epilogue.h"

static const char *cuda_unavailable(void) {
#ifdef RAF_HAVE_CUDA
  return NULL;
#else
  return "raf was built without the CUDA toolkit";
#endif
}

static const char *cublas_unavailable(void) {
#ifdef RAF_HAVE_CUDA
  return NULL;
#else
  return "raf was built without CUDA (the CUDA toolkit's headers were not "
         "found when it was configured)";
#endif
}

static const char *nccl_unavailable(void) {
#if defined(RAF_HAVE_NCCL)
  return NULL;
#elif defined(RAF_HAVE_CUDA)
  return "raf was built without NCCL (its nccl.h was not found)";
#else
  return "raf was built without the CUDA toolkit";
#endif
}

static const char *cudnn_unavailable(void) {
#if defined(RAF_HAVE_CUDNN)
  return NULL;
#elif defined(RAF_HAVE_CUDA)
  return "raf was built without cuDNN (cuDNN 9's cudnn_graph.h was not "
         "found when it was configured)";
#else
  return "raf was built without the CUDA toolkit";
#endif
}

/* ---- cublas -------------------------------------------------------------- */

static bool cublas_runs_call(raf_dialect d, const raf_func *callee) {
  return raf_dialect_rows_run_call(d, callee) &&
         raf_epilogue_of_func(callee, NULL);
}

/* cuBLASLt's workspace; attention and its gradient also keep their
 * scores there (for q [.., L, E] and k [.., S, E], BH the product of the
 * leading dims): s, dp in f32, and p in q's dtype when it is not f32. */
static raf_scratch cublas_scratch(const raf_stmt *s) {
  raf_scratch sc = {0, -1, -1, -1};
  bool grad = s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD;
  bool attention = grad || s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION;
  if (s->op != RAF_OP_MATMUL && s->op != RAF_OP_CALL && !attention)
    return sc;
  sc.bytes = RAF_CUBLAS_WORKSPACE_BYTES; /* the workspace, first */
  if (!attention || s->noperands < (grad ? 4 : 3))
    return sc;
  const raf_type *q = s->operands[grad ? 1 : 0].value->type,
                 *k = s->operands[grad ? 2 : 1].value->type;
  if (q->rank < 2 || k->rank < 2)
    return sc;
  int64_t n = q->dims[q->rank - 2] * k->dims[k->rank - 2];
  for (int i = 0; i < q->rank - 2; i++)
    n *= q->dims[i];
  int64_t floats = raf_mem_aligned(n * (int64_t)sizeof(float));
  sc.scores = sc.bytes;
  sc.bytes += floats;
  if (grad) {
    sc.dscores = sc.bytes;
    sc.bytes += floats;
  }
  if (q->dtype != RAF_F32) {
    sc.probs = sc.bytes;
    sc.bytes += raf_mem_aligned(n * raf_dtype_size(q->dtype));
  }
  return sc;
}

/* The `matmul-epilogue` pattern: a product with the bias, residual, GELU
 * (keeping its input for the backward), GELU derivative or bias gradient
 * that cuBLASLt computes in the same call. What it groups is exactly what
 * ir/epilogue.h accepts in the dtypes of cublas's FUSED rows, the test
 * cublas_runs_call makes, so that every group it makes runs as one
 * cublasLtMatmul and none falls back to its statements. */

/* The first members of a candidate group, for raf_epilogue_match. */
typedef struct prefix {
  raf_stmt *const *m;
  int n;
} prefix;

static bool read_outside(const raf_value *v, void *arg) {
  const prefix *p = arg;
  for (const raf_use *u = v->uses; u; u = u->next) {
    bool inside = false;
    for (int i = 0; i < p->n && !inside; i++)
      inside = p->m[i] == u->user;
    if (!inside)
      return true;
  }
  return false;
}

static bool accepted(raf_stmt **members, int n) {
  for (int i = 0; i < n; i++)
    if (!raf_dialect_fuses(RAF_DIALECT_CUBLAS, members[i]->op,
                           raf_stmt_key_dtype(members[i])))
      return false;
  prefix p = {members, n};
  return raf_epilogue_match((const raf_stmt *const *)members, n,
                            read_outside, &p, NULL);
}

/* The user of v that can continue an epilogue chain (an add, a gelu of v,
 * a gelu_grad whose gradient operand is v), when exactly one can. */
static raf_stmt *chain_user(const raf_value *v) {
  raf_stmt *found = NULL;
  for (const raf_use *u = v->uses; u; u = u->next) {
    raf_stmt *s = u->user;
    bool link = s->op == RAF_OP_ADD ||
                ((s->op == RAF_OP_GELU || s->op == RAF_OP_GELU_GRAD) &&
                 s->operands[0].value == v);
    if (!link || s == found)
      continue;
    if (found)
      return NULL;
    found = s;
  }
  return found;
}

/* The bias gradient's pair: the product mm = matmul(x, dy) {transpose_a}
 * and a sum of dy. */
static int bias_grad_pair(raf_stmt *mm, raf_stmt *sum, raf_stmt **members) {
  members[0] = mm;
  members[1] = sum;
  return accepted(members, 2) ? 2 : 0;
}

static int match_matmul_epilogue(raf_stmt *anchor, raf_stmt **members,
                                 int max) {
  enum { LONGEST = 4 }; /* the product, bias, residual or gelu */
  if (max < 2)
    return 0;
  if (anchor->op == RAF_OP_SUM) { /* the pair, met at its sum first */
    for (const raf_use *u = anchor->operands[0].value->uses; u; u = u->next)
      if (u->user->op == RAF_OP_MATMUL &&
          bias_grad_pair(u->user, anchor, members))
        return 2;
    return 0;
  }
  if (anchor->op != RAF_OP_MATMUL || anchor->nresults != 1)
    return 0;
  int n = 0;
  members[n++] = anchor;
  for (raf_stmt *cur = anchor; n < max && n < LONGEST;) {
    raf_stmt *u = chain_user(cur->results[0]);
    if (!u || u->nresults != 1)
      break;
    members[n++] = cur = u;
  }
  for (; n >= 2; n--) /* the longest chain cuBLASLt takes */
    if (accepted(members, n))
      return n;
  if (anchor->noperands == 2)
    for (const raf_use *u = anchor->operands[1].value->uses; u; u = u->next)
      if (u->user->op == RAF_OP_SUM && bias_grad_pair(anchor, u->user, members))
        return 2;
  return 0;
}

static const raf_fuse_pattern cublas_patterns[] = {
    {"matmul-epilogue", 10, match_matmul_epilogue},
};

/* ---- cudnn --------------------------------------------------------------- */

/* batch_norm's statistics are per channel, dim 1 of x [N, C, ..]. */
static int64_t channels(const raf_stmt *s, int x) {
  const raf_type *t = s->operands[x].value->type;
  return t->rank >= 2 ? t->dims[1] : 1;
}

static int64_t numel(const raf_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->dims[i];
  return n;
}

/* Appends a part of `bytes` to sc. */
static void add_part(raf_cudnn_scratch *sc, raf_cudnn_part part,
                     int64_t bytes) {
  sc->part[part] = sc->bytes;
  sc->bytes += raf_mem_aligned(bytes);
}

raf_cudnn_scratch raf_cudnn_scratch_of(const raf_stmt *s) {
  raf_cudnn_scratch sc = {RAF_CUDNN_WORKSPACE_BYTES, {0}};
  for (int i = 0; i < RAF_CUDNN_PARTS; i++)
    sc.part[i] = -1;
  bool training = raf_stmt_attr_bool(s, "training");
  switch (s->op) {
  case RAF_OP_MAX_POOL2D_GRAD: { /* (dy, x): y has dy's shape */
    const raf_type *dy = s->operands[0].value->type;
    add_part(&sc, RAF_CUDNN_Y, numel(dy) * raf_dtype_size(dy->dtype));
    add_part(&sc, RAF_CUDNN_INDEX, numel(dy));
    break;
  }
  case RAF_OP_BATCH_NORM: {
    int64_t c = channels(s, 0) * (int64_t)sizeof(float);
    if (training)
      add_part(&sc, RAF_CUDNN_MEAN, c);
    add_part(&sc, RAF_CUDNN_INV_VAR, c);
    break;
  }
  case RAF_OP_BATCH_NORM_GRAD: { /* (dy, x, gamma, mean, var) */
    int64_t c = channels(s, 1) * (int64_t)sizeof(float);
    const raf_type *x = s->operands[1].value->type;
    add_part(&sc, RAF_CUDNN_MEAN, c);
    add_part(&sc, RAF_CUDNN_INV_VAR, c);
    add_part(&sc, RAF_CUDNN_Y, numel(x) * raf_dtype_size(x->dtype));
    add_part(&sc, RAF_CUDNN_RUN_MEAN, c);
    add_part(&sc, RAF_CUDNN_RUN_VAR, c);
    break;
  }
  case RAF_OP_SCALED_DOT_PRODUCT_ATTENTION:
  case RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD: {
    bool grad = s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD;
    const raf_type *q = s->operands[grad ? 1 : 0].value->type,
                   *k = s->operands[grad ? 2 : 1].value->type,
                   *v = s->operands[grad ? 3 : 2].value->type;
    if (q->rank < 2 || k->rank < 2 || v->rank < 2)
      break;
    int64_t rows = numel(q) / q->dims[q->rank - 1]; /* BH * L */
    int64_t size = raf_dtype_size(q->dtype);
    add_part(&sc, RAF_CUDNN_STATS, rows * (int64_t)sizeof(float));
    if (!grad)
      break;
    int64_t scores = rows * k->dims[k->rank - 2]; /* BH * L * S */
    add_part(&sc, RAF_CUDNN_O, rows * v->dims[v->rank - 1] * size);
    add_part(&sc, RAF_CUDNN_DSUM, rows * (int64_t)sizeof(float));
    add_part(&sc, RAF_CUDNN_P, scores * size);
    add_part(&sc, RAF_CUDNN_DS, scores * size);
    break;
  }
  default:
    break;
  }
  return sc;
}

static raf_scratch cudnn_scratch(const raf_stmt *s) {
  raf_scratch sc = {raf_cudnn_scratch_of(s).bytes, -1, -1, -1};
  return sc;
}

/* ---- cudnn's `conv-bias-relu` pattern --------------------------------------- */

/* Whether b is a per-channel bias of y [N, C, H, W]: [1, C, 1, 1] or
 * [C, 1, 1], its dtype. */
static bool per_channel(const raf_type *b, const raf_type *y) {
  if (y->rank != 4 || b->dtype != y->dtype || b->rank < 3 || b->rank > 4 ||
      b->dims[b->rank - 3] != y->dims[1])
    return false;
  for (int i = 0; i < b->rank; i++)
    if (i != b->rank - 3 && b->dims[i] != 1)
      return false;
  return true;
}

/* The only user of v, or NULL. */
static raf_stmt *only_user(const raf_value *v) {
  return v->uses && !v->uses->next ? v->uses->user : NULL;
}

/* The operand of add that is not v, when add adds v and a per-channel
 * bias; else NULL. */
static const raf_value *bias_added(const raf_stmt *add, const raf_value *v) {
  if (!add || add->op != RAF_OP_ADD || add->noperands != 2 ||
      add->nresults != 1)
    return NULL;
  int at = add->operands[0].value == v ? 0 : 1;
  const raf_value *b = add->operands[1 - at].value;
  return add->operands[at].value == v && b != v &&
                 per_channel(b->type, v->type)
             ? b
             : NULL;
}

static bool cudnn_fuses(const raf_stmt *s) {
  return raf_dialect_fuses(RAF_DIALECT_CUDNN, s->op, raf_stmt_key_dtype(s));
}

/* conv2d, its bias and a relu after it when there is one (members[0..]). */
static int match_conv_bias_relu(raf_stmt *anchor, raf_stmt **members,
                                int max) {
  if (max < 2 || anchor->op != RAF_OP_CONV2D || anchor->nresults != 1 ||
      !cudnn_fuses(anchor))
    return 0;
  raf_stmt *add = only_user(anchor->results[0]);
  if (!bias_added(add, anchor->results[0]) || !cudnn_fuses(add))
    return 0;
  members[0] = anchor;
  members[1] = add;
  raf_stmt *relu = only_user(add->results[0]);
  if (max >= 3 && relu && relu->op == RAF_OP_RELU && relu->nresults == 1 &&
      cudnn_fuses(relu)) {
    members[2] = relu;
    return 3;
  }
  return 2;
}

bool raf_cudnn_conv_bias_relu(const raf_func *f, raf_conv_bias_relu *out) {
  raf_conv_bias_relu c = {NULL, NULL, NULL, -1, -1, -1};
  const raf_stmt *s = f->first, *ret = f->last;
  if (!s || s->op != RAF_OP_CONV2D || !ret || ret->op != RAF_OP_RETURN ||
      ret->noperands != 1)
    return false;
  c.conv = s;
  c.add = s->next;
  const raf_value *bias = bias_added(c.add, s->results[0]);
  if (!bias || !only_user(s->results[0]))
    return false;
  const raf_stmt *last = c.add;
  if (c.add->next != ret) {
    c.relu = c.add->next;
    if (c.relu->op != RAF_OP_RELU || c.relu->next != ret ||
        c.relu->operands[0].value != c.add->results[0] ||
        !only_user(c.add->results[0]))
      return false;
    last = c.relu;
  }
  const raf_value *x = s->operands[0].value, *w = s->operands[1].value;
  if (ret->operands[0].value != last->results[0] || x->def || w->def ||
      bias->def)
    return false;
  c.x = x->index;
  c.w = w->index;
  c.bias = bias->index;
  if (out)
    *out = c;
  return true;
}

static bool cudnn_runs_call(raf_dialect d, const raf_func *callee) {
  return raf_dialect_rows_run_call(d, callee) &&
         raf_cudnn_conv_bias_relu(callee, NULL);
}

/* What cudnn lacks of the ops it has rows for. */
static const char *cudnn_lacks(raf_opcode op) {
  return op == RAF_OP_BATCH_NORM_GRAD
             ? "the cudnn dialect's is cuDNN's training-mode backward, in f32"
             : NULL;
}

static const raf_fuse_pattern cudnn_patterns[] = {
    {"conv-bias-relu", 10, match_conv_bias_relu},
};

/* cuDNN's batch norm backward is the training form (the batch's own
 * statistics); the gradient of an inference-mode batch_norm is left to
 * dialects that have it. */
static bool cudnn_runs_stmt(raf_dialect d, const raf_stmt *s) {
  if (s->op == RAF_OP_BATCH_NORM_GRAD && !raf_stmt_attr_bool(s, "training"))
    return false;
  return raf_dialect_rows_run_stmt(d, s);
}

/* ---- The records --------------------------------------------------------- */

const raf_dialect_traits raf_dialect_traits_CUDA = {
    .dialect = RAF_DIALECT_CUDA,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = raf_dialect_rows_run_call,
    .scratch = raf_dialect_no_scratch,
    .unavailable = cuda_unavailable,
    .lacks = raf_dialect_lacks_nothing,
};

const raf_dialect_traits raf_dialect_traits_CUBLAS = {
    .dialect = RAF_DIALECT_CUBLAS,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = cublas_runs_call,
    .scratch = cublas_scratch,
    .patterns = cublas_patterns,
    .npatterns = 1,
    .unavailable = cublas_unavailable,
    .lacks = raf_dialect_lacks_nothing,
};

const raf_dialect_traits raf_dialect_traits_NCCL = {
    .dialect = RAF_DIALECT_NCCL,
    .runs_stmt = raf_dialect_rows_run_stmt,
    .runs_call = raf_dialect_rows_run_call,
    .scratch = raf_dialect_no_scratch,
    .unavailable = nccl_unavailable,
    .lacks = raf_dialect_lacks_nothing,
};

const raf_dialect_traits raf_dialect_traits_CUDNN = {
    .dialect = RAF_DIALECT_CUDNN,
    .runs_stmt = cudnn_runs_stmt,
    .runs_call = cudnn_runs_call,
    .scratch = cudnn_scratch,
    .patterns = cudnn_patterns,
    .npatterns = 1,
    .unavailable = cudnn_unavailable,
    .lacks = cudnn_lacks,
};
