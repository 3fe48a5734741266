/* npy.c: the .npy format (see npy.h).
 *
 * A file is the magic "\x93NUMPY", a major and minor version byte, the
 * header length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), and
 * a header that is a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline so the data starts 64-byte aligned. The
 * parser below reads exactly the three keys NumPy writes, in any order.
 */
#include "runtime/npy.h"

#include <stdlib.h>
#include <string.h>

static const struct {
  const char *descr;
  raf_dtype dtype;
} descrs[] = {
    {"<f8", RAF_F64}, {"<f4", RAF_F32}, {"<f2", RAF_F16}, {"<i8", RAF_I64},
    {"<i4", RAF_I32}, {"|i1", RAF_I8},  {"|u1", RAF_U8},  {"|b1", RAF_BOOL},
    {"<i1", RAF_I8},  {"<u1", RAF_U8},  {"<b1", RAF_BOOL},
};

static raf_status fail(raf_ctx *ctx, const char *name, const char *msg,
                       const char *detail) {
  raf_diag_report(ctx, (raf_loc){raf_ctx_intern(ctx, name), 0, 0},
                  RAF_SEV_ERROR, "%s: %s%s", name, msg, detail ? detail : "");
  return RAF_ERROR;
}

/* The value text after 'key': in the header, or NULL. */
static const char *find_key(const char *h, size_t n, const char *key) {
  size_t k = strlen(key);
  for (size_t i = 0; i + k + 2 < n; i++)
    if ((h[i] == '\'' || h[i] == '"') && memcmp(h + i + 1, key, k) == 0 &&
        h[i + 1 + k] == h[i]) {
      const char *p = h + i + k + 2;
      while (p < h + n && (*p == ' ' || *p == ':'))
        p++;
      return p;
    }
  return NULL;
}

raf_status raf_npy_parse(raf_ctx *ctx, const char *name, const void *bytes,
                         size_t len, raf_npy *out) {
  const unsigned char *b = bytes;
  memset(out, 0, sizeof *out);
  if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
    return fail(ctx, name, "not a .npy file (no \\x93NUMPY magic)", NULL);
  unsigned major = b[6];
  size_t hlen, start;
  if (major == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12)
      return fail(ctx, name, "truncated header", NULL);
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
           (size_t)b[11] << 24;
    start = 12;
  } else {
    char v[16];
    snprintf(v, sizeof v, "%u", major);
    return fail(ctx, name, "unsupported .npy format version ", v);
  }
  if (hlen > len - start)
    return fail(ctx, name, "truncated header", NULL);
  const char *h = (const char *)b + start;

  const char *descr = find_key(h, hlen, "descr");
  const char *fortran = find_key(h, hlen, "fortran_order");
  const char *shape = find_key(h, hlen, "shape");
  if (!descr || !fortran || !shape)
    return fail(ctx, name, "header lacks descr, fortran_order or shape", NULL);
  if (*descr != '\'' && *descr != '"')
    return fail(ctx, name, "structured dtypes are not supported", NULL);
  const char *dend = memchr(descr + 1, *descr, hlen - (size_t)(descr + 1 - h));
  if (!dend)
    return fail(ctx, name, "malformed descr", NULL);
  char d[16] = "";
  snprintf(d, sizeof d, "%.*s", (int)(dend - descr - 1), descr + 1);
  bool found = false;
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0] && !found; i++)
    if (strcmp(d, descrs[i].descr) == 0) {
      out->dtype = descrs[i].dtype;
      found = true;
    }
  if (!found) {
    if (d[1] == 'O')
      return fail(ctx, name,
                  "object arrays are stored as pickles and are not supported",
                  NULL);
    if (d[0] == '>')
      return fail(ctx, name, "big-endian data is not supported: ", d);
    return fail(ctx, name, "unsupported dtype ", d);
  }
  if (strncmp(fortran, "False", 5) != 0)
    return fail(ctx, name,
                "Fortran-order arrays are not supported (save with "
                "np.ascontiguousarray)",
                NULL);
  if (*shape != '(')
    return fail(ctx, name, "malformed shape", NULL);
  const char *p = shape + 1, *hend = h + hlen;
  out->numel = 1;
  while (p < hend && *p != ')') {
    while (p < hend && (*p == ' ' || *p == ','))
      p++;
    if (p < hend && *p == ')')
      break;
    char *e;
    long long v = strtoll(p, &e, 10);
    if (e == p || v < 0 || out->rank == RAF_MAX_RANK)
      return fail(ctx, name, "malformed or too long shape", NULL);
    if (v && out->numel > INT64_MAX / v)
      return fail(ctx, name, "shape too large", NULL);
    out->dims[out->rank++] = v;
    out->numel *= v;
    p = e;
  }
  if (p >= hend)
    return fail(ctx, name, "malformed shape", NULL);
  size_t esize = (size_t)raf_dtype_size(out->dtype);
  size_t have = len - start - hlen;
  if ((uint64_t)out->numel > have / esize) {
    char m[96];
    snprintf(m, sizeof m, "%lld elements expected, %zu bytes present",
             (long long)out->numel, have);
    return fail(ctx, name, "truncated data: ", m);
  }
  size_t nbytes = (size_t)out->numel * esize;
  out->data = malloc(nbytes ? nbytes : 1);
  if (!out->data)
    return fail(ctx, name, "out of memory", NULL);
  memcpy(out->data, b + start + hlen, nbytes);
  return RAF_OK;
}

raf_status raf_npy_read(raf_ctx *ctx, const char *path, raf_npy *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f)
    return fail(ctx, path, "cannot open file", NULL);
  size_t n = 0;
  char *buf = raf_read_stream(f, &n);
  fclose(f);
  if (!buf)
    return fail(ctx, path, "cannot read file", NULL);
  raf_status st = raf_npy_parse(ctx, path, buf, n, out);
  free(buf);
  return st;
}

raf_status raf_npy_write(raf_ctx *ctx, const char *path, const raf_npy *a) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0] && !descr; i++)
    if (descrs[i].dtype == a->dtype)
      descr = descrs[i].descr;
  if (!descr)
    return fail(ctx, path, "NumPy has no standard dtype for ",
                raf_dtype_name(a->dtype));
  /* The shape as Python writes a tuple: (), (3,), (3, 4). */
  char dims[RAF_MAX_RANK * 24 + 8] = "";
  size_t k = 0;
  for (int i = 0; i < a->rank; i++)
    k += (size_t)snprintf(dims + k, sizeof dims - k, i ? ", %lld" : "%lld",
                          (long long)a->dims[i]);
  char dict[512];
  int n = snprintf(dict, sizeof dict,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (%s%s), }",
                   descr, dims, a->rank == 1 ? "," : "");
  /* Pad with spaces and a final newline to a multiple of 64 bytes. */
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)n + pad + 1;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           (unsigned char)(hlen & 0xff),
                           (unsigned char)(hlen >> 8)};
  FILE *f = fopen(path, "wb");
  if (!f)
    return fail(ctx, path, "cannot create file", NULL);
  size_t nbytes = (size_t)a->numel * (size_t)raf_dtype_size(a->dtype);
  bool ok = fwrite(pre, 1, 10, f) == 10 &&
            fwrite(dict, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < pad; i++)
    ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF &&
       (nbytes == 0 || fwrite(a->data, 1, nbytes, f) == nbytes);
  ok = fclose(f) == 0 && ok;
  return ok ? RAF_OK : fail(ctx, path, "cannot write file", NULL);
}

void raf_npy_free(raf_npy *a) {
  free(a->data);
  a->data = NULL;
}
