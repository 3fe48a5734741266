/* fake_cudnn.h: what the two halves of the fake cuDNN share.
 *
 * fake_cudnn.c is the backend API itself: descriptors, their attributes
 * and lifecycle, operation graphs, heuristics, plans, variant packs and
 * execution. fake_cudnn_exec.c is what each operation means: the shapes
 * and modes it accepts (checked when the operation is finalized) and its
 * computation on the host (when a plan executes). This header holds the
 * descriptor both halves read, the accessors of its attributes, and the
 * views of tensor data that execution hands to the operations.
 *
 * Which descriptors, attributes and modes the fake accepts (those raf's
 * cudnn dialect uses) is summarised atop fake_cudnn.c.
 */
#ifndef RAF_FAKE_CUDNN_H
#define RAF_FAKE_CUDNN_H

#include <cudnn_graph.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
  FK_MAX_SLOTS = 16,     /* attributes of one descriptor type, at most */
  FK_MAX_OP_TENSORS = 16 /* tensors of one operation, at most */
};

/* What an attribute table entry says of its attribute. */
enum {
  FK_REQ = 1,  /* finalize refuses the descriptor without it */
  FK_GET = 2,  /* computed by the fake: read with Get, never Set */
  FK_IN = 4,   /* a tensor the operation reads */
  FK_OUT = 8,  /* a tensor the operation writes */
  FK_STAT = 16 /* norm forward's mean and inverse variance: written in
                  training, read in inference */
};

/* One attribute of a descriptor type: its name, the type it is set with
 * (`alt` is a second type accepted, or equal to `type`), the element
 * counts allowed, FK_* flags, and for a descriptor-valued attribute the
 * descriptor type its elements must have (FK_ANY_OP: any operation). */
typedef struct fk_attr {
  cudnnBackendAttributeName_t name;
  cudnnBackendAttributeType_t type, alt;
  int64_t min, max;
  unsigned flags;
  int want;
} fk_attr;

enum { FK_NO_DESC = -1, FK_ANY_OP = -2 };

/* An attribute's value as set: a copy of the caller's elements. */
typedef struct fk_slot {
  bool set;
  cudnnBackendAttributeType_t type;
  int64_t count;
  void *data;
} fk_slot;

/* A tensor descriptor's attributes, filled at its finalize. */
typedef struct fk_tensor {
  int64_t uid, align;
  cudnnDataType_t type;
  int rank;
  int64_t dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  bool is_virtual, by_value;
} fk_tensor;

/* Every backend descriptor. Descriptors are reference counted: a
 * descriptor set as another's attribute lives as long as that one does,
 * so that callers may destroy what they built a graph from, as cuDNN
 * allows (it copies). */
typedef struct fk_desc fk_desc;
struct fk_desc {
  uint32_t magic;
  cudnnBackendDescriptorType_t type;
  const fk_attr *attrs; /* the type's table, nattrs entries */
  int nattrs;
  int refs;
  bool finalized, destroyed;
  fk_slot slot[FK_MAX_SLOTS]; /* slot[i] holds attrs[i] */
  fk_tensor t;                /* a tensor */
  char name[32];              /* an operation: its name in logs */
  int nin, nout;              /* an operation: the tensors it reads... */
  fk_desc *in[FK_MAX_OP_TENSORS], *out[FK_MAX_OP_TENSORS]; /* ...writes */
  fk_desc **ops;     /* a graph: its operations in topological order */
  int nops;
  fk_desc **tensors; /* a graph: one tensor descriptor per unique id */
  int ntensors;
  int nconfigs;      /* an engine heuristic: configs it offers (0 or 1) */
  fk_desc *graph;    /* an engine config: its graph (a reference) */
  int64_t workspace; /* an engine config or plan: workspace bytes */
};

/* Sets the message cudnnGetLastErrorString returns; returns s. */
cudnnStatus_t fk_fail(cudnnStatus_t s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Attribute accessors; each returns `dflt` where the attribute is unset.
 * fk_int reads INT64, INT32, BOOLEAN, FRACTION (the numerator) and the
 * enumerations; fk_num reads FLOAT and DOUBLE; fk_sub a descriptor. */
static inline int fk_attr_index(const fk_desc *d,
                                cudnnBackendAttributeName_t n) {
  for (int i = 0; i < d->nattrs; i++)
    if (d->attrs[i].name == n)
      return i;
  return -1;
}

static inline const fk_slot *fk_slot_of(const fk_desc *d,
                                        cudnnBackendAttributeName_t n) {
  int i = fk_attr_index(d, n);
  return i >= 0 && d->slot[i].set ? &d->slot[i] : NULL;
}

static inline int64_t fk_count(const fk_desc *d,
                               cudnnBackendAttributeName_t n) {
  const fk_slot *s = fk_slot_of(d, n);
  return s ? s->count : 0;
}

static inline int64_t fk_int(const fk_desc *d, cudnnBackendAttributeName_t n,
                             int64_t i, int64_t dflt) {
  const fk_slot *s = fk_slot_of(d, n);
  if (!s || i < 0 || i >= s->count)
    return dflt;
  switch (s->type) {
  case CUDNN_TYPE_INT64: return ((const int64_t *)s->data)[i];
  case CUDNN_TYPE_INT32: return ((const int32_t *)s->data)[i];
  case CUDNN_TYPE_BOOLEAN: return ((const bool *)s->data)[i];
  case CUDNN_TYPE_FRACTION:
    return ((const cudnnFraction_t *)s->data)[i].numerator;
  default: return ((const int *)s->data)[i];
  }
}

static inline double fk_num(const fk_desc *d, cudnnBackendAttributeName_t n,
                            double dflt) {
  const fk_slot *s = fk_slot_of(d, n);
  if (!s)
    return dflt;
  return s->type == CUDNN_TYPE_DOUBLE ? *(const double *)s->data
                                      : *(const float *)s->data;
}

static inline fk_desc *fk_sub(const fk_desc *d,
                              cudnnBackendAttributeName_t n) {
  const fk_slot *s = fk_slot_of(d, n);
  return s && s->type == CUDNN_TYPE_BACKEND_DESCRIPTOR
             ? ((fk_desc **)s->data)[0]
             : NULL;
}

/* A tensor's data during execution: host memory, with the tensor's
 * attributes. */
typedef struct fk_view {
  const fk_tensor *t;
  char *data;
} fk_view;

/* The views of one execution, by unique id. */
typedef struct fk_env {
  int n;
  fk_view *views;
} fk_env;

size_t fk_dtype_size(cudnnDataType_t t);
/* The elements a tensor's strides reach: the size of its storage. */
int64_t fk_span(const fk_tensor *t);

/* fake_cudnn_exec.c: checks a (generically validated) operation's shapes
 * and modes and names it, at its finalize; and computes it. */
cudnnStatus_t fk_check_op(fk_desc *op);
cudnnStatus_t fk_run_op(const fk_desc *op, const fk_env *env);

#endif
