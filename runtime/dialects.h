/* dialects.h: the kernel tables of the dialects, one per dialect file.
 *
 * Each is indexed by opcode; NULL where the dialect has no kernel. The
 * executor reaches them only through raf_dialect_kernel.
 */
#ifndef RAF_DIALECTS_H
#define RAF_DIALECTS_H

#include "runtime/kernel.h"

extern const raf_kernel_fn raf_cpuref_kernels[RAF_OP_COUNT];
extern const raf_kernel_fn raf_cblas_kernels[RAF_OP_COUNT];

#endif
