/* fuzz_ptx.c: libFuzzer target for the PTX interpreter's loader
 * (test/cuda/ptx/parse.c, parse_instr.c): arbitrary bytes, NUL-terminated,
 * as a module for ptx_module_load, as the fake driver's JIT takes them;
 * when they load, the kernels' names and parameters are read and the
 * module freed. Bad PTX must only give a status and a log: no crash,
 * leak or sanitizer report. Seeded with the .ptx files of
 * test/cuda/ptx/testdata, the unit tests' kernels (test/fuzz/ptx-seeds)
 * and the runtime's PTX when the build made it (scripts/test.sh).
 */
#include "ptx/ptx.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  /* the newest driver and an sm_90 device: most of what parses loads */
  ptx_device dev = {13000, 9, 0};
  char log[512], names[256];
  ptx_module *m = NULL;
  if (ptx_module_load(text, &dev, &m, log, sizeof log) == PTX_OK) {
    ptx_module_kernel_names(m, names, sizeof names);
    ptx_kernel *k = ptx_module_kernel(m, strtok(names, ",") ? names : "");
    volatile size_t sink = 0; /* what the fake driver's launch log reads */
    for (int i = 0; k && i < ptx_kernel_param_count(k); i++)
      sink += ptx_kernel_param_size(k, i) + (size_t)ptx_kernel_param_kind(k, i);
    ptx_module_free(m);
  }
  free(text);
  return 0;
}
