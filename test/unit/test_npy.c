/* test_npy.c: the .npy reader and writer. Headers are written here byte for
 * byte as NumPy writes them (format 1.0 and 2.0); the round trip goes
 * through a real file; every refusal says why. */
#include "runtime/npy.h"

#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

/* A file as np.save writes it: magic, version, header padded to 64 bytes. */
static size_t make_npy(unsigned char *buf, int major, const char *dict,
                       const void *data, size_t nbytes) {
  size_t pre = major == 1 ? 10 : 12, n = strlen(dict);
  size_t hlen = n + 1 + (64 - (pre + n + 1) % 64) % 64;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  for (size_t i = 0; i < pre - 8; i++)
    buf[8 + i] = (unsigned char)(hlen >> (8 * i));
  memcpy(buf + pre, dict, n);
  memset(buf + pre + n, ' ', hlen - n - 1);
  buf[pre + hlen - 1] = '\n';
  memcpy(buf + pre + hlen, data, nbytes);
  return pre + hlen + nbytes;
}

static const char *last_error(raf_ctx *ctx) {
  const char *msg = "";
  if (raf_diag_count(ctx))
    raf_diag_get(ctx, raf_diag_count(ctx) - 1, NULL, NULL, &msg);
  return msg;
}

static void test_parse(void) {
  raf_ctx *ctx = raf_ctx_create();
  unsigned char buf[512];
  float f[6] = {1, 2, 3, 4, 5, 6};
  size_t n = make_npy(buf, 1,
                      "{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (2, 3), }",
                      f, sizeof f);
  raf_npy a;
  CHECK(raf_npy_parse(ctx, "a.npy", buf, n, &a) == RAF_OK);
  CHECK(a.dtype == RAF_F32 && a.rank == 2 && a.dims[0] == 2 &&
        a.dims[1] == 3 && a.numel == 6);
  CHECK(a.data && memcmp(a.data, f, sizeof f) == 0);
  raf_npy_free(&a);

  int64_t i[3] = {7, -1, 9};
  n = make_npy(buf, 2, "{'descr': '<i8', 'fortran_order': False, "
                       "'shape': (3,), }", i, sizeof i);
  CHECK(raf_npy_parse(ctx, "b.npy", buf, n, &a) == RAF_OK);
  CHECK(a.dtype == RAF_I64 && a.rank == 1 && a.dims[0] == 3);
  CHECK(a.data && ((int64_t *)a.data)[1] == -1);
  raf_npy_free(&a);

  double s = 0.5;
  n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, "
                       "'shape': (), }", &s, sizeof s);
  CHECK(raf_npy_parse(ctx, "c.npy", buf, n, &a) == RAF_OK);
  CHECK(a.rank == 0 && a.numel == 1 && *(double *)a.data == 0.5);
  raf_npy_free(&a);
  CHECK(raf_error_count(ctx) == 0);

  static const struct {
    const char *dict;
    const char *error;
  } bad[] = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
       "Fortran-order arrays are not supported"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
       "pickles"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
       "big-endian data is not supported: >f4"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
       "unsupported dtype <c8"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (100,), }",
       "truncated data: 100 elements expected, 24 bytes present"},
      {"{'descr': '<f4', 'shape': (2,), }", "header lacks"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    n = make_npy(buf, 1, bad[k].dict, f, sizeof f);
    CHECK(raf_npy_parse(ctx, "bad.npy", buf, n, &a) == RAF_ERROR);
    CHECK(strstr(last_error(ctx), bad[k].error) != NULL);
    CHECK(a.data == NULL);
  }
  CHECK(raf_npy_parse(ctx, "x.npy", "hello world", 11, &a) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "not a .npy file"));
  n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2,), }", f, 8);
  CHECK(raf_npy_parse(ctx, "t.npy", buf, 20, &a) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "truncated header"));
  raf_ctx_destroy(ctx);
}

static void test_round_trip(void) {
  raf_ctx *ctx = raf_ctx_create();
  char path[] = "/tmp/raf-npy-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  int64_t shapes[3][RAF_MAX_RANK] = {{0}, {5}, {2, 3, 4}};
  int ranks[3] = {0, 1, 3};
  for (int k = 0; k < 3; k++) {
    raf_npy a = {.dtype = RAF_I32, .rank = ranks[k], .numel = 1};
    for (int i = 0; i < a.rank; i++)
      a.numel *= a.dims[i] = shapes[k][i];
    int32_t *data = malloc(sizeof(int32_t) * (size_t)a.numel);
    for (int64_t i = 0; i < a.numel; i++)
      data[i] = (int32_t)(i * 3 - 7);
    a.data = data;
    CHECK(raf_npy_write(ctx, path, &a) == RAF_OK);
    raf_npy b;
    CHECK(raf_npy_read(ctx, path, &b) == RAF_OK);
    CHECK(b.dtype == RAF_I32 && b.rank == a.rank && b.numel == a.numel);
    CHECK(b.data && memcmp(b.data, data, sizeof(int32_t) * (size_t)a.numel) == 0);
    /* The data starts 64-byte aligned, as NumPy requires. */
    FILE *f = fopen(path, "rb");
    unsigned char hdr[10] = {0};
    CHECK(f && fread(hdr, 1, 10, f) == 10);
    if (f)
      fclose(f);
    CHECK((10 + (hdr[8] | hdr[9] << 8)) % 64 == 0);
    raf_npy_free(&b);
    free(data);
  }
  remove(path);
  raf_npy missing;
  CHECK(raf_npy_read(ctx, "/nonexistent/x.npy", &missing) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "cannot open file"));
  raf_npy bf = {.dtype = RAF_BF16, .rank = 0, .numel = 1};
  CHECK(raf_npy_write(ctx, path, &bf) == RAF_ERROR);
  raf_ctx_destroy(ctx);
}

int main(void) {
  test_parse();
  test_round_trip();
  if (failures)
    fprintf(stderr, "test_npy: %d checks failed\n", failures);
  return failures != 0;
}
