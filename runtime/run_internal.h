/* run_internal.h: what raf's own tools reach past the public executor API
 * (include/raf/run.h) for.
 *
 * raf-run opens its device before it builds the executor, so that a
 * machine without the device fails in one line named by the flag, and its
 * helpers (datasets, checkpoints, the MPI gather, --gradcheck, --profile)
 * work on the runtime's own executor and tensors.
 */
#ifndef RAF_RUN_INTERNAL_H
#define RAF_RUN_INTERNAL_H

#include "include/raf/run.h"
#include "runtime/exec.h"

/* The device kind named by the first statement of m marked with a dialect
 * ({dialect = "..."}), in *kind; false when no statement is marked. */
bool raf_module_marked_device(const raf_module *m, raf_device_kind *kind);

/* raf_executor_create with an open device dev of o->device's kind, which
 * it takes over (closed with the executor, or here when it fails). */
raf_status raf_executor_create_on(raf_module *m, const raf_executor_options *o,
                                  raf_device *dev, raf_executor **out);

/* The runtime's executor inside ex (owned by ex). */
raf_exec *raf_executor_exec(const raf_executor *ex);

#endif
