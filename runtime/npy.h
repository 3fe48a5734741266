/* npy.h: reading and writing NumPy .npy files (format 1.0, 2.0 and 3.0).
 *
 * Arrays are little-endian and in C order, which is what raf's runtime
 * buffers are; anything else (big-endian data, Fortran order, object arrays,
 * which NumPy stores as pickles) is refused with a message that says so.
 * Errors are reported to the context, located at the file.
 */
#ifndef RAF_NPY_H
#define RAF_NPY_H

#include "ir/ir.h"

typedef struct raf_npy {
  raf_dtype dtype;
  int rank;
  int64_t dims[RAF_MAX_RANK];
  int64_t numel;
  void *data; /* numel elements, malloc'd; owned by the raf_npy */
} raf_npy;

/* Parses the bytes of a .npy file (name is used in messages). On success
 * *out owns a copy of the data; free it with raf_npy_free. */
raf_status raf_npy_parse(raf_ctx *ctx, const char *name, const void *bytes,
                         size_t len, raf_npy *out);
raf_status raf_npy_read(raf_ctx *ctx, const char *path, raf_npy *out);
/* Writes a format 1.0 file (2.0 when the header needs more than 64 KiB). */
raf_status raf_npy_write(raf_ctx *ctx, const char *path, const raf_npy *a);
void raf_npy_free(raf_npy *a);

#endif
