/* conv.c: the onednn dialect's conv2d, conv2d_grad_input and
 * conv2d_grad_weight, f32 and bf16, on oneDNN's convolution primitives.
 *
 * Why: cpu-ref's convolutions compute in double, one output plane at a
 * time, far too slowly to train a ResNet; oneDNN's are AVX-512 (and, for
 * bf16, AVX-512 BF16 / AMX) kernels.
 *
 * Semantics are cpu-ref's (runtime/cpuref/nn.c, grad.c): NCHW x, OIHW w
 * (groups as PyTorch: oneDNN's goihw view of the same memory), stride,
 * padding, dilation (oneDNN counts dilation from 0). The right and bottom
 * padding oneDNN wants is what makes the floor-mode output size exact
 * (negative when the last rows of the input are never read). Sums are f32
 * in oneDNN's order; cpu-ref's in double (f32 results) or float (bf16), so
 * results agree within f32 (bf16) rounding of the sums; docs/Dialects.md
 * has the measured tolerances. bf16 results are rounded once; the weight
 * gradient of bf16 operands sums in f32 and rounds once at the end.
 *
 * Layouts: the tensors are plain row-major NCHW and OIHW. On plain memory
 * oneDNN 2.6 runs its gemm-based convolutions (im2col and an sgemm;
 * `gemm:jit`); on its blocked layouts (nChw16c, OIhw16i16o) its direct
 * AVX-512 kernels, about twice as fast on ResNet's 3x3 convolutions,
 * reorders included. So the primitives are created on the layouts oneDNN
 * prefers (format `any`), with reorders from and to the plain tensors:
 * the activations in each task, w once per call (on the calling thread),
 * and the weight gradient's partials are summed in oneDNN's layout and
 * reordered once. Where oneDNN has no such primitive (or a reorder would
 * need scratch memory), and for the input gradient of fewer than 16
 * channels, the plain layouts are used. docs/Dialects.md has the figures.
 *
 * Tasks: the batch is split into chunks of images (a shape-fixed split:
 * at most MAX_CHUNKS chunks of about TASK_WORK multiply-adds), each one
 * primitive call on its own images; the input gradient likewise. The
 * weight gradient of a chunk is a partial sum (f32) in a buffer of its
 * own, and the partials are added in chunk order, so results are the
 * same bits at every thread count.
 */
#ifdef RAF_HAVE_ONEDNN

#include "runtime/onednn/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* About this many multiply-adds per chunk of images, at most MAX_CHUNKS
 * chunks (the weight gradient keeps a partial sum per chunk). */
#define TASK_WORK ((int64_t)1 << 25)
enum { MAX_CHUNKS = 8, CHANNEL_BLOCK = 16 };

enum conv_kind { CONV_FORWARD = 1, CONV_GRAD_INPUT, CONV_GRAD_WEIGHT };

/* The key's words: what a convolution primitive is made from. */
enum {
  K_KIND,
  K_DTYPE,
  K_N,
  K_C,
  K_H,
  K_W,
  K_O,
  K_KH,
  K_KW,
  K_OH,
  K_OW,
  K_SH,
  K_SW,
  K_PH,
  K_PW,
  K_DH,
  K_DW,
  K_GROUPS,
  K_Y_CHANNELS /* y's channels when K_O is a block of them, else 0 */
};

typedef struct conv_plan {
  enum conv_kind kind;
  raf_dtype dt;
  int64_t n, chunk, nchunks; /* images, or w's channels (split_channels) */
  bool split_channels;
  int64_t w_block;                   /* elements of w per output channel */
  int64_t x_image, y_image, w_elems; /* elements per image, of w */
  const onednn_prim *full, *last;    /* chunk images, the shorter last */
  size_t work_bytes;                 /* per task (onednn_run_prim's) */
  bool native_partials; /* the weight gradient's, in full's layout */
  char why[256];        /* non-empty: no plan, the kernel reports this */
} conv_plan;

static void dims_of(const onednn_key *k, int64_t n, dnnl_dims_t x,
                    dnnl_dims_t y) {
  x[0] = y[0] = n;
  x[1] = k->w[K_C];
  x[2] = k->w[K_H];
  x[3] = k->w[K_W];
  y[1] = k->w[K_O];
  y[2] = k->w[K_OH];
  y[3] = k->w[K_OW];
}

/* w as OIHW, or for groups > 1 as GOIHW over the same memory. */
static dnnl_status_t weights_md(dnnl_memory_desc_t *md, const onednn_key *k,
                                dnnl_data_type_t dt) {
  int64_t g = k->w[K_GROUPS];
  if (g == 1) {
    dnnl_dims_t d = {k->w[K_O], k->w[K_C], k->w[K_KH], k->w[K_KW]};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dt, dnnl_oihw);
  }
  dnnl_dims_t d = {g, k->w[K_O] / g, k->w[K_C] / g, k->w[K_KH], k->w[K_KW]};
  return dnnl_memory_desc_init_by_tag(md, 5, d, dt, dnnl_goihw);
}

/* The plain memory descriptors of x, w and y for key k; w is f32 for the
 * weight gradient (its partial sums). */
static dnnl_status_t plain_mds(const onednn_key *k, enum conv_kind kind,
                               dnnl_memory_desc_t *x, dnnl_memory_desc_t *w,
                               dnnl_memory_desc_t *y) {
  dnnl_data_type_t dt = (dnnl_data_type_t)k->w[K_DTYPE];
  dnnl_dims_t xd, yd;
  dims_of(k, k->w[K_N], xd, yd);
  dnnl_status_t rc = dnnl_memory_desc_init_by_tag(x, 4, xd, dt, dnnl_nchw);
  int64_t plane = k->w[K_OH] * k->w[K_OW];
  dnnl_dims_t ys = {(k->w[K_Y_CHANNELS] ? k->w[K_Y_CHANNELS] : k->w[K_O]) *
                        plane,
                    plane, k->w[K_OW], 1};
  if (rc == dnnl_success)
    rc = dnnl_memory_desc_init_by_strides(y, 4, yd, dt, ys);
  if (rc == dnnl_success)
    rc = weights_md(w, k, kind == CONV_GRAD_WEIGHT ? dnnl_f32 : dt);
  return rc;
}

/* The convolution descriptor of key k for propagation kind `kind`, on the
 * plain layouts or, `any`, on those oneDNN prefers. */
static dnnl_status_t conv_desc(dnnl_convolution_desc_t *desc,
                               const onednn_key *k, enum conv_kind kind,
                               bool any) {
  dnnl_memory_desc_t x, y, w;
  dnnl_status_t rc = plain_mds(k, kind, &x, &w, &y);
  dnnl_memory_desc_t *mds[3] = {&x, &w, &y};
  for (int i = 0; i < 3 && any && rc == dnnl_success; i++)
    rc = dnnl_memory_desc_init_by_tag(mds[i], mds[i]->ndims, mds[i]->dims,
                                      mds[i]->data_type, dnnl_format_tag_any);
  if (rc != dnnl_success)
    return rc;
  dnnl_dims_t strides = {k->w[K_SH], k->w[K_SW]};
  dnnl_dims_t dilates = {k->w[K_DH] - 1, k->w[K_DW] - 1};
  dnnl_dims_t pad_l = {k->w[K_PH], k->w[K_PW]};
  dnnl_dims_t pad_r = {
      (k->w[K_OH] - 1) * k->w[K_SH] + (k->w[K_KH] - 1) * k->w[K_DH] + 1 -
          k->w[K_H] - k->w[K_PH],
      (k->w[K_OW] - 1) * k->w[K_SW] + (k->w[K_KW] - 1) * k->w[K_DW] + 1 -
          k->w[K_W] - k->w[K_PW]};
  switch (kind) {
  case CONV_FORWARD:
    return dnnl_dilated_convolution_forward_desc_init(
        desc, dnnl_forward_training, dnnl_convolution_direct, &x, &w, NULL, &y,
        strides, dilates, pad_l, pad_r);
  case CONV_GRAD_INPUT:
    return dnnl_dilated_convolution_backward_data_desc_init(
        desc, dnnl_convolution_direct, &x, &w, &y, strides, dilates, pad_l,
        pad_r);
  case CONV_GRAD_WEIGHT:
    return dnnl_dilated_convolution_backward_weights_desc_init(
        desc, dnnl_convolution_direct, &x, &w, NULL, &y, strides, dilates,
        pad_l, pad_r);
  }
  return dnnl_invalid_arguments;
}

/* The primitive of pr->key on oneDNN's preferred layouts (any) or on the
 * plain ones; the backward ones take a forward primitive descriptor of
 * the same shapes as their hint. Arguments in the kernel's order: forward
 * src, weights, dst; input gradient diff_dst, weights, diff_src; weight
 * gradient diff_dst, src, diff_weights. */
static dnnl_status_t create_conv_on(dnnl_engine_t engine, onednn_prim *pr,
                                    bool any) {
  enum conv_kind kind = (enum conv_kind)pr->key.w[K_KIND];
  dnnl_convolution_desc_t desc, fwd;
  dnnl_memory_desc_t x = {0}, w = {0}, y = {0}; /* set when rc is success */
  dnnl_status_t rc = conv_desc(&desc, &pr->key, kind, any);
  if (rc == dnnl_success)
    rc = plain_mds(&pr->key, kind, &x, &w, &y);
  dnnl_primitive_desc_t hint = NULL;
  if (rc == dnnl_success && kind != CONV_FORWARD) {
    rc = conv_desc(&fwd, &pr->key, CONV_FORWARD, any);
    if (rc == dnnl_success)
      rc = dnnl_primitive_desc_create(&hint, &fwd, NULL, engine, NULL);
  }
  static const int forward[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  static const int input[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS,
                              DNNL_ARG_DIFF_SRC};
  static const int weight[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_SRC,
                               DNNL_ARG_DIFF_WEIGHTS};
  const dnnl_memory_desc_t forward_user[] = {x, w, y}, input_user[] = {y, w, x},
                           weight_user[] = {y, x, w};
  const int *args = kind == CONV_FORWARD      ? forward
                    : kind == CONV_GRAD_INPUT ? input
                                              : weight;
  const dnnl_memory_desc_t *user = kind == CONV_FORWARD      ? forward_user
                                   : kind == CONV_GRAD_INPUT ? input_user
                                                             : weight_user;
  if (rc == dnnl_success)
    rc = onednn_make_prim(engine, pr, &desc, hint, args, 3, 2, user);
  pr->zero_memory = kind == CONV_GRAD_WEIGHT;
  if (hint)
    dnnl_primitive_desc_destroy(hint);
  return rc;
}

/* oneDNN's preferred layouts, reordered from and to the plain tensors (its
 * blocked kernels are faster, reorders included), else the plain ones.
 * The input gradient of fewer than 16 channels (a stem's) is plain: the
 * blocked one pads them to 16 and ran 2 to 10 times slower. */
static dnnl_status_t create_conv(dnnl_engine_t engine, onednn_prim *pr) {
  bool few = pr->key.w[K_KIND] == CONV_GRAD_INPUT && pr->key.w[K_C] < 16;
  dnnl_status_t rc =
      few ? dnnl_unimplemented : create_conv_on(engine, pr, true);
  return rc == dnnl_success ? rc : create_conv_on(engine, pr, false);
}

static void plan_conv(onednn_state *st, const raf_stmt *s, conv_plan *p) {
  p->kind = s->op == RAF_OP_CONV2D              ? CONV_FORWARD
            : s->op == RAF_OP_CONV2D_GRAD_INPUT ? CONV_GRAD_INPUT
                                                : CONV_GRAD_WEIGHT;
  /* x, w and y (dy) by the statement's operands and result. */
  const raf_type *x = s->operands[0].value->type,
                 *w = s->operands[1].value->type, *y = s->results[0]->type;
  if (p->kind == CONV_GRAD_INPUT) {
    x = s->results[0]->type;
    y = s->operands[0].value->type;
  } else if (p->kind == CONV_GRAD_WEIGHT) {
    x = s->operands[1].value->type;
    w = s->results[0]->type;
    y = s->operands[0].value->type;
  }
  p->dt = x->dtype;
  if (onednn_dtype(p->dt) == dnnl_data_type_undef) {
    snprintf(p->why, sizeof p->why,
             "onednn has no %s for %s (only f32 and bf16)",
             raf_op_table[s->op].name, raf_dtype_name(p->dt));
    return;
  }
  raf_attr_value stride, pad, dil;
  raf_stmt_attr(s, "stride", &stride);
  raf_stmt_attr(s, "padding", &pad);
  raf_stmt_attr(s, "dilation", &dil);
  onednn_key key = {{0}};
  int64_t *k = key.w;
  k[K_KIND] = p->kind;
  k[K_DTYPE] = onednn_dtype(p->dt);
  k[K_C] = x->dims[1];
  k[K_H] = x->dims[2];
  k[K_W] = x->dims[3];
  k[K_O] = w->dims[0];
  k[K_KH] = w->dims[2];
  k[K_KW] = w->dims[3];
  k[K_OH] = y->dims[2];
  k[K_OW] = y->dims[3];
  k[K_SH] = stride.u.ints.v[0];
  k[K_SW] = stride.u.ints.v[1];
  k[K_PH] = pad.u.ints.v[0];
  k[K_PW] = pad.u.ints.v[1];
  k[K_DH] = dil.u.ints.v[0];
  k[K_DW] = dil.u.ints.v[1];
  k[K_GROUPS] = raf_stmt_attr_int(s, "groups");
  p->n = x->dims[0];
  p->x_image = k[K_C] * k[K_H] * k[K_W];
  p->y_image = k[K_O] * k[K_OH] * k[K_OW];
  p->w_elems = w->numel;
  if (x->numel == 0 || w->numel == 0 || y->numel == 0)
    return; /* nothing to compute: the kernel writes zeros or nothing */
  int64_t work = p->y_image * w->dims[1] * k[K_KH] * k[K_KW];
  int64_t want = p->n * work / TASK_WORK;
  /* The weight gradient (one group) of a large w on small images splits
   * its output channels: blocks of 16 (oneDNN's), each over the whole
   * batch, x reordered once; the batch's partials would cost more. */
  p->split_channels = p->kind == CONV_GRAD_WEIGHT && k[K_GROUPS] == 1 &&
                      k[K_O] >= 2 * CHANNEL_BLOCK &&
                      4 * p->w_elems > p->n * p->x_image;
  int64_t parts = p->split_channels ? k[K_O] / CHANNEL_BLOCK : p->n;
  want = onednn_min64(onednn_min64(want, parts), MAX_CHUNKS);
  want = want < 1 ? 1 : want;
  if (p->split_channels) {
    p->chunk = (k[K_O] + want - 1) / want;
    p->chunk = (p->chunk + CHANNEL_BLOCK - 1) / CHANNEL_BLOCK * CHANNEL_BLOCK;
    p->nchunks = (k[K_O] + p->chunk - 1) / p->chunk;
    p->w_block = p->w_elems / k[K_O];
  } else {
    p->chunk = (p->n + want - 1) / want;
    p->nchunks = (p->n + p->chunk - 1) / p->chunk;
  }
  char what[160];
  snprintf(what, sizeof what, "%s %s convolution of %lldx%lldx%lld",
           raf_dtype_name(p->dt), raf_op_table[s->op].name, (long long)k[K_C],
           (long long)k[K_H], (long long)k[K_W]);
  int64_t *split = &k[K_N], whole = p->n;
  if (p->split_channels) {
    split = &k[K_O];
    whole = k[K_O];
    k[K_N] = p->n;
    k[K_Y_CHANNELS] = k[K_O];
  }
  *split = p->chunk;
  p->full =
      onednn_find_prim(st, &key, create_conv, what, p->why, sizeof p->why);
  *split = whole % p->chunk;
  if (p->full && *split)
    p->last =
        onednn_find_prim(st, &key, create_conv, what, p->why, sizeof p->why);
  p->work_bytes = p->full ? p->full->work_bytes : 0;
  if (p->last && p->last->work_bytes > p->work_bytes)
    p->work_bytes = p->last->work_bytes;
  /* The weight gradient's partials in the primitive's layout when both
   * primitives share it; else in the plain one. */
  p->native_partials =
      !p->split_channels && p->full && p->full->reorder[2] &&
      (!p->last || dnnl_memory_desc_equal(&p->full->md[2], &p->last->md[2]));
}

const void *onednn_bind_conv(onednn_state *st, const raf_stmt *s) {
  conv_plan *p = calloc(1, sizeof *p);
  if (!p || !onednn_keep_plan(st, p, free))
    return NULL;
  plan_conv(st, s, p);
  return p;
}

/* ---- Running ------------------------------------------------------------ */

typedef struct conv_job {
  const conv_plan *p;
  dnnl_engine_t engine;
  const char *a, *b; /* the operands */
  char *r;           /* the result */
  /* w (x of the weight gradient by channels) reordered for each
   * primitive, or NULL */
  const void *w_full, *w_last;
  float *partials;        /* the weight gradient's, one per chunk */
  int64_t partial_floats; /* floats per partial */
  size_t size;            /* bytes per element */
  atomic_int status;
} conv_job;

static void conv_tasks(void *data, int64_t begin, int64_t end) {
  conv_job *j = data;
  const conv_plan *p = j->p;
  void *work = NULL;
  void *base = onednn_alloc_aligned(p->work_bytes, &work);
  if (!base) {
    onednn_failed(&j->status, dnnl_out_of_memory);
    return;
  }
  int threads = onednn_openmp_single();
  for (int64_t t = begin; t < end; t++) {
    int64_t i0 = t * p->chunk;
    int64_t parts = p->split_channels ? p->w_elems / p->w_block : p->n;
    bool full = onednn_min64(p->chunk, parts - i0) == p->chunk;
    const onednn_prim *pr = full ? p->full : p->last;
    const void *w = full ? j->w_full : j->w_last;
    size_t xo = (size_t)(i0 * p->x_image) * j->size,
           yo = (size_t)(i0 * p->y_image) * j->size;
    void *args[3];
    unsigned native = 0;
    switch (p->kind) {
    case CONV_FORWARD:    /* x, w -> y */
    case CONV_GRAD_INPUT: /* dy, w -> dx */
      args[0] = (void *)(j->a + (p->kind == CONV_FORWARD ? xo : yo));
      args[1] = (void *)(w ? w : j->b);
      args[2] = j->r + (p->kind == CONV_FORWARD ? yo : xo);
      native = w ? 2u : 0u;
      break;
    case CONV_GRAD_WEIGHT: /* dy, x -> dw's partial, or channels of dw */
      if (p->split_channels) {
        int64_t plane = p->y_image / (p->w_elems / p->w_block);
        args[0] = (void *)(j->a + (size_t)(i0 * plane) * j->size);
        args[1] = (void *)(w ? w : j->b);
        native = w ? 2u : 0u;
        args[2] = j->partials
                      ? (void *)(j->partials + i0 * p->w_block)
                      : (void *)(j->r + (size_t)(i0 * p->w_block) * j->size);
        break;
      }
      args[0] = (void *)(j->a + yo);
      args[1] = (void *)(j->b + xo);
      args[2] = j->partials ? (void *)(j->partials + t * j->partial_floats)
                            : (void *)j->r;
      native = p->native_partials ? 4u : 0u;
      break;
    }
    dnnl_status_t rc = onednn_run_prim(j->engine, pr, args, native, work);
    if (rc != dnnl_success) {
      onednn_failed(&j->status, rc);
      break;
    }
  }
  onednn_openmp_restore(threads);
  free(base);
}

/* The partials summed in chunk order, into the first. */
static void sum_partials(void *data, int64_t begin, int64_t end) {
  conv_job *j = data;
  for (int64_t e = begin; e < end; e++) {
    float sum = j->partials[e];
    for (int64_t t = 1; t < j->p->nchunks; t++)
      sum += j->partials[t * j->partial_floats + e];
    j->partials[e] = sum;
  }
}

/* A split weight reorder's parts, for raf_kernel_parallel. */
typedef struct part_job {
  const conv_job *j;
  const onednn_prim *pr;
  void *to;
  atomic_int status;
} part_job;

static void part_tasks(void *data, int64_t begin, int64_t end) {
  part_job *pj = data;
  int threads = onednn_openmp_single();
  for (int64_t t = begin; t < end; t++) {
    dnnl_status_t rc =
        onednn_reorder_part(pj->j->engine, pj->pr, t, pj->j->b, pj->to);
    if (rc != dnnl_success) {
      onednn_failed(&pj->status, rc);
      break;
    }
  }
  onednn_openmp_restore(threads);
}

/* w (x for the weight gradient) reordered into the layout of primitive pr
 * (a malloc'd buffer in *base), or NULL when pr runs on the plain one; in
 * parts on the executor's threads where pr's layouts split. */
static dnnl_status_t reorder_weights(const raf_kernel *k, const conv_job *j,
                                     const onednn_prim *pr, void **base,
                                     const void **w) {
  *base = NULL;
  *w = NULL;
  if (!pr || !pr->reorder[1])
    return dnnl_success;
  void *at;
  *base = onednn_alloc_aligned(dnnl_memory_desc_get_size(&pr->md[1]), &at);
  if (!*base)
    return dnnl_out_of_memory;
  *w = at;
  if (pr->part_reorder) {
    part_job pj = {.j = j, .pr = pr, .to = at};
    atomic_init(&pj.status, dnnl_success);
    raf_kernel_parallel(k, pr->parts, 1, part_tasks, &pj);
    return (dnnl_status_t)atomic_load(&pj.status);
  }
  int threads = onednn_openmp_single();
  dnnl_status_t rc = onednn_reorder_arg(j->engine, pr, 1, j->b, at);
  onednn_openmp_restore(threads);
  return rc;
}

/* The weight gradient from the summed partials: to the plain layout, and
 * rounded to the result's dtype. */
static dnnl_status_t finish_weights(conv_job *j) {
  const conv_plan *p = j->p;
  float *plain = j->partials;
  void *base = NULL;
  dnnl_status_t rc = dnnl_success;
  if (p->native_partials) {
    if (p->dt == RAF_F32) {
      plain = (float *)j->r;
    } else {
      base = onednn_alloc_aligned(sizeof(float) * (size_t)p->w_elems,
                                  (void **)&plain);
      if (!base)
        return dnnl_out_of_memory;
    }
    int threads = onednn_openmp_single();
    rc = onednn_reorder_arg(j->engine, p->full, 2, j->partials, plain);
    onednn_openmp_restore(threads);
  }
  if (rc == dnnl_success && p->dt == RAF_F32 && plain != (float *)j->r)
    memcpy(j->r, plain, sizeof(float) * (size_t)p->w_elems);
  else if (rc == dnnl_success && p->dt != RAF_F32)
    onednn_round_to_bf16((uint16_t *)j->r, plain, p->w_elems);
  free(base);
  return rc;
}

raf_status onednn_conv(const raf_kernel *k) {
  const conv_plan *p = k->bound;
  onednn_state *st;
  if (onednn_kernel_plan(k, &st) != RAF_OK)
    return RAF_ERROR;
  if (p->why[0])
    return raf_kernel_fail(k, "%s", p->why);
  if (!p->full) { /* an empty operand or result */
    memset(k->out[0]->data, 0, k->out[0]->nbytes);
    return RAF_OK;
  }
  conv_job j = {.p = p,
                .engine = st->engine,
                .a = k->in[0]->data,
                .b = k->in[1]->data,
                .r = k->out[0]->data,
                .size = (size_t)raf_dtype_size(p->dt)};
  atomic_init(&j.status, dnnl_success);
  void *w_full = NULL, *w_last = NULL;
  dnnl_status_t rc = dnnl_success;
  if (p->kind != CONV_GRAD_WEIGHT || p->split_channels) {
    /* Operand 1 (w; x of the weight gradient by channels) once per call,
     * not per task. */
    rc = reorder_weights(k, &j, p->full, &w_full, &j.w_full);
    if (rc == dnnl_success && p->last &&
        dnnl_memory_desc_equal(&p->full->md[1], &p->last->md[1]))
      j.w_last = j.w_full;
    else if (rc == dnnl_success)
      rc = reorder_weights(k, &j, p->last, &w_last, &j.w_last);
  }
  /* The weight gradient's f32 sums: the chunks' partials (in oneDNN's
   * layout where both primitives share it), or, split by channels, the
   * whole of it before rounding to bf16. */
  bool sums = p->kind == CONV_GRAD_WEIGHT &&
              (p->dt != RAF_F32 ||
               (!p->split_channels && (p->nchunks > 1 || p->native_partials)));
  if (sums && rc == dnnl_success) {
    j.partial_floats = p->w_elems;
    if (p->native_partials)
      j.partial_floats =
          (int64_t)(dnnl_memory_desc_get_size(&p->full->md[2]) / sizeof(float));
    int64_t count = p->split_channels ? 1 : p->nchunks;
    j.partials = malloc(sizeof(float) * (size_t)(count * j.partial_floats));
    if (!j.partials)
      rc = dnnl_out_of_memory;
  }
  if (rc == dnnl_success) {
    raf_kernel_parallel(k, p->nchunks, 1, conv_tasks, &j);
    rc = (dnnl_status_t)atomic_load(&j.status);
  }
  if (rc == dnnl_success && j.partials) {
    if (p->nchunks > 1 && !p->split_channels)
      raf_kernel_parallel(k, j.partial_floats, 1 << 14, sum_partials, &j);
    rc = finish_weights(&j);
  }
  free(j.partials);
  free(w_full);
  free(w_last);
  if (rc != dnnl_success)
    return raf_kernel_fail(k, "oneDNN failed: %s", dnnl_status2str(rc));
  return RAF_OK;
}

#endif /* RAF_HAVE_ONEDNN */
