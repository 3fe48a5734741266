/* translate.c: the importer end to end, without files: bytes of an .onnx
 * file in, a verified raf module and the initializers' tensors out. Shared
 * by the raf-import tool (main.c) and its fuzz target
 * (test/fuzz/fuzz_import.c), so the fuzzer runs exactly what users run. */
#include "raf-import/translate.h"

#include <string.h>

raf_module *imp_translate(imp *im, raf_ctx *ctx, const void *bytes,
                          size_t len) {
  Onnx__ModelProto *m =
      onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
  if (!m) {
    imp_error(im, "%s: not a valid ONNX model (the protobuf cannot be "
                  "decoded: the file is truncated or not an ONNX model)",
              im->file);
    return NULL;
  }
  bool ok = imp_import_model(im, m);
  onnx__model_proto__free_unpacked(m, NULL);
  if (im->oom)
    imp_error(im, "%s: out of memory", im->file);
  if (!ok || im->oom)
    return NULL;
  raf_module *mod = raf_parse_module(ctx, im->file, im->text, im->len, 1);
  if (mod && raf_verify_module(ctx, mod) != RAF_OK) {
    raf_module_destroy(mod);
    mod = NULL;
  }
  if (!mod)
    imp_error(im, "%s: internal error: the imported module does not verify "
                  "(raf's diagnostics follow)", im->file);
  return mod;
}

int imp_param_tensors(const imp *im, raf_st_tensor *out) {
  int n = 0;
  for (int i = 0; i < im->nargs; i++) {
    const imp_arg *a = &im->args[i];
    if (!a->used || !a->initializer)
      continue;
    if (out) {
      raf_st_tensor *t = &out[n];
      memset(t, 0, sizeof *t);
      t->name = a->name;
      t->dtype = a->init->dt;
      t->rank = a->init->rank;
      memcpy(t->dims, a->init->dims, sizeof t->dims);
      t->data = a->init->data;
      t->nbytes = (size_t)a->init->numel * (size_t)raf_dtype_size(t->dtype);
    }
    n++;
  }
  return n;
}
