/* test_import_dtypes.c: raf-import's element types against the op table.
 *
 * Each row of the importer's elementwise table names the .raf op whose
 * element types the ONNX op is imported for (raf-import/import.h, imp_op).
 * For every such row and every element type ONNX and .raf share, a one-node
 * model (inputs of shape [2, 3], as many as the row needs) goes through the
 * importer as raf-import runs it (imp_translate: decode, import, parse,
 * verify). It must import exactly when lang/ops.def lets the row's op admit
 * the type, and a refusal must be the importer's own message, never the
 * verifier's "internal error": so a mapper that checks other types than the
 * table, or a row that names the wrong op, fails here.
 *
 * The rows of the other families are left out: their ops need particular
 * shapes (conv2d, layer_norm), or compose several .raf ops whose types the
 * mapper intersects (ReduceL2 is mul, sum and sqrt).
 */
#include "raf-import/translate.h"

#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

/* ONNX's comparisons: their result is bool, not the operands' type (Sign,
 * whose row names gt, keeps its operand's). */
static bool compares(const char *op_type) {
  static const char *const ops[] = {"Equal", "Less", "LessOrEqual",
                                    "Greater", "GreaterOrEqual"};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(ops[i], op_type))
      return true;
  return false;
}

/* The packed bytes of a model whose one node is `op_type` on nin inputs of
 * ONNX element type et and shape [2, 3], giving y of element type out_et. */
static uint8_t *one_node_model(const char *op_type, int nin, int32_t et,
                               int32_t out_et, size_t *len) {
  Onnx__TensorShapeProto__Dimension d[2] = {
      ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT,
      ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT};
  Onnx__TensorShapeProto__Dimension *dims[2] = {&d[0], &d[1]};
  for (int i = 0; i < 2; i++) {
    d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d[i].dim_value = 2 + i;
  }
  Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 2;
  shape.dim = dims;
  Onnx__TypeProto__Tensor in_tt = ONNX__TYPE_PROTO__TENSOR__INIT;
  Onnx__TypeProto__Tensor out_tt = ONNX__TYPE_PROTO__TENSOR__INIT;
  in_tt.has_elem_type = out_tt.has_elem_type = true;
  in_tt.elem_type = et;
  out_tt.elem_type = out_et;
  in_tt.shape = out_tt.shape = &shape;
  Onnx__TypeProto in_type = ONNX__TYPE_PROTO__INIT;
  Onnx__TypeProto out_type = ONNX__TYPE_PROTO__INIT;
  in_type.value_case = out_type.value_case =
      ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  in_type.tensor_type = &in_tt;
  out_type.tensor_type = &out_tt;

  char *names[3] = {"a", "b", "c"};
  Onnx__ValueInfoProto inputs[3], output = ONNX__VALUE_INFO_PROTO__INIT;
  Onnx__ValueInfoProto *input_ptrs[3], *output_ptr = &output;
  for (int i = 0; i < nin; i++) {
    inputs[i] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    inputs[i].name = names[i];
    inputs[i].type = &in_type;
    input_ptrs[i] = &inputs[i];
  }
  char *y = "y";
  output.name = y;
  output.type = &out_type;

  Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
  Onnx__NodeProto *node_ptr = &node;
  node.op_type = (char *)op_type;
  node.n_input = (size_t)nin;
  node.input = names;
  node.n_output = 1;
  node.output = &y;

  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  graph.name = "g";
  graph.n_node = 1;
  graph.node = &node_ptr;
  graph.n_input = (size_t)nin;
  graph.input = input_ptrs;
  graph.n_output = 1;
  graph.output = &output_ptr;

  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  Onnx__OperatorSetIdProto *opset_ptr = &opset;
  opset.domain = "";
  opset.has_version = true;
  opset.version = 17;
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  model.has_ir_version = true;
  model.ir_version = 8;
  model.n_opset_import = 1;
  model.opset_import = &opset_ptr;
  model.graph = &graph;

  *len = onnx__model_proto__get_packed_size(&model);
  uint8_t *bytes = malloc(*len);
  if (bytes)
    onnx__model_proto__pack(&model, bytes);
  return bytes;
}

/* Imports the row's op on inputs of ONNX type et (raf type dt); checks the
 * outcome against the op table. */
static void check_row(const imp_op *row, int32_t et, raf_dtype dt) {
  bool admitted = raf_op_table[row->raf].dtypes & (1u << dt);
  int32_t out_et = compares(row->op_type) ? ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
                                      : et;
  size_t len;
  uint8_t *bytes = one_node_model(row->op_type, row->min_inputs, et, out_et,
                                  &len);
  CHECK(bytes);
  if (!bytes)
    return;
  raf_ctx *ctx = raf_ctx_create();
  imp im;
  imp_options opt = {.function = "f"};
  imp_init(&im, row->op_type, &opt);
  raf_module *mod = imp_translate(&im, ctx, bytes, len);
  bool internal = false;
  for (int i = 0; i < im.nerrors; i++)
    internal |= strstr(im.errors[i], "internal error") != NULL;
  if ((mod != NULL) != admitted || internal) {
    fprintf(stderr, "%s of %s: %s by the importer, %s by ops.def's %s%s%s\n",
            row->op_type, raf_dtype_name(dt), mod ? "imported" : "refused",
            admitted ? "admitted" : "not admitted",
            raf_op_table[row->raf].name, im.nerrors ? ": " : "",
            im.nerrors ? im.errors[0] : "");
    failures++;
  }
  if (mod)
    raf_module_destroy(mod);
  imp_free(&im);
  raf_ctx_destroy(ctx);
  free(bytes);
}

int main(void) {
  int rows = 0;
  for (const imp_op *row = imp_ops_elementwise; row->op_type; row++) {
    if (row->raf == IMP_NO_OP)
      continue;
    rows++;
    for (int32_t et = 1; et <= ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16; et++) {
      raf_dtype dt;
      if (imp_dtype_from_onnx(et, &dt))
        check_row(row, et, dt);
    }
  }
  CHECK(rows >= 30); /* the table was read, not skipped */
  if (failures)
    fprintf(stderr, "test_import_dtypes: %d failures\n", failures);
  return failures != 0;
}
