/* test_safetensors.c: the safetensors reader on good and corrupt buffers
 * (every refusal says why, none crashes), every prefix of a good file, and
 * the writer's round trip through a real file. */
#include "runtime/safetensors.h"

#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

/* A file: the 8-byte length, the header text, the data. */
static size_t make_file(unsigned char *buf, const char *header,
                        const void *data, size_t nbytes) {
  size_t n = strlen(header);
  for (int i = 0; i < 8; i++)
    buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
  memcpy(buf + 8, header, n);
  if (nbytes)
    memcpy(buf + 8 + n, data, nbytes);
  return 8 + n + nbytes;
}

static const char *last_error(raf_ctx *ctx) {
  const char *msg = "";
  if (raf_diag_count(ctx))
    raf_diag_get(ctx, raf_diag_count(ctx) - 1, NULL, NULL, &msg);
  return msg;
}

static const char good_header[] =
    "{\"b\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [24, 32]},"
    " \"__metadata__\": {\"format\": \"pt\"},"
    " \"a\": {\"dtype\": \"F32\", \"shape\": [2, 3], "
    "\"data_offsets\": [0, 24]},"
    " \"z\": {\"dtype\": \"BF16\", \"shape\": [0, 4], "
    "\"data_offsets\": [32, 32]}}   ";

static void test_good(void) {
  raf_ctx *ctx = raf_ctx_create();
  unsigned char buf[1024], data[32];
  float f[6] = {1, 2, 3, 4, 5, -6};
  int64_t i = -42;
  memcpy(data, f, sizeof f);
  memcpy(data + 24, &i, sizeof i);
  size_t n = make_file(buf, good_header, data, sizeof data);
  raf_safetensors *st;
  CHECK(raf_safetensors_parse(ctx, "good", buf, n, &st) == RAF_OK);
  CHECK(raf_error_count(ctx) == 0);
  if (!st) {
    raf_ctx_destroy(ctx);
    return;
  }
  CHECK(raf_safetensors_count(st) == 3);
  const raf_st_tensor *b = raf_safetensors_get(st, 0);
  CHECK(b && strcmp(b->name, "b") == 0 && b->dtype == RAF_I64 && b->rank == 0 &&
        b->nbytes == 8);
  int64_t got;
  memcpy(&got, b->data, 8);
  CHECK(got == -42);
  const raf_st_tensor *a = raf_safetensors_find(st, "a");
  CHECK(a && a->dtype == RAF_F32 && a->rank == 2 && a->dims[0] == 2 &&
        a->dims[1] == 3 && a->nbytes == 24 &&
        memcmp(a->data, f, sizeof f) == 0);
  const raf_st_tensor *z = raf_safetensors_get(st, 2);
  CHECK(z && z->dtype == RAF_BF16 && z->rank == 2 && z->nbytes == 0);
  CHECK(raf_safetensors_get(st, 3) == NULL);
  CHECK(raf_safetensors_find(st, "nope") == NULL);
  CHECK(raf_safetensors_metadata(st, "format") &&
        strcmp(raf_safetensors_metadata(st, "format"), "pt") == 0);
  CHECK(raf_safetensors_metadata(st, "other") == NULL);
  raf_safetensors_free(st);

  /* Every proper prefix of the file is refused, never read past. */
  for (size_t k = 0; k < n; k++) {
    unsigned char *cut = malloc(k ? k : 1);
    memcpy(cut, buf, k);
    CHECK(raf_safetensors_parse(ctx, "cut", cut, k, &st) == RAF_ERROR);
    CHECK(st == NULL);
    free(cut);
  }
  /* An empty header and buffer is a valid, empty file. */
  n = make_file(buf, "{}", NULL, 0);
  CHECK(raf_safetensors_parse(ctx, "empty", buf, n, &st) == RAF_OK);
  CHECK(st && raf_safetensors_count(st) == 0);
  raf_safetensors_free(st);
  raf_ctx_destroy(ctx);
}

static void test_bad(void) {
  static const struct {
    const char *header;
    size_t data; /* bytes of data after the header */
    const char *error;
  } bad[] = {
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]",
       8, "malformed JSON header (at byte"},
      {"{\"a\": 1}", 0, "tensor 'a': the entry is not a JSON object"},
      {"[]", 0, "the JSON header is not an object"},
      {"\"x\"", 0, "the JSON header is not an object"},
      {"{} {}", 0, "unexpected data at byte 3"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2]}}", 8,
       "tensor 'a': the entry lacks \"data_offsets\""},
      {"{\"a\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", 8,
       "the entry lacks \"dtype\""},
      {"{\"a\": {\"dtype\": 4, \"shape\": [2], \"data_offsets\": [0, 8]}}", 8,
       "\"dtype\" is not a string"},
      {"{\"a\": {\"dtype\": \"F8_E4M3\", \"shape\": [2], "
       "\"data_offsets\": [0, 2]}}",
       2, "unsupported dtype 'F8_E4M3'"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": 2, \"data_offsets\": [0, 8]}}",
       8, "\"shape\" is not a list"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2.5], "
       "\"data_offsets\": [0, 8]}}",
       8, "\"shape\" element 0 is not a non-negative integer"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], "
       "\"data_offsets\": [0, 4]}}",
       4, "rank 9 exceeds raf's maximum of 8"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], "
       "\"data_offsets\": [0, 4]}}",
       4, "the shape has too many elements"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}",
       8, "\"data_offsets\" is not a list of two non-negative integers"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [0, \"8\"]}}",
       8, "\"data_offsets\" is not a list of two non-negative integers"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [0, 1e300]}}",
       8, "\"data_offsets\" is not a list of two non-negative integers"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [8, 0]}}",
       8, "data_offsets [8, 0] lie outside the data buffer (8 bytes)"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [0, 16]}}",
       8, "lie outside the data buffer"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [3], "
       "\"data_offsets\": [0, 8]}}",
       8, "span 8 bytes, but F32 with 3 elements takes 12"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
       " \"b\": {\"dtype\": \"I32\", \"shape\": [1], "
       "\"data_offsets\": [4, 8]}}",
       8, "tensors 'a' and 'b' overlap"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [4, 12]}}",
       12, "bytes [0, 4) of the data buffer belong to no tensor"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [0, 8]}}",
       12, "bytes [8, 12) of the data buffer belong to no tensor"},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [0, 8]}, "
       "\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [8, 16]}}",
       16, "tensor 'a' appears more than once"},
      {"{\"a\": {\"dtype\": \"F32\", \"dtype\": \"F32\", \"shape\": [2], "
       "\"data_offsets\": [0, 8]}}",
       8, "\"dtype\" is given twice"},
      {"{\"__metadata__\": [1]}", 0, "\"__metadata__\" is not a JSON object"},
      {"{\"__metadata__\": {\"k\": null}}", 0,
       "the value of 'k' is not a string"},
      {"{\"__metadata__\": {}, \"__metadata__\": {}}", 0,
       "\"__metadata__\" appears more than once"},
      {"{\"m\": {\"dtype\": \"BOOL\", \"shape\": [4], "
       "\"data_offsets\": [0, 4]}}",
       4, "BOOL element at flat index 0 is 7, not 0 or 1"},
  };
  raf_ctx *ctx = raf_ctx_create();
  unsigned char buf[1024], data[64];
  memset(data, 7, sizeof data);
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    size_t n = make_file(buf, bad[k].header, data, bad[k].data);
    raf_safetensors *st = (raf_safetensors *)1;
    size_t before = raf_error_count(ctx);
    CHECK(raf_safetensors_parse(ctx, "bad", buf, n, &st) == RAF_ERROR);
    CHECK(st == NULL);
    CHECK(raf_error_count(ctx) > before);
    if (!strstr(last_error(ctx), bad[k].error)) {
      fprintf(stderr, "case %zu: got '%s', want '%s'\n", k, last_error(ctx),
              bad[k].error);
      failures++;
    }
  }
  /* Errors in separate entries are all reported. */
  size_t before = raf_error_count(ctx);
  size_t n =
      make_file(buf,
                "{\"a\": {\"dtype\": \"X\", \"shape\": [], "
                "\"data_offsets\": [0, 1]}, \"b\": {\"dtype\": \"F32\"}}",
                data, 1);
  raf_safetensors *st;
  CHECK(raf_safetensors_parse(ctx, "two", buf, n, &st) == RAF_ERROR);
  CHECK(raf_error_count(ctx) == before + 2);

  /* A header length past the end, and one near 2^64. */
  memset(buf, 0, 16);
  buf[0] = 9;
  CHECK(raf_safetensors_parse(ctx, "hlen", buf, 16, &st) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "the header is 9 bytes, but only 8 follow"));
  memset(buf, 0xff, 8);
  CHECK(raf_safetensors_parse(ctx, "huge", buf, 16, &st) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "truncated file or bad header length"));
  CHECK(raf_safetensors_parse(ctx, "short", buf, 7, &st) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "truncated file: 7 bytes"));
  /* A NUL inside the header is not its end. */
  n = make_file(buf, "{}  ", NULL, 0);
  buf[10] = '\0';
  CHECK(raf_safetensors_parse(ctx, "nul", buf, n, &st) == RAF_ERROR);
  CHECK(raf_safetensors_read(ctx, "/nonexistent/c.safetensors", &st) ==
        RAF_ERROR);
  CHECK(strstr(last_error(ctx), "cannot open file"));
  raf_ctx_destroy(ctx);
}

static void test_round_trip(void) {
  raf_ctx *ctx = raf_ctx_create();
  char path[] = "/tmp/raf-st-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  double w[3] = {0.5, -1, 1e300};
  uint16_t h[2] = {0x3f80, 0xc000};
  unsigned char m[1] = {1};
  raf_st_tensor ts[3] = {
      {.name = "layer.w \"q\"",
       .dtype = RAF_F64,
       .rank = 1,
       .dims = {3},
       .data = w,
       .nbytes = sizeof w},
      {.name = "h",
       .dtype = RAF_BF16,
       .rank = 2,
       .dims = {1, 2},
       .data = h,
       .nbytes = sizeof h},
      {.name = "m", .dtype = RAF_BOOL, .rank = 0, .data = m, .nbytes = 1},
  };
  const char *meta[] = {"producer", "test", NULL};
  CHECK(raf_safetensors_write(ctx, path, ts, 3, meta) == RAF_OK);
  raf_safetensors *st = NULL;
  CHECK(raf_safetensors_read(ctx, path, &st) == RAF_OK);
  CHECK(st && raf_safetensors_count(st) == 3);
  for (int i = 0; st && i < 3; i++) {
    const raf_st_tensor *e = raf_safetensors_get(st, i);
    CHECK(strcmp(e->name, ts[i].name) == 0 && e->dtype == ts[i].dtype &&
          e->rank == ts[i].rank && e->nbytes == ts[i].nbytes &&
          memcmp(e->data, ts[i].data, e->nbytes) == 0);
    for (int d = 0; d < e->rank; d++)
      CHECK(e->dims[d] == ts[i].dims[d]);
  }
  CHECK(st && strcmp(raf_safetensors_metadata(st, "producer"), "test") == 0);
  raf_safetensors_free(st);
  /* The data starts 8-byte aligned. */
  FILE *f = fopen(path, "rb");
  unsigned char pre[8] = {0};
  CHECK(f && fread(pre, 1, 8, f) == 8);
  if (f)
    fclose(f);
  CHECK(pre[0] % 8 == 0);

  /* Refused writes leave the earlier file as it was. */
  raf_st_tensor dup[2] = {ts[2], ts[2]};
  CHECK(raf_safetensors_write(ctx, path, dup, 2, NULL) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "tensor 'm' is given twice"));
  raf_st_tensor reserved = ts[2];
  reserved.name = "__metadata__";
  CHECK(raf_safetensors_write(ctx, path, &reserved, 1, NULL) == RAF_ERROR);
  CHECK(raf_safetensors_read(ctx, path, &st) == RAF_OK);
  CHECK(st && raf_safetensors_count(st) == 3);
  raf_safetensors_free(st);
  CHECK(raf_safetensors_write(ctx, "/nonexistent/c.safetensors", ts, 3, NULL) ==
        RAF_ERROR);
  CHECK(strstr(last_error(ctx), "cannot create file"));
  remove(path);
  raf_ctx_destroy(ctx);
}

int main(void) {
  test_good();
  test_bad();
  test_round_trip();
  if (failures)
    fprintf(stderr, "test_safetensors: %d checks failed\n", failures);
  return failures != 0;
}
