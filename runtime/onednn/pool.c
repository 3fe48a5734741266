/* pool.c: placeholder. */
#ifdef RAF_HAVE_ONEDNN
#include "runtime/onednn/internal.h"
const void *onednn_bind_pool(onednn_state *st, const raf_stmt *s) { (void)st; (void)s; return NULL; }
raf_status onednn_pool(const raf_kernel *k) { return raf_kernel_fail(k, "todo"); }
#endif
