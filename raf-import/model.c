/* model.c: from a decoded ONNX ModelProto to the importer's function: the
 * checks a decoded message still needs (protobuf-c checks the wire format,
 * not ONNX's rules), the opset, the graph inputs and initializers as
 * arguments, the node walk that calls the op mappers and collects every
 * node it cannot import, and the function's text. */
#include "raf-import/import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The newest opset of the default domain whose operators raf-import knows:
 * ONNX 1.12's. Older opsets are imported with the semantics of their
 * version (the mappers look at im->opset where an op changed). */
#define MAX_OPSET 17

static const char *str(const char *s) { return s ? s : ""; }

static bool default_domain(const char *d) {
  return !d || !*d || !strcmp(d, "ai.onnx");
}

bool imp_dtype_from_onnx(int32_t t, raf_dtype *out) {
  switch (t) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = RAF_F32; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *out = RAF_F64; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = RAF_F16; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = RAF_BF16; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = RAF_I64; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = RAF_I32; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = RAF_I8; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = RAF_U8; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = RAF_BOOL; return true;
  default: return false;
  }
}

const char *imp_onnx_dtype_name(int32_t t) {
  const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
      &onnx__tensor_proto__data_type__descriptor, t);
  return v ? v->name : "an unknown element type";
}

imp_tensor *imp_tensor_from_proto(imp *im, const Onnx__TensorProto *t,
                                  const char *what) {
  raf_dtype dt;
  if (!imp_dtype_from_onnx(t->data_type, &dt)) {
    imp_unsupported(im, "%s: element type %s is not in .raf", what,
                    imp_onnx_dtype_name(t->data_type));
    return NULL;
  }
  if (t->n_dims > RAF_MAX_RANK) {
    imp_unsupported(im, "%s: rank %zu is above .raf's %d", what, t->n_dims,
                    RAF_MAX_RANK);
    return NULL;
  }
  if (t->has_data_location &&
      t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    imp_unsupported(im, "%s: external data is not supported", what);
    return NULL;
  }
  int64_t numel = imp_numel((int)t->n_dims, t->dims);
  if (numel < 0 || !imp_shape_ok(im, (int)t->n_dims, t->dims)) {
    imp_unsupported(im, "%s: invalid dimensions", what);
    return NULL;
  }
  size_t es = (size_t)raf_dtype_size(dt);
  size_t have; /* elements present */
  if (t->has_raw_data) {
    if (t->raw_data.len % es || t->raw_data.len / es != (uint64_t)numel) {
      imp_unsupported(im, "%s: %zu bytes of data for %lld elements of %s",
                      what, t->raw_data.len, (long long)numel,
                      raf_dtype_name(dt));
      return NULL;
    }
    have = (size_t)numel;
  } else {
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: have = t->n_float_data; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: have = t->n_double_data; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: have = t->n_int64_data; break;
    default: have = t->n_int32_data; break;
    }
    if (have != (uint64_t)numel) {
      imp_unsupported(im, "%s: %zu values for %lld elements", what, have,
                      (long long)numel);
      return NULL;
    }
  }
  imp_tensor *out = imp_tensor_for_data(im, dt, (int)t->n_dims, t->dims);
  if (!out)
    return NULL;
  if (t->has_raw_data) {
    memcpy(out->data, t->raw_data.data, (size_t)numel * es);
    if (dt == RAF_BOOL)
      for (int64_t i = 0; i < numel; i++)
        ((unsigned char *)out->data)[i] = ((unsigned char *)out->data)[i] != 0;
    return out;
  }
  for (int64_t i = 0; i < numel; i++) {
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
      imp_set_f64(out, i, t->float_data[i]);
      break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
      imp_set_f64(out, i, t->double_data[i]);
      break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
      imp_set_i64(out, i, t->int64_data[i]);
      break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: {
      /* 16-bit patterns, one per int32 */
      uint16_t h = (uint16_t)t->int32_data[i];
      memcpy((char *)out->data + i * 2, &h, 2);
      break;
    }
    default:
      imp_set_i64(out, i, t->int32_data[i]);
    }
  }
  return out;
}

int imp_unsupported(imp *im, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!im->node) {
    imp_error(im, "%s: %s", im->file, msg);
    return -1;
  }
  const char *name = str(im->node->name);
  if (*name)
    imp_error(im, "%s: node %d '%s' (%s): %s", im->file, im->node_index,
              name, str(im->node->op_type), msg);
  else
    imp_error(im, "%s: node %d (%s): %s", im->file, im->node_index,
              str(im->node->op_type), msg);
  return -1;
}

static imp_value *lookup(imp *im, const char *name) {
  return raf_strmap_get(&im->values, name, strlen(name));
}

static void define(imp *im, const char *name, imp_value *v) {
  char *key = raf_arena_strndup(&im->arena, name, strlen(name));
  if (!key || !raf_strmap_put(&im->values, key, strlen(key), v))
    im->oom = true;
}

static int add_arg(imp *im) {
  if (im->nargs == im->cap_args) {
    int cap = im->cap_args ? 2 * im->cap_args : 16;
    imp_arg *a = realloc(im->args, sizeof *a * (size_t)cap);
    if (!a) {
      im->oom = true;
      return -1;
    }
    im->args = a;
    im->cap_args = cap;
  }
  memset(&im->args[im->nargs], 0, sizeof im->args[0]);
  return im->nargs++;
}

/* A graph input or output's element type and static shape. */
static bool value_info_type(imp *im, const Onnx__ValueInfoProto *vi,
                            const char *what, raf_dtype *dt, int *rank,
                            int64_t *dims, bool *symbolic) {
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
      !tp->tensor_type) {
    imp_error(im, "%s: %s '%s' is not a tensor (sequence, optional or map "
                  "values are not imported)", im->file, what, str(vi->name));
    return false;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (!imp_dtype_from_onnx(tt->elem_type, dt)) {
    imp_error(im, "%s: %s '%s' has element type %s, which .raf lacks",
              im->file, what, str(vi->name),
              imp_onnx_dtype_name(tt->elem_type));
    return false;
  }
  *symbolic = !tt->shape;
  *rank = 0;
  if (tt->shape) {
    if (tt->shape->n_dim > RAF_MAX_RANK) {
      imp_error(im, "%s: %s '%s' has rank %zu, above .raf's %d", im->file,
                what, str(vi->name), tt->shape->n_dim, RAF_MAX_RANK);
      return false;
    }
    *rank = (int)tt->shape->n_dim;
    for (int i = 0; i < *rank; i++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
      if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
        *symbolic = true;
      else if (d->dim_value < 0 || d->dim_value > IMP_MAX_DIM) {
        imp_error(im, "%s: %s '%s' has a dimension of %lld", im->file, what,
                  str(vi->name), (long long)d->dim_value);
        return false;
      } else
        dims[i] = d->dim_value;
    }
  }
  return true;
}

static imp_tensor *find_spec(imp *im, const char *name);

/* The graph inputs that are not initializers become the first arguments,
 * keeping their names (made .raf identifiers); the initializers follow
 * (each an argument only if used as data). */
static void import_inputs(imp *im, const Onnx__GraphProto *g) {
  imp_value **init_values =
      raf_arena_alloc(&im->arena, sizeof *init_values * (g->n_initializer + 1));
  if (!init_values) {
    im->oom = true;
    return;
  }
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *t = g->initializer[i];
    char what[256];
    snprintf(what, sizeof what, "initializer '%s'", str(t->name));
    imp_tensor *val = imp_tensor_from_proto(im, t, what);
    if (!val)
      continue;
    init_values[i] = imp_const_value(im, val);
    init_values[i]->initializer = true;
    define(im, str(t->name), init_values[i]);
  }
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    const char *name = str(vi->name);
    if (lookup(im, name))
      continue; /* an initializer listed among the inputs */
    raf_dtype dt;
    int rank;
    int64_t dims[RAF_MAX_RANK];
    bool symbolic;
    if (!value_info_type(im, vi, "input", &dt, &rank, dims, &symbolic))
      continue;
    imp_tensor *spec = find_spec(im, name);
    if (spec) {
      /* The data fixes the shape: the test data of some ONNX models holds
       * a declared scalar as [1], and an input only read for its type may
       * be given any shape. The element type must agree. */
      bool as_f32 = dt == RAF_BF16 && im->opt.bf16_io_as_f32;
      if (spec->dt != (as_f32 ? RAF_F32 : dt)) {
        imp_error(im, "%s: input '%s' is %s, but its --specialize data is %s",
                  im->file, name, raf_dtype_name(dt),
                  raf_dtype_name(spec->dt));
        continue;
      }
      if (!imp_shape_ok(im, spec->rank, spec->dims))
        continue;
      rank = spec->rank;
      memcpy(dims, spec->dims, sizeof dims);
    } else if (symbolic) {
      imp_error(im, "%s: input '%s' has no static shape (raf needs one; give "
                    "it with --specialize=%s=@FILE.npy)", im->file, name, name);
      continue;
    }
    int a = add_arg(im);
    if (a < 0)
      return;
    bool as_f32 = dt == RAF_BF16 && im->opt.bf16_io_as_f32;
    imp_value *arg = imp_value_new(im, as_f32 ? RAF_F32 : dt, rank, dims);
    arg->arg = a;
    im->args[a].name = imp_unique_name(im, name);
    im->args[a].value = arg;
    imp_value *v = arg;
    if (as_f32) {
      /* .npy has no bf16: the argument is f32 (exact), cast on entry. */
      v = imp_cast(im, arg, RAF_BF16);
    }
    v->spec = spec;
    define(im, name, v);
  }
  for (size_t i = 0; i < g->n_initializer; i++) {
    imp_value *v = init_values[i];
    if (!v || lookup(im, str(g->initializer[i]->name)) != v)
      continue; /* unreadable, or a later initializer of the same name */
    int a = add_arg(im);
    if (a < 0)
      return;
    im->args[a].name = imp_unique_name(im, str(g->initializer[i]->name));
    im->args[a].value = v;
    im->args[a].initializer = true;
    im->args[a].init = v->konst;
    v->arg = a;
  }
}

static void import_node(imp *im, const Onnx__NodeProto *n) {
  imp_value *ins[64] = {0};
  imp_value *outs[64] = {0};
  bool poisoned = false;
  if (n->n_input > 64 || n->n_output > 64) {
    imp_unsupported(im, "more than 64 inputs or outputs");
    poisoned = true;
  }
  for (size_t i = 0; i < n->n_input && !poisoned; i++) {
    const char *name = str(n->input[i]);
    if (!*name)
      continue;
    ins[i] = lookup(im, name);
    if (!ins[i]) {
      imp_unsupported(im, "input '%s' is not defined before it", name);
      poisoned = true;
    } else if (ins[i]->poisoned) {
      poisoned = true; /* its producer is reported already */
    }
  }
  const imp_op *row = NULL;
  if (!default_domain(n->domain)) {
    imp_unsupported(im, "op domain '%s' is not imported", n->domain);
    poisoned = true;
  } else if (!(row = imp_find_op(str(n->op_type)))) {
    imp_unsupported(im, "no .raf mapping for this op");
    poisoned = true;
  }
  if (!poisoned) {
    /* ops whose inputs changed between opsets check theirs themselves */
    for (int i = 0; i < row->min_inputs; i++)
      if ((size_t)i >= n->n_input || !ins[i]) {
        imp_unsupported(im, "input %d is missing", i);
        poisoned = true;
        break;
      }
    if (!poisoned && n->n_output == 0) {
      imp_unsupported(im, "a node without outputs");
      poisoned = true;
    }
  }
  int got = -1;
  if (!poisoned) {
    size_t before = (size_t)im->nerrors;
    im->row = row;
    got = row->map(im, n, ins, (int)n->n_input, outs);
    im->row = NULL;
    if (got >= 0 && (size_t)im->nerrors != before)
      got = -1;
    for (int i = 0; i < got && got >= 0; i++)
      if (!outs[i] || outs[i]->poisoned)
        got = -1;
    if (got >= 0)
      for (size_t i = (size_t)got; i < n->n_output; i++)
        if (*str(n->output[i])) {
          imp_unsupported(im, "optional output %zu is not imported", i);
          got = -1;
          break;
        }
  }
  for (size_t i = 0; i < n->n_output && i < 64; i++) {
    const char *name = str(n->output[i]);
    if (!*name)
      continue;
    imp_value *v = got >= 0 && (int)i < got ? outs[i] : NULL;
    if (!v) {
      v = imp_value_new(im, RAF_F32, 0, NULL);
      v->poisoned = true;
    }
    define(im, name, v);
  }
}

static bool check_opset(imp *im, const Onnx__ModelProto *m) {
  bool found = false;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (!default_domain(o->domain))
      continue;
    found = true;
    im->opset = o->version;
  }
  if (!found) {
    char others[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < m->n_opset_import && len < sizeof others; i++)
      len += (size_t)snprintf(others + len, sizeof others - len, "%s%s",
                              len ? ", " : " (it imports ",
                              str(m->opset_import[i]->domain));
    if (len && len < sizeof others)
      snprintf(others + len, sizeof others - len, ")");
    imp_error(im, "%s: the model imports no opset of the default ONNX "
                  "domain%s", im->file, others);
    return false;
  }
  if (im->opset < 1 || im->opset > MAX_OPSET) {
    imp_error(im, "%s: opset %lld of the default domain is not supported "
                  "(raf-import knows opsets 1 to %d, ONNX 1.12's)",
              im->file, (long long)im->opset, MAX_OPSET);
    return false;
  }
  return true;
}

/* The graph's name as a .raf function name (@[A-Za-z_][A-Za-z0-9_.]*):
 * other characters become '_'; "main" when it has none. */
static const char *function_name(imp *im, const char *graph) {
  if (!*graph)
    return "main";
  char *s = imp_fmt(im, "%s%s", (*graph >= '0' && *graph <= '9') ||
                                        *graph == '.' ? "_" : "", graph);
  for (char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '_' || *p == '.'))
      *p = '_';
  return s;
}

bool imp_import_model(imp *im, const Onnx__ModelProto *m) {
  if (!m->graph) {
    imp_error(im, "%s: the model has no graph", im->file);
    return false;
  }
  if (!check_opset(im, m))
    return false;
  const Onnx__GraphProto *g = m->graph;
  if (!im->opt.function)
    im->opt.function = function_name(im, str(g->name));
  import_inputs(im, g);
  if (im->nerrors)
    return false;
  for (size_t i = 0; i < g->n_node; i++) {
    im->node = g->node[i];
    im->node_index = (int)i;
    import_node(im, g->node[i]);
  }
  im->node = NULL;
  im->node_index = -1;
  if (g->n_output == 0)
    imp_error(im, "%s: the graph has no outputs", im->file);
  /* The outputs: their values, in order (bf16 ones cast for .npy). */
  const char **refs = raf_arena_alloc(&im->arena, sizeof *refs * (g->n_output + 1));
  const char **types = raf_arena_alloc(&im->arena, sizeof *types * (g->n_output + 1));
  if (!refs || !types) {
    im->oom = true;
    return false;
  }
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = str(g->output[i]->name);
    imp_value *v = lookup(im, name);
    if (!v) {
      imp_error(im, "%s: graph output '%s' is not defined", im->file, name);
      continue;
    }
    if (v->poisoned)
      continue;
    raf_dtype dt;
    int rank;
    int64_t dims[RAF_MAX_RANK];
    bool symbolic;
    if (!value_info_type(im, g->output[i], "output", &dt, &rank, dims,
                         &symbolic))
      continue;
    if (dt != v->dt) {
      imp_error(im, "%s: graph output '%s' is declared %s but computes %s",
                im->file, name, raf_dtype_name(dt), raf_dtype_name(v->dt));
      continue;
    }
    if (v->dt == RAF_BF16 && im->opt.bf16_io_as_f32)
      v = imp_cast(im, v, RAF_F32);
    refs[i] = imp_ref(im, v);
    types[i] = imp_type_str(im, v->dt, v->rank, v->dims);
  }
  if (im->nerrors || im->oom)
    return false;
  imp_append(im, "  return");
  for (size_t i = 0; i < g->n_output; i++)
    imp_append(im, "%s %s", i ? "," : "", refs[i]);
  imp_append(im, "\n}\n");
  /* The header, now that the arguments used are known. */
  char *body = im->text;
  size_t body_len = im->len;
  im->text = NULL;
  im->len = im->cap = 0;
  imp_append(im, "func @%s(", im->opt.function);
  int k = 0;
  for (int i = 0; i < im->nargs; i++) {
    imp_arg *a = &im->args[i];
    if (!a->used)
      continue;
    const imp_value *v = a->value;
    imp_append(im, "%s%%%s: %s", k++ ? ", " : "", a->name,
               imp_type_str(im, v->dt, v->rank, v->dims));
    if (a->initializer)
      imp_append(im, " {%s}", imp_is_float(v->dt) ? "param" : "state");
  }
  imp_append(im, ") -> ");
  if (g->n_output > 1)
    imp_append(im, "(");
  for (size_t i = 0; i < g->n_output; i++)
    imp_append(im, "%s%s", i ? ", " : "", types[i]);
  if (g->n_output > 1)
    imp_append(im, ")");
  imp_append(im, " {\n");
  if (body)
    imp_append(im, "%.*s", (int)body_len, body);
  free(body);
  return !im->nerrors && !im->oom;
}

/* --- specialisation data ------------------------------------------------- */

void imp_specialize(imp *im, const char *name, imp_tensor *t) {
  imp_spec *e = RAF_NEW(&im->arena, imp_spec);
  if (!e) {
    im->oom = true;
    return;
  }
  e->name = name;
  e->t = t;
  e->next = im->specs;
  im->specs = e;
}

static imp_tensor *find_spec(imp *im, const char *name) {
  for (imp_spec *e = im->specs; e; e = e->next)
    if (!strcmp(e->name, name))
      return e->t;
  return NULL;
}
