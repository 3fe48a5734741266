/* import.h: the shared state of raf-import, the ONNX to .raf importer.
 *
 * raf-import reads an ONNX model (protobuf-c, onnx.proto), walks its nodes in
 * order and writes each as one or more .raf statements into a text buffer,
 * every statement with its type written out. The text is then parsed,
 * verified and printed canonically by the raf library (write.c), so the
 * library's own shape inference checks the importer's arithmetic.
 *
 * Values known at import time (initializers, Constant nodes, and what is
 * computed from them and from static shapes: Shape, Size, ConstantOfShape,
 * integer arithmetic) are folded here, so that inputs ONNX takes as tensors
 * but .raf as attributes (a Reshape's shape, Slice's starts, ...) become
 * attributes. A constant used as data is written as a `constant` statement;
 * an initializer used as data becomes a `{param}` argument (integer and bool
 * ones a `{state}`), its value going to the safetensors file.
 *
 * Nothing in these files prints or exits except main.c; problems are
 * recorded in the importer's error list (imp_error).
 */
#ifndef RAF_IMPORT_H
#define RAF_IMPORT_H

#include "include/raf/raf.h"
#include "ir/arena.h"
#include "ir/ir.h"
#include "ir/strmap.h"
#include "onnx.pb-c.h"

#include <stdbool.h>
#include <stdint.h>

/* The largest dimension raf-import accepts, and the largest attribute
 * (stride, padding, dilation, block size): with both bounded, the shape
 * arithmetic of any op stays far from int64's limits whatever the model
 * says. */
#define IMP_MAX_DIM ((int64_t)1 << 32)
#define IMP_MAX_ATTR ((int64_t)1 << 30)

/* A tensor whose value is known at import time: little-endian, C order, in
 * raf's element type (bf16 and f16 as their 16-bit patterns). */
typedef struct imp_tensor {
  raf_dtype dt;
  int rank;
  int64_t dims[RAF_MAX_RANK];
  int64_t numel;
  bool splat; /* every element is data[0] (constants of any size) */
  void *data; /* numel elements (1 when splat), in the importer's arena */
} imp_tensor;

/* A value of the ONNX graph during import. */
typedef struct imp_value {
  raf_dtype dt;
  int rank;
  int64_t dims[RAF_MAX_RANK];
  const char *ref;   /* its .raf name ("%x"), or NULL while not emitted */
  imp_tensor *konst; /* its value when known at import time */
  imp_tensor *spec;  /* a graph input's specialisation data (--specialize) */
  int arg;           /* index into imp.args, or -1 */
  bool initializer;  /* an initializer (or a view of one kept as data) */
  bool poisoned;     /* made by a node that could not be imported */
} imp_value;

/* An argument of the imported function: a graph input or an initializer. */
typedef struct imp_arg {
  const char *name; /* without '%' */
  imp_value *value;
  bool used;        /* referenced by a statement or returned */
  bool initializer; /* {param} or {state}, its value in the safetensors */
  imp_tensor *init; /* the initializer's value */
} imp_arg;

typedef struct imp_options {
  const char *function;   /* the function's name, without '@' */
  bool bf16_io_as_f32;    /* bf16 inputs/outputs travel as f32 (for .npy) */
} imp_options;

/* --specialize data: a graph input's value, for where .raf needs it as an
 * attribute. */
typedef struct imp_spec {
  const char *name; /* the ONNX input's name */
  imp_tensor *t;
  struct imp_spec *next;
} imp_spec;

typedef struct imp_op imp_op;

/* The importer's state for one model. */
typedef struct imp {
  raf_arena arena;
  raf_strmap values; /* ONNX name -> imp_value */
  raf_strmap names;  /* .raf names taken */
  const char *file;  /* the model's file name, for messages */
  int64_t opset;     /* the default domain's */
  imp_options opt;
  imp_spec *specs;
  imp_arg *args;
  int nargs, cap_args;
  char *text; /* the function body being written */
  size_t len, cap;
  int counter;
  /* errors, each a line */
  char **errors;
  int nerrors, cap_errors;
  bool oom;
  /* the node being imported, for messages */
  const Onnx__NodeProto *node;
  int node_index;
  const imp_op *row; /* the node's row of the op tables */
} imp;

/* --- imp.c: state, errors, text --------------------------------------- */
void imp_init(imp *im, const char *file, const imp_options *opt);
void imp_free(imp *im);
void imp_error(imp *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A printf-formatted string in the arena. */
char *imp_fmt(imp *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "[a, b, c]" */
char *imp_fmt_ints(imp *im, const int64_t *v, int n);
void imp_append(imp *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *imp_type_str(imp *im, raf_dtype dt, int rank,
                         const int64_t *dims);
/* A fresh .raf name for a statement result. */
const char *imp_fresh(imp *im);
/* A .raf identifier for an ONNX name: other characters become '_', a name
 * already taken gets '_' appended. */
const char *imp_unique_name(imp *im, const char *onnx_name);

/* --- values.c: values, constants, emitting --------------------------- */
imp_value *imp_value_new(imp *im, raf_dtype dt, int rank,
                         const int64_t *dims);
/* A tensor for a folded value; NULL with an error above 2^22 elements. */
imp_tensor *imp_tensor_new(imp *im, raf_dtype dt, int rank,
                           const int64_t *dims);
/* A tensor for data read from a file (an initializer, --specialize data),
 * of any size. */
imp_tensor *imp_tensor_for_data(imp *im, raf_dtype dt, int rank,
                                const int64_t *dims);
int64_t imp_numel(int rank, const int64_t *dims);
/* t with its elements written out (t itself unless a splat); NULL with an
 * error when that is too large to fold. */
imp_tensor *imp_tensor_dense(imp *im, imp_tensor *t);
/* Whether a shape is within IMP_MAX_DIM per dimension and its element count
 * fits int64; reports (imp_unsupported) when not. */
bool imp_shape_ok(imp *im, int rank, const int64_t *dims);
double imp_get_f64(const imp_tensor *t, int64_t i);
int64_t imp_get_i64(const imp_tensor *t, int64_t i);
void imp_set_f64(imp_tensor *t, int64_t i, double v);
void imp_set_i64(imp_tensor *t, int64_t i, int64_t v);
bool imp_is_float(raf_dtype dt);
bool imp_is_int(raf_dtype dt);
/* A splat tensor of the shape (its one element to be set); NULL with an
 * error when the shape is out of range. */
imp_tensor *imp_tensor_splat(imp *im, raf_dtype dt, int rank,
                             const int64_t *dims);
/* A tensor of t's shape and splat-ness, of element type dt, to fill. */
imp_tensor *imp_tensor_like(imp *im, const imp_tensor *t, raf_dtype dt);
/* A constant value (not yet emitted). */
imp_value *imp_const_value(imp *im, imp_tensor *t);
/* A scalar or splat constant of dt. */
imp_value *imp_scalar(imp *im, double v, raf_dtype dt);
imp_value *imp_splat(imp *im, double v, raf_dtype dt, int rank,
                     const int64_t *dims);
/* The value's .raf name, emitting a constant or claiming an argument on the
 * first use as data. */
const char *imp_ref(imp *im, imp_value *v);
/* Emits `%r = op(args) attrs : type`; attrs is NULL or "{...}". */
imp_value *imp_emit(imp *im, const char *op, imp_value **args, int nargs,
                    const char *attrs, raf_dtype dt, int rank,
                    const int64_t *dims);
/* The same with n results of the given types (all of dt). */
void imp_emit_n(imp *im, const char *op, imp_value **args, int nargs,
                const char *attrs, int n, raf_dtype *dts, int *ranks,
                int64_t (*dims)[RAF_MAX_RANK], imp_value **outs);
/* Whether v's value is known here and may be folded: constants, and
 * integer initializers (float initializers stay parameters). */
bool imp_foldable(const imp_value *v);
/* The value of v where .raf needs an attribute: its constant, or the
 * graph input's specialisation data; NULL (with an error) otherwise. */
imp_tensor *imp_known(imp *im, imp_value *v, const char *what);
/* Reads a TensorProto; NULL with an error when malformed or of a type raf
 * lacks. */
imp_tensor *imp_tensor_from_proto(imp *im, const Onnx__TensorProto *t,
                                  const char *what);
/* ONNX TensorProto.DataType -> raf dtype; false for types raf lacks. */
bool imp_dtype_from_onnx(int32_t t, raf_dtype *out);
const char *imp_onnx_dtype_name(int32_t t);

/* --- ops*.c: the op mappers ------------------------------------------ */
/* The attributes of the node being imported. */
const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n,
                                     const char *name);
int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name,
                     int64_t dflt);
double imp_attr_float(const Onnx__NodeProto *n, const char *name,
                      double dflt);
const char *imp_attr_string(imp *im, const Onnx__NodeProto *n,
                            const char *name, const char *dflt);
/* The ints of an attribute (NULL and *count 0 when absent). */
const int64_t *imp_attr_ints(const Onnx__NodeProto *n, const char *name,
                             int *count);

/* A mapper: fills outs[0..n) (n at most the node's output count); returns
 * the number of outputs set, or -1 after reporting why it cannot map the
 * node (imp_unsupported). ins[i] is NULL for an absent optional input. The
 * node's row of the op tables is im->row. */
typedef int (*imp_mapper)(imp *im, const Onnx__NodeProto *n,
                          imp_value **ins, int nins, imp_value **outs);

/* No .raf op in an imp_op row: the mapper checks the element types itself
 * (a data-movement op that admits every type, a composition of float-only
 * semantics, the bool logic). */
#define IMP_NO_OP RAF_OP_COUNT

/* One ONNX op: everything the importer knows of it but its mapper's code.
 * `raf` is the .raf op a generic mapper (map_unary, map_arith, ...) emits,
 * or, for a composition, the op whose element types bound it (Elu's exp);
 * the element types the ONNX op is imported for are those ops.def lets `raf`
 * admit, so adding an ONNX op that is one .raf op is this row alone. */
struct imp_op {
  const char *op_type;
  imp_mapper map;
  raf_opcode raf;  /* or IMP_NO_OP */
  int min_inputs;  /* the inputs that must be present (more are optional) */
};
/* The row of an op type, or NULL. */
const imp_op *imp_find_op(const char *op_type);
/* Records why the current node cannot be imported; returns -1. */
int imp_unsupported(imp *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The op tables of the mapper families, each ending in a row of NULLs. */
extern const imp_op imp_ops_elementwise[];
extern const imp_op imp_ops_shape[];
extern const imp_op imp_ops_nn[];

/* Helpers shared by the mapper families (ops_elementwise.c). */
bool imp_broadcast(imp *im, const imp_value *a, const imp_value *b,
                   int *rank, int64_t *dims);
imp_value *imp_binary(imp *im, const char *op, imp_value *a, imp_value *b,
                      raf_dtype dt);
imp_value *imp_unary(imp *im, const char *op, imp_value *a);
imp_value *imp_where(imp *im, imp_value *c, imp_value *a, imp_value *b);
imp_value *imp_reshape(imp *im, imp_value *v, int rank, const int64_t *dims);
imp_value *imp_cast(imp *im, imp_value *v, raf_dtype to);
/* Whether .raf's op admits v's element type (ops.def's dtypes column);
 * reports (imp_unsupported) when not. */
bool imp_admits(imp *im, const imp_value *v, raf_opcode op);
/* Whether v is of a float type, for ONNX ops defined on floats only whose
 * composition would be wrong on integers (float constants such as
 * LeakyRelu's alpha); reports when not. */
bool imp_float_only(imp *im, const imp_value *v);
/* Whether v is of an integer type, as take's indices must be; reports when
 * not. */
bool imp_int_indices(imp *im, const imp_value *v);
int imp_norm_axis(imp *im, int64_t axis, int rank);
imp_value *imp_reduce(imp *im, const char *op, imp_value *x,
                      const int64_t *axes, int naxes, bool keep);
imp_value *imp_slice(imp *im, imp_value *x, const int64_t *begin,
                     const int64_t *end, const int64_t *strides);
imp_value *imp_concat(imp *im, imp_value **parts, int n, int axis);
imp_value *imp_pad_const(imp *im, imp_value *x, const int64_t *begins,
                         const int64_t *ends, double value);

/* --- model.c / write.c ---------------------------------------------- */
/* Imports the model into im: afterwards im->text is the function's .raf
 * text and im->args its arguments. False on errors (in im->errors). */
bool imp_import_model(imp *im, const Onnx__ModelProto *m);
/* Adds --specialize data for the graph input called name (kept, not
 * copied). */
void imp_specialize(imp *im, const char *name, imp_tensor *t);

#endif
