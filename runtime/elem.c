/* elem.c: reading, writing and converting tensor elements of any dtype.
 *
 * The reference kernels compute in a few working types (double for f64,
 * float for f32/f16/bf16, int64 for the integers and bool); these functions
 * move elements between storage and those types, one rule for every
 * kernel: floats to integers truncate toward zero, any number to bool is
 * `!= 0`, integers wrap to their width.
 */
#include "runtime/kernel.h"

#include <math.h>
#include <string.h>

double raf_elem_get_f64(raf_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case RAF_F64: return ((const double *)p)[i];
  case RAF_F32: return ((const float *)p)[i];
  case RAF_F16: return raf_half_to_float(((const uint16_t *)p)[i]);
  case RAF_BF16: return raf_bf16_to_float(((const uint16_t *)p)[i]);
  case RAF_I64: return (double)((const int64_t *)p)[i];
  case RAF_I32: return ((const int32_t *)p)[i];
  case RAF_I8: return ((const int8_t *)p)[i];
  case RAF_U8: return ((const uint8_t *)p)[i];
  case RAF_BOOL: return ((const uint8_t *)p)[i] != 0;
  default: return 0;
  }
}

/* A float as an int64, truncated; NaN gives 0 and out-of-range values
 * saturate, where C leaves the conversion undefined. */
static int64_t f64_to_i64(double v) {
  if (isnan(v))
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return (int64_t)v;
}

void raf_elem_set_f64(raf_dtype dt, void *p, int64_t i, double v) {
  switch (dt) {
  case RAF_F64: ((double *)p)[i] = v; break;
  case RAF_F32: ((float *)p)[i] = (float)v; break;
  case RAF_F16: ((uint16_t *)p)[i] = raf_float_to_half((float)v); break;
  case RAF_BF16: ((uint16_t *)p)[i] = raf_float_to_bf16((float)v); break;
  case RAF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  default: raf_elem_set_i64(dt, p, i, f64_to_i64(v)); break;
  }
}

int64_t raf_elem_get_i64(raf_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case RAF_I64: return ((const int64_t *)p)[i];
  case RAF_I32: return ((const int32_t *)p)[i];
  case RAF_I8: return ((const int8_t *)p)[i];
  case RAF_U8: return ((const uint8_t *)p)[i];
  case RAF_BOOL: return ((const uint8_t *)p)[i] != 0;
  default: return f64_to_i64(raf_elem_get_f64(dt, p, i));
  }
}

void raf_elem_set_i64(raf_dtype dt, void *p, int64_t i, int64_t v) {
  switch (dt) {
  case RAF_I64: ((int64_t *)p)[i] = v; break;
  case RAF_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
  case RAF_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
  case RAF_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
  case RAF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  default: raf_elem_set_f64(dt, p, i, (double)v); break;
  }
}

void raf_elem_convert(raf_dtype to, void *dst, raf_dtype from,
                      const void *src, int64_t n) {
  if (to == from) {
    memcpy(dst, src, (size_t)n * (size_t)raf_dtype_size(to));
    return;
  }
  if (from == RAF_F32 && to == RAF_BF16) {
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)dst)[i] = raf_float_to_bf16(((const float *)src)[i]);
  } else if (from == RAF_BF16 && to == RAF_F32) {
    for (int64_t i = 0; i < n; i++)
      ((float *)dst)[i] = raf_bf16_to_float(((const uint16_t *)src)[i]);
  } else if (raf_dtype_is_float(from) || raf_dtype_is_float(to)) {
    for (int64_t i = 0; i < n; i++)
      raf_elem_set_f64(to, dst, i, raf_elem_get_f64(from, src, i));
  } else {
    for (int64_t i = 0; i < n; i++)
      raf_elem_set_i64(to, dst, i, raf_elem_get_i64(from, src, i));
  }
}

void raf_contiguous_strides(const raf_type *t, int64_t *strides) {
  int64_t s = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= t->dims[d];
  }
}

void raf_broadcast_strides(const raf_type *t, const raf_type *out,
                           int64_t *strides) {
  int64_t own[RAF_MAX_RANK];
  raf_contiguous_strides(t, own);
  int shift = out->rank - t->rank;
  for (int d = 0; d < out->rank; d++) {
    int td = d - shift;
    strides[d] = td < 0 || t->dims[td] == 1 ? 0 : own[td];
  }
}
