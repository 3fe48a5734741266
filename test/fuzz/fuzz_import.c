/* fuzz_import.c: libFuzzer target for raf-import: arbitrary bytes as an
 * .onnx file, through the whole importer (protobuf decoding, the checks,
 * the op mappers, folding, and the raf parser and verifier on its output).
 * It must never crash, leak or trip the sanitizers, whatever the input.
 * Seeded with the ONNX node tests' model.onnx files (scripts/test.sh). */
#include "raf-import/translate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  raf_ctx *ctx = raf_ctx_create();
  if (!ctx)
    return 0;
  imp im;
  imp_options opt = {0};
  imp_init(&im, "fuzz.onnx", &opt);
  raf_module *m = imp_translate(&im, ctx, data, size);
  if (m) {
    imp_param_tensors(&im, NULL);
    raf_module_destroy(m);
  }
  imp_free(&im);
  raf_ctx_destroy(ctx);
  return 0;
}
