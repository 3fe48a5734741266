/* fuzz_parse.c: a libFuzzer target over the front end and the first passes.
 *
 * Any byte string goes through parse -> verify -> print, and when it is a
 * valid module, through the canonicalize, cse, dce and inline passes and a
 * second print. Nothing may crash, hang, leak or read out of bounds; bad
 * input must only produce diagnostics. Seed it with the lit tests
 * (.ci/run does).
 */
#include "include/raf/raf.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  raf_ctx *ctx = raf_ctx_create();
  if (!ctx)
    return 0;
  raf_module *m = raf_parse_module(ctx, "fuzz.raf", (const char *)data, size, 1);
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  if (m && out && raf_verify_module(ctx, m) == RAF_OK) {
    raf_print_module(m, out, RAF_PRINT_LOC);
    raf_print_dot(m, out);
    raf_pipeline *p = raf_pipeline_create(ctx);
    if (p && raf_pipeline_parse(p, "inline,canonicalize,cse,dce") == RAF_OK) {
      raf_pipeline_options o;
      raf_pipeline_options_init(&o);
      o.report = out;
      if (raf_pipeline_run(p, m, &o) == RAF_OK)
        raf_print_module(m, out, 0);
    }
    raf_pipeline_destroy(p);
  }
  raf_diag_render(ctx, out ? out : stderr);
  if (out)
    fclose(out);
  free(buf);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  return 0;
}
