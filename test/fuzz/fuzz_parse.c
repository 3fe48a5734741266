/* fuzz_parse.c: a libFuzzer target over the front end and every pass.
 *
 * Any byte string goes through parse -> verify -> print, and when it is a
 * valid module, through each registered pass alone (on a fresh parse), then
 * through the whole registry in its order (passes/passes.def keeps its rows
 * in an order that is a valid pipeline), with a print after each run. The
 * list comes from raf_pass_list, so a new pass is fuzzed from the moment it
 * is registered. Nothing may crash, hang, leak or read out of bounds; bad
 * input must only produce diagnostics. Seed it with the lit tests.
 */
#include "include/raf/raf.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parses and verifies the input; NULL when it is not a valid module. */
static raf_module *parse(raf_ctx *ctx, const uint8_t *data, size_t size) {
  raf_module *m = raf_parse_module(ctx, "fuzz.raf", (const char *)data, size, 1);
  if (m && raf_verify_module(ctx, m) != RAF_OK) {
    raf_module_destroy(m);
    m = NULL;
  }
  return m;
}

/* Runs the passes first..last-1 of the registry on m, then prints it. */
static void run_passes(raf_ctx *ctx, raf_module *m, size_t first, size_t last,
                       FILE *out) {
  size_t n;
  const raf_pass_info *passes = raf_pass_list(&n);
  raf_pipeline *p = raf_pipeline_create(ctx);
  bool ok = p != NULL;
  for (size_t i = first; ok && i < last && i < n; i++)
    ok = raf_pipeline_add(p, passes[i].name, NULL) == RAF_OK;
  raf_pipeline_options o;
  raf_pipeline_options_init(&o);
  o.report = out;
  if (ok && raf_pipeline_run(p, m, &o) == RAF_OK)
    raf_print_module(m, out, 0);
  raf_pipeline_destroy(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  raf_ctx *ctx = raf_ctx_create();
  if (!ctx)
    return 0;
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  raf_module *m = out ? parse(ctx, data, size) : NULL;
  if (m) {
    raf_print_module(m, out, RAF_PRINT_LOC);
    raf_print_dot(m, out);
    size_t npasses;
    raf_pass_list(&npasses);
    for (size_t i = 0; i < npasses; i++) {
      raf_module *alone = parse(ctx, data, size);
      if (alone)
        run_passes(ctx, alone, i, i + 1, out);
      raf_module_destroy(alone);
    }
    run_passes(ctx, m, 0, npasses, out);
  }
  raf_diag_render(ctx, out ? out : stderr);
  if (out)
    fclose(out);
  free(buf);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  return 0;
}
