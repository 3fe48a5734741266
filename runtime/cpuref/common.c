/* common.c: what several cpu-ref kernel files share: chunk sizes for
 * raf_kernel_parallel, and operands converted to a working type. */
#include "runtime/cpuref/cpuref.h"

#include <stdlib.h>

int64_t raf_cpuref_grain(int64_t chunk_work, int64_t work_per_item) {
  return work_per_item >= chunk_work ? 1
                                     : chunk_work / (work_per_item + 1) + 1;
}

typedef struct convert_job {
  raf_dtype to, from;
  void *dst;
  const void *src;
} convert_job;

static void convert_range(void *data, int64_t begin, int64_t end) {
  const convert_job *j = data;
  raf_elem_convert(j->to, (char *)j->dst + begin * raf_dtype_size(j->to),
                   j->from,
                   (const char *)j->src + begin * raf_dtype_size(j->from),
                   end - begin);
}

void raf_cpuref_convert(const raf_kernel *k, raf_dtype to, void *dst,
                        raf_dtype from, const void *src, int64_t n) {
  convert_job j = {to, from, dst, src};
  raf_kernel_parallel(k, n, (int64_t)1 << 16, convert_range, &j);
}

raf_status raf_cpuref_working_copy(const raf_kernel *k, const raf_tensor *x,
                                   raf_dtype work, const void **out,
                                   void **owned) {
  const raf_type *t = x->type;
  *owned = NULL;
  if (t->dtype == work) {
    *out = x->data;
    return RAF_OK;
  }
  void *buf = malloc((size_t)t->numel * (size_t)raf_dtype_size(work) + 1);
  if (!buf)
    return raf_kernel_fail(k, "out of memory for a working copy of %s",
                           raf_dtype_name(t->dtype));
  raf_cpuref_convert(k, work, buf, t->dtype, x->data, t->numel);
  *out = *owned = buf;
  return RAF_OK;
}
