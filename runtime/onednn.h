/* onednn.h: what the onednn dialect (runtime/onednn/) tells about an
 * executor, for tests and reports. */
#ifndef RAF_ONEDNN_H
#define RAF_ONEDNN_H

#include "runtime/exec.h"

/* How many oneDNN primitives ex's statements share (one per block shape
 * of its onednn matmuls, per chunk shape of its convolutions, poolings and
 * batch_norms); 0 when none, or in a build without oneDNN. */
int raf_onednn_primitives(const raf_exec *ex);

#endif
