/* canonicalize.c: placeholder until the pass is written. */
#include "passes/pass.h"
raf_status raf_pass_canonicalize(raf_module *m, const raf_pass_args *args) {
  (void)m; (void)args;
  return RAF_OK;
}
