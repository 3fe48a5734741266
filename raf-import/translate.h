/* translate.h: raf-import as a function (translate.c), for the tool and its
 * fuzz target. */
#ifndef RAF_IMPORT_TRANSLATE_H
#define RAF_IMPORT_TRANSLATE_H

#include "raf-import/import.h"
#include "runtime/safetensors.h"

/* Decodes len bytes as an ONNX ModelProto and imports it. Returns the
 * verified module (parsed in ctx; the caller destroys it), or NULL with the
 * importer's errors in im->errors and any raf diagnostics in ctx. */
raf_module *imp_translate(imp *im, raf_ctx *ctx, const void *bytes,
                          size_t len);

/* The initializers the module takes as {param}/{state} arguments, in
 * argument order, as safetensors entries pointing into im (out may be NULL
 * to count them). Returns their number. */
int imp_param_tensors(const imp *im, raf_st_tensor *out);

#endif
