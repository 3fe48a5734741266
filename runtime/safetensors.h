/* safetensors.h: reading and writing safetensors files.
 *
 * The format (https://github.com/huggingface/safetensors): an 8-byte
 * little-endian header length N, N bytes of JSON
 *   {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [B, E]},
 *    ..., "__metadata__": {"KEY": "VALUE", ...}}
 * (the metadata is optional), then the data buffer. Offsets are relative to
 * the buffer; each tensor's bytes are little-endian and in C order, and the
 * tensors tile the buffer exactly, without holes or overlaps.
 *
 * raf reads and writes the dtypes F64 F32 F16 BF16 I64 I32 I8 U8 BOOL.
 * Every malformed file (truncated, a header length past the end, bad JSON,
 * a missing or mistyped field, an unknown dtype, offsets out of range, that
 * overlap, leave holes or disagree with dtype and shape, a BOOL byte that is
 * not 0 or 1) is refused with a message reported to the context, located
 * at the file. Nothing here prints or exits.
 */
#ifndef RAF_SAFETENSORS_H
#define RAF_SAFETENSORS_H

#include "ir/ir.h"

/* One tensor. In a file that was read, name and data point into the
 * raf_safetensors that holds them; data need not be aligned. */
typedef struct raf_st_tensor {
  const char *name;
  raf_dtype dtype;
  int rank;
  int64_t dims[RAF_MAX_RANK];
  const void *data;
  size_t nbytes; /* numel * raf_dtype_size(dtype) */
} raf_st_tensor;

typedef struct raf_safetensors raf_safetensors;

/* Parses the bytes of a file (name is used in messages) into *out, which
 * keeps its own copy; free it with raf_safetensors_free. On error *out is
 * NULL and every problem found is reported. */
raf_status raf_safetensors_parse(raf_ctx *ctx, const char *name,
                                 const void *bytes, size_t len,
                                 raf_safetensors **out);
raf_status raf_safetensors_read(raf_ctx *ctx, const char *path,
                                raf_safetensors **out);
void raf_safetensors_free(raf_safetensors *st);

/* The tensors in the order the header lists them. */
int raf_safetensors_count(const raf_safetensors *st);
const raf_st_tensor *raf_safetensors_get(const raf_safetensors *st, int i);
/* The tensor called name, or NULL. */
const raf_st_tensor *raf_safetensors_find(const raf_safetensors *st,
                                          const char *name);
/* The "__metadata__" value of key, or NULL. */
const char *raf_safetensors_metadata(const raf_safetensors *st,
                                     const char *key);

/* Writes n tensors, in that order, with the metadata given as NULL or a
 * NULL-terminated list of key, value strings. The header is padded with
 * spaces so the data starts 8-byte aligned, as the reference writer does.
 * A regular file is written under a temporary name in the same directory
 * (PATH.tmp-PID-N), synced to the disk (fsync), renamed over path and the
 * directory synced, so an earlier file survives any failure, a process
 * killed in the middle and a crash of the machine included: path is always
 * the old file or the whole new one. A process killed while writing may
 * leave its temporary file behind; it is never read. */
raf_status raf_safetensors_write(raf_ctx *ctx, const char *path,
                                 const raf_st_tensor *tensors, int n,
                                 const char *const *metadata);

/* The format's name of a dtype ("F32", "BF16", "BOOL", ...). */
const char *raf_safetensors_dtype_name(raf_dtype dt);

#endif
