/* ptx.h: a PTX interpreter, the engine behind the fake CUDA driver
 * (test/cuda/fake_driver.c), so that every GPU kernel raf launches on a
 * machine without a GPU computes real values that tests can check.
 *
 * A module is PTX text, parsed and checked once at load (as the driver's
 * JIT does) into compact records: instructions with resolved register
 * slots, labels and symbols. A launch runs every CTA of the grid and
 * every thread of each CTA, each thread until its next barrier, shuffle
 * or exit (sm_70's independent thread scheduling), and checks what a GPU
 * does not: out-of-bounds and misaligned accesses, deadlocks, reads of
 * shared memory nobody wrote, and data races on shared memory.
 *
 * Ownership as in LLVM's C API: what a function hands back through an
 * `out` pointer belongs to the caller, who gives it back with the function
 * named there. Nothing here exits or aborts; errors come back as a status
 * and a located message.
 */
#ifndef RAF_PTX_H
#define RAF_PTX_H

#include <stddef.h>
#include <stdint.h>

typedef enum ptx_status {
  PTX_OK = 0,
  PTX_INVALID_PTX,         /* syntax, unknown instruction, unresolved symbol */
  PTX_UNSUPPORTED_VERSION, /* .version newer than the driver takes */
  PTX_NO_BINARY,           /* .target the device cannot run */
  PTX_INVALID_VALUE,       /* a launch the kernel cannot take */
  PTX_OUT_OF_MEMORY,
  PTX_ILLEGAL_ADDRESS,     /* an access outside memory the kernel may touch */
  PTX_MISALIGNED_ADDRESS,
  PTX_LAUNCH_FAILED,       /* a race, an uninitialised read, a trap */
  PTX_DEADLOCK,            /* a barrier or shuffle that can never complete */
  PTX_TOO_MANY_INSNS,      /* RAF_FAKE_CUDA_MAX_INSNS exceeded */
} ptx_status;

/* What the fake device is: the driver version it advertises
 * (cuDriverGetVersion's integer: 12040 is CUDA 12.4, which takes PTX ISA
 * up to 8.4) and its compute capability. */
typedef struct ptx_device {
  int driver_version;
  int cc_major, cc_minor;
} ptx_device;

typedef struct ptx_module ptx_module;
typedef struct ptx_kernel ptx_kernel;

/* Parses and checks `text` (NUL-terminated PTX). On failure, `log` gets
 * the JIT's messages ("ptx line N: ...") and nothing is returned. The
 * caller owns *out (ptx_module_free). */
ptx_status ptx_module_load(const char *text, const ptx_device *dev,
                           ptx_module **out, char *log, size_t log_size);
void ptx_module_free(ptx_module *m);

/* The .entry named `name`, or NULL; owned by the module. */
ptx_kernel *ptx_module_kernel(ptx_module *m, const char *name);
/* The names of the module's entries, separated by commas, into buf. */
void ptx_module_kernel_names(const ptx_module *m, char *buf, size_t size);

const char *ptx_kernel_name(const ptx_kernel *k);
int ptx_kernel_param_count(const ptx_kernel *k);
/* Parameter i's size in bytes, and a letter for the log: 'p' .u64/.b64,
 * 'd' .f64, 'f' .f32, 's' an aligned byte array (a struct), 'i' other. */
size_t ptx_kernel_param_size(const ptx_kernel *k, int i);
char ptx_kernel_param_kind(const ptx_kernel *k, int i);
/* The threads a block may have at most, by the kernel's .maxntid (or
 * .reqntid); 0 when it declares neither. */
unsigned ptx_kernel_max_threads(const ptx_kernel *k);

/* Device memory, as the fake driver hands it out: `device` is the address
 * kernels see, `host` where the bytes are. Accesses outside every region
 * registered here are illegal. */
ptx_status ptx_memory_add(uint64_t device, void *host, size_t bytes);
/* PTX_INVALID_VALUE when `device` starts no region. */
ptx_status ptx_memory_remove(uint64_t device);
/* The host address of device address p for n bytes, or NULL when the
 * bytes are not all inside one region. */
void *ptx_memory_host(uint64_t p, size_t n);

typedef struct ptx_launch {
  unsigned grid[3], block[3];
  unsigned dynamic_shared; /* bytes */
  void **params;           /* cuLaunchKernel's kernelParams */
  uint64_t max_insns;      /* 0: no limit */
} ptx_launch;

/* Runs a launch to the end. On a fault, `report` names the kernel, block,
 * thread and PTX line, and the status says which. *insns (if not NULL)
 * gets the number of instructions executed. */
ptx_status ptx_kernel_run(ptx_kernel *k, const ptx_launch *l, char *report,
                          size_t report_size, uint64_t *insns);

#endif
