/* safetensors.c: the safetensors format (see safetensors.h).
 *
 * The header is JSON, read and written with cJSON. Reading checks what the
 * reference implementation checks (huggingface/safetensors, `validate`):
 * the header length fits the file, the header is a JSON object of tensor
 * entries and an optional "__metadata__" object of strings, each entry has a
 * known dtype, a shape of non-negative integers and two data offsets whose
 * span is dtype size * numel, and the spans, sorted, tile the data buffer
 * from its first byte to its last. Problems in separate entries are all
 * reported; the layout is checked once every entry is well formed.
 */
#include "runtime/safetensors.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
  const char *name;
  raf_dtype dtype;
} dtypes[] = {
    {"F64", RAF_F64},   {"F32", RAF_F32}, {"F16", RAF_F16},
    {"BF16", RAF_BF16}, {"I64", RAF_I64}, {"I32", RAF_I32},
    {"I8", RAF_I8},     {"U8", RAF_U8},   {"BOOL", RAF_BOOL},
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* Integers in the header are read through doubles (cJSON's numbers); up to
 * 2^53 they are exact, which is far past any real file. */
#define MAX_JSON_INT 9007199254740992.0

struct raf_safetensors {
  unsigned char *bytes; /* the whole file; tensor data points into it */
  size_t len;
  int n, nmeta;
  raf_st_tensor *tensors;
  char **names;
  char **meta; /* nmeta key, value pairs */
};

const char *raf_safetensors_dtype_name(raf_dtype dt) {
  for (size_t i = 0; i < NDTYPES; i++)
    if (dtypes[i].dtype == dt)
      return dtypes[i].name;
  return "?";
}

static raf_status fail(raf_ctx *ctx, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static raf_status fail(raf_ctx *ctx, const char *name, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  raf_diag_report(ctx, (raf_loc){raf_ctx_intern(ctx, name), 0, 0},
                  RAF_SEV_ERROR, "%s: %s", name, msg);
  return RAF_ERROR;
}

void raf_safetensors_free(raf_safetensors *st) {
  if (!st)
    return;
  for (int i = 0; i < st->n; i++)
    free(st->names[i]);
  for (int i = 0; i < 2 * st->nmeta; i++)
    free(st->meta[i]);
  free(st->names);
  free(st->meta);
  free(st->tensors);
  free(st->bytes);
  free(st);
}

int raf_safetensors_count(const raf_safetensors *st) { return st->n; }

const raf_st_tensor *raf_safetensors_get(const raf_safetensors *st, int i) {
  return i >= 0 && i < st->n ? &st->tensors[i] : NULL;
}

const raf_st_tensor *raf_safetensors_find(const raf_safetensors *st,
                                          const char *name) {
  for (int i = 0; i < st->n; i++)
    if (strcmp(st->names[i], name) == 0)
      return &st->tensors[i];
  return NULL;
}

const char *raf_safetensors_metadata(const raf_safetensors *st,
                                     const char *key) {
  for (int i = 0; i < st->nmeta; i++)
    if (strcmp(st->meta[2 * i], key) == 0)
      return st->meta[2 * i + 1];
  return NULL;
}

/* ---- Reading ------------------------------------------------------------ */

/* A non-negative integer of the header, or false. */
static bool json_uint(const cJSON *j, uint64_t *out) {
  if (!cJSON_IsNumber(j))
    return false;
  double d = j->valuedouble;
  if (!(d >= 0 && d <= MAX_JSON_INT) || d != (double)(uint64_t)d)
    return false;
  *out = (uint64_t)d;
  return true;
}

/* Where an entry's bytes lie, for the layout check. */
typedef struct span {
  uint64_t begin, end;
  int index;
} span;

static int span_cmp(const void *pa, const void *pb) {
  const span *a = pa, *b = pb;
  if (a->begin != b->begin)
    return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end)
    return a->end < b->end ? -1 : 1;
  return a->index - b->index;
}

static int str_cmp(const void *pa, const void *pb) {
  return strcmp(*(char *const *)pa, *(char *const *)pb);
}

/* Reads one tensor entry; reports and returns false when it is malformed. */
static bool read_entry(raf_ctx *ctx, const char *file, const cJSON *j,
                       raf_st_tensor *t, span *sp, uint64_t buflen) {
  const char *name = j->string;
  if (!cJSON_IsObject(j)) {
    fail(ctx, file, "tensor '%s': the entry is not a JSON object", name);
    return false;
  }
  const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
  for (const cJSON *c = j->child; c; c = c->next) {
    const cJSON **slot = strcmp(c->string, "dtype") == 0          ? &dtype
                         : strcmp(c->string, "shape") == 0        ? &shape
                         : strcmp(c->string, "data_offsets") == 0 ? &offsets
                                                                  : NULL;
    if (slot && *slot) {
      fail(ctx, file, "tensor '%s': \"%s\" is given twice", name, c->string);
      return false;
    }
    if (slot)
      *slot = c;
  }
  if (!dtype || !shape || !offsets) {
    fail(ctx, file, "tensor '%s': the entry lacks \"%s\"", name,
         !dtype   ? "dtype"
         : !shape ? "shape"
                  : "data_offsets");
    return false;
  }
  if (!cJSON_IsString(dtype)) {
    fail(ctx, file, "tensor '%s': \"dtype\" is not a string", name);
    return false;
  }
  size_t k = 0;
  while (k < NDTYPES && strcmp(dtypes[k].name, dtype->valuestring) != 0)
    k++;
  if (k == NDTYPES) {
    fail(ctx, file,
         "tensor '%s': unsupported dtype '%.32s' (raf reads F64, F32, F16, "
         "BF16, I64, I32, I8, U8 and BOOL)",
         name, dtype->valuestring);
    return false;
  }
  t->dtype = dtypes[k].dtype;

  if (!cJSON_IsArray(shape)) {
    fail(ctx, file, "tensor '%s': \"shape\" is not a list", name);
    return false;
  }
  int rank = cJSON_GetArraySize(shape);
  if (rank > RAF_MAX_RANK) {
    fail(ctx, file, "tensor '%s': rank %d exceeds raf's maximum of %d", name,
         rank, RAF_MAX_RANK);
    return false;
  }
  t->rank = rank;
  uint64_t numel = 1;
  bool overflow = false;
  int d = 0;
  for (const cJSON *c = shape->child; c; c = c->next, d++) {
    uint64_t v;
    if (!json_uint(c, &v)) {
      fail(ctx, file,
           "tensor '%s': \"shape\" element %d is not a non-negative integer",
           name, d);
      return false;
    }
    t->dims[d] = (int64_t)v;
    if (v && numel > (uint64_t)INT64_MAX / v)
      overflow = true;
    else
      numel *= v;
  }
  size_t esize = (size_t)raf_dtype_size(t->dtype);
  if (overflow || numel > (uint64_t)(SIZE_MAX / 2) / esize) {
    fail(ctx, file, "tensor '%s': the shape has too many elements", name);
    return false;
  }

  uint64_t begin, end;
  if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
      !json_uint(offsets->child, &begin) ||
      !json_uint(offsets->child->next, &end)) {
    fail(ctx, file,
         "tensor '%s': \"data_offsets\" is not a list of two non-negative "
         "integers",
         name);
    return false;
  }
  if (end < begin || end > buflen) {
    fail(ctx, file,
         "tensor '%s': data_offsets [%llu, %llu] lie outside the data buffer "
         "(%llu bytes)",
         name, (unsigned long long)begin, (unsigned long long)end,
         (unsigned long long)buflen);
    return false;
  }
  t->nbytes = (size_t)(numel * esize);
  if (end - begin != t->nbytes) {
    fail(ctx, file,
         "tensor '%s': data_offsets [%llu, %llu] span %llu bytes, but %s with "
         "%llu elements takes %zu",
         name, (unsigned long long)begin, (unsigned long long)end,
         (unsigned long long)(end - begin), dtypes[k].name,
         (unsigned long long)numel, t->nbytes);
    return false;
  }
  *sp = (span){begin, end, -1};
  return true;
}

static bool read_metadata(raf_ctx *ctx, const char *file, const cJSON *j,
                          raf_safetensors *st) {
  if (!cJSON_IsObject(j)) {
    fail(ctx, file, "\"__metadata__\" is not a JSON object");
    return false;
  }
  int n = cJSON_GetArraySize(j);
  st->meta = calloc((size_t)n * 2 + 1, sizeof *st->meta);
  if (!st->meta) {
    fail(ctx, file, "out of memory");
    return false;
  }
  for (const cJSON *c = j->child; c; c = c->next) {
    if (!cJSON_IsString(c)) {
      fail(ctx, file, "\"__metadata__\": the value of '%s' is not a string",
           c->string);
      return false;
    }
    char **kv = &st->meta[2 * st->nmeta];
    kv[0] = strdup(c->string);
    kv[1] = strdup(c->valuestring);
    st->nmeta++;
    if (!kv[0] || !kv[1]) {
      fail(ctx, file, "out of memory");
      return false;
    }
  }
  return true;
}

/* Checks that the spans tile [0, buflen) and names are unique. */
static bool check_layout(raf_ctx *ctx, const char *file, raf_safetensors *st,
                         span *sp, uint64_t buflen) {
  bool ok = true;
  char **names = malloc(((size_t)st->n + 1) * sizeof *names);
  if (!names) {
    fail(ctx, file, "out of memory");
    return false;
  }
  memcpy(names, st->names, (size_t)st->n * sizeof *names);
  qsort(names, (size_t)st->n, sizeof *names, str_cmp);
  for (int i = 1; i < st->n; i++)
    if (strcmp(names[i - 1], names[i]) == 0 &&
        (i < 2 || strcmp(names[i - 2], names[i]) != 0)) {
      fail(ctx, file, "tensor '%s' appears more than once", names[i]);
      ok = false;
    }
  free(names);

  qsort(sp, (size_t)st->n, sizeof *sp, span_cmp);
  uint64_t at = 0;
  int prev = -1;
  for (int i = 0; i < st->n && ok; i++) {
    if (sp[i].begin < at) {
      fail(ctx, file,
           "tensors '%s' and '%s' overlap (bytes [%llu, %llu) and [%llu, "
           "%llu) of the data buffer)",
           st->names[sp[prev].index], st->names[sp[i].index],
           (unsigned long long)sp[prev].begin, (unsigned long long)at,
           (unsigned long long)sp[i].begin, (unsigned long long)sp[i].end);
      ok = false;
    } else if (sp[i].begin > at) {
      fail(ctx, file,
           "bytes [%llu, %llu) of the data buffer belong to no tensor (the "
           "format allows no holes)",
           (unsigned long long)at, (unsigned long long)sp[i].begin);
      ok = false;
    }
    at = sp[i].end;
    prev = i;
  }
  if (ok && at != buflen) {
    fail(ctx, file,
         "bytes [%llu, %llu) of the data buffer belong to no tensor (the "
         "format allows no trailing data)",
         (unsigned long long)at, (unsigned long long)buflen);
    ok = false;
  }
  return ok;
}

static bool check_bools(raf_ctx *ctx, const char *file,
                        const raf_safetensors *st) {
  bool ok = true;
  for (int i = 0; i < st->n; i++) {
    const raf_st_tensor *t = &st->tensors[i];
    const unsigned char *b = t->data;
    for (size_t k = 0; t->dtype == RAF_BOOL && k < t->nbytes; k++)
      if (b[k] > 1) {
        fail(ctx, file,
             "tensor '%s': BOOL element at flat index %zu is %u, not 0 or 1",
             t->name, k, b[k]);
        ok = false;
        break;
      }
  }
  return ok;
}

/* Parses the file in bytes, which *out takes over (freed on error). */
static raf_status parse_owned(raf_ctx *ctx, const char *file,
                              unsigned char *bytes, size_t len,
                              raf_safetensors **out) {
  *out = NULL;
  if (len < 8) {
    free(bytes);
    return fail(ctx, file,
                "truncated file: %zu bytes, but a safetensors file starts "
                "with an 8-byte header length",
                len);
  }
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | bytes[i];
  if (hlen > len - 8) {
    free(bytes);
    return fail(ctx, file,
                "truncated file or bad header length: the header is %llu "
                "bytes, but only %zu follow the length",
                (unsigned long long)hlen, len - 8);
  }
  raf_safetensors *st = calloc(1, sizeof *st);
  /* cJSON reads a NUL-terminated copy, so nothing past the header is read. */
  char *text = malloc((size_t)hlen + 1);
  if (!st || !text) {
    free(st);
    free(text);
    free(bytes);
    return fail(ctx, file, "out of memory");
  }
  st->bytes = bytes;
  st->len = len;
  memcpy(text, bytes + 8, (size_t)hlen);
  text[hlen] = '\0';
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, 0);
  bool ok = true;
  if (!root) {
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    fail(ctx, file, "malformed JSON header (at byte %zu of %llu)", at,
         (unsigned long long)hlen);
    ok = false;
  } else {
    /* The reference writer pads the header with spaces. */
    while (end && end < text + hlen &&
           (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
      end++;
    if (end != text + hlen) {
      fail(ctx, file,
           "malformed JSON header: unexpected data at byte %zu of %llu",
           (size_t)(end - text), (unsigned long long)hlen);
      ok = false;
    } else if (!cJSON_IsObject(root)) {
      fail(ctx, file, "the JSON header is not an object");
      ok = false;
    }
  }

  const unsigned char *data = bytes + 8 + hlen;
  uint64_t buflen = len - 8 - hlen;
  int count = ok ? cJSON_GetArraySize(root) : 0;
  span *sp = calloc((size_t)count + 1, sizeof *sp);
  st->tensors = calloc((size_t)count + 1, sizeof *st->tensors);
  st->names = calloc((size_t)count + 1, sizeof *st->names);
  if (ok && (!sp || !st->tensors || !st->names)) {
    fail(ctx, file, "out of memory");
    ok = false;
  }
  bool has_meta = false;
  for (const cJSON *c = ok ? root->child : NULL; c; c = c->next) {
    if (strcmp(c->string, "__metadata__") == 0) {
      if (has_meta) {
        fail(ctx, file, "\"__metadata__\" appears more than once");
        ok = false;
      } else if (!read_metadata(ctx, file, c, st)) {
        ok = false;
      }
      has_meta = true;
      continue;
    }
    raf_st_tensor *t = &st->tensors[st->n];
    span *s = &sp[st->n];
    if (!read_entry(ctx, file, c, t, s, buflen)) {
      ok = false;
      continue;
    }
    if (!(st->names[st->n] = strdup(c->string))) {
      fail(ctx, file, "out of memory");
      ok = false;
      break;
    }
    t->name = st->names[st->n];
    t->data = data + s->begin;
    s->index = st->n++;
  }
  cJSON_Delete(root);
  free(text);
  ok = ok && check_layout(ctx, file, st, sp, buflen) &&
       check_bools(ctx, file, st);
  free(sp);
  if (!ok) {
    raf_safetensors_free(st);
    return RAF_ERROR;
  }
  *out = st;
  return RAF_OK;
}

raf_status raf_safetensors_parse(raf_ctx *ctx, const char *name,
                                 const void *bytes, size_t len,
                                 raf_safetensors **out) {
  *out = NULL;
  unsigned char *copy = malloc(len ? len : 1);
  if (!copy)
    return fail(ctx, name, "out of memory");
  if (len)
    memcpy(copy, bytes, len);
  return parse_owned(ctx, name, copy, len, out);
}

raf_status raf_safetensors_read(raf_ctx *ctx, const char *path,
                                raf_safetensors **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return fail(ctx, path, "cannot open file: %s", strerror(errno));
  size_t n = 0;
  errno = 0;
  char *buf = raf_read_stream(f, &n);
  int err = errno;
  fclose(f);
  if (!buf)
    return fail(ctx, path, "cannot read file%s%s", err ? ": " : "",
                err ? strerror(err) : "");
  return parse_owned(ctx, path, (unsigned char *)buf, n, out);
}

/* ---- Writing ------------------------------------------------------------ */

static cJSON *json_uint_raw(uint64_t v) {
  /* Raw digits: cJSON would print large numbers in exponent form, which
   * the reference reader refuses for integers. */
  char s[24];
  snprintf(s, sizeof s, "%llu", (unsigned long long)v);
  return cJSON_CreateRaw(s);
}

/* The header text, padded with spaces so 8 + its length is a multiple of
 * 8; NULL after reporting. */
static char *make_header(raf_ctx *ctx, const char *path,
                         const raf_st_tensor *ts, int n,
                         const char *const *metadata, size_t *hlen) {
  cJSON *root = cJSON_CreateObject();
  bool ok = root != NULL, reported = false;
  uint64_t at = 0;
  for (int i = 0; ok && i < n; i++) {
    const raf_st_tensor *t = &ts[i];
    const char *dt = raf_safetensors_dtype_name(t->dtype);
    uint64_t numel = 1;
    for (int d = 0; d < t->rank; d++)
      numel *= (uint64_t)t->dims[d];
    if (strcmp(t->name, "__metadata__") == 0) {
      fail(ctx, path, "a tensor cannot be named '__metadata__'");
      ok = false;
      reported = true;
      break;
    }
    if (cJSON_GetObjectItemCaseSensitive(root, t->name)) {
      fail(ctx, path, "tensor '%s' is given twice", t->name);
      ok = false;
      reported = true;
      break;
    }
    if (strcmp(dt, "?") == 0 || t->rank < 0 || t->rank > RAF_MAX_RANK ||
        numel * (uint64_t)raf_dtype_size(t->dtype) != t->nbytes) {
      fail(ctx, path, "tensor '%s': bad dtype, rank or size", t->name);
      ok = false;
      reported = true;
      break;
    }
    cJSON *e = cJSON_CreateObject(), *shape = cJSON_CreateArray(),
          *offsets = cJSON_CreateArray();
    ok = e && shape && offsets && cJSON_AddItemToObject(root, t->name, e);
    if (!ok) {
      cJSON_Delete(e);
      cJSON_Delete(shape);
      cJSON_Delete(offsets);
      break;
    }
    ok = cJSON_AddItemToObject(e, "dtype", cJSON_CreateString(dt));
    ok = ok && cJSON_AddItemToObject(e, "shape", shape);
    if (!ok)
      cJSON_Delete(shape);
    for (int d = 0; ok && d < t->rank; d++)
      ok = cJSON_AddItemToArray(shape, json_uint_raw((uint64_t)t->dims[d]));
    ok = ok && cJSON_AddItemToObject(e, "data_offsets", offsets);
    if (!ok)
      cJSON_Delete(offsets);
    ok = ok && cJSON_AddItemToArray(offsets, json_uint_raw(at)) &&
         cJSON_AddItemToArray(offsets, json_uint_raw(at + t->nbytes));
    at += t->nbytes;
  }
  if (ok && metadata && metadata[0]) {
    cJSON *m = cJSON_CreateObject();
    ok = m && cJSON_AddItemToObject(root, "__metadata__", m);
    if (!ok)
      cJSON_Delete(m);
    for (int i = 0; ok && metadata[i] && metadata[i + 1]; i += 2)
      ok = cJSON_AddItemToObject(m, metadata[i],
                                 cJSON_CreateString(metadata[i + 1]));
  }
  char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  if (!text) {
    if (!reported)
      fail(ctx, path, "out of memory");
    return NULL;
  }
  size_t len = strlen(text), padded = len + (8 - (8 + len) % 8) % 8;
  char *out = realloc(text, padded + 1);
  if (!out) {
    free(text);
    fail(ctx, path, "out of memory");
    return NULL;
  }
  memset(out + len, ' ', padded - len);
  out[padded] = '\0';
  *hlen = padded;
  return out;
}

/* Opens a new file beside path, with the permissions fopen would give
 * (0666 less the umask); *tmp gets its malloc'd name. */
static FILE *open_temp(const char *path, char **tmp) {
  size_t n = strlen(path) + 48;
  char *name = malloc(n);
  if (!name)
    return NULL;
  static unsigned counter;
  for (int tries = 0; tries < 100; tries++) {
    snprintf(name, n, "%s.tmp-%ld-%u", path, (long)getpid(), counter++);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd >= 0) {
      FILE *f = fdopen(fd, "wb");
      if (!f) {
        close(fd);
        remove(name);
        break;
      }
      *tmp = name;
      return f;
    }
    if (errno != EEXIST)
      break;
  }
  free(name);
  return NULL;
}

/* Makes a rename in path's directory durable (fsync of the directory). A
 * file system that cannot sync directories (EINVAL) has nothing to do. */
static raf_status sync_dir(raf_ctx *ctx, const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) + 1 : 0;
  char *dir = malloc(n + 2);
  if (!dir)
    return fail(ctx, path, "out of memory");
  memcpy(dir, slash ? path : ".", slash ? n : 1);
  dir[slash ? n : 1] = '\0';
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  int err = fd < 0 ? errno : fsync(fd) != 0 ? errno : 0;
  if (fd >= 0)
    close(fd);
  raf_status rc = err && err != EINVAL
                      ? fail(ctx, path, "written, but its directory '%s' "
                             "could not be synced: %s", dir, strerror(err))
                      : RAF_OK;
  free(dir);
  return rc;
}

raf_status raf_safetensors_write(raf_ctx *ctx, const char *path,
                                 const raf_st_tensor *tensors, int n,
                                 const char *const *metadata) {
  size_t hlen = 0;
  char *header = make_header(ctx, path, tensors, n, metadata, &hlen);
  if (!header)
    return RAF_ERROR;
  /* A regular file (or a new one) goes through a temporary; anything else,
   * such as /dev/null or a pipe, is written as it is. */
  struct stat sb;
  char *tmp = NULL;
  FILE *f = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)
                ? fopen(path, "wb")
                : open_temp(path, &tmp);
  if (!f) {
    int err = errno;
    free(header);
    return fail(ctx, path, "cannot create file: %s", strerror(err));
  }
  unsigned char pre[8];
  for (int i = 0; i < 8; i++)
    pre[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
  bool ok = fwrite(pre, 1, 8, f) == 8 && fwrite(header, 1, hlen, f) == hlen;
  for (int i = 0; ok && i < n; i++)
    ok = tensors[i].nbytes == 0 ||
         fwrite(tensors[i].data, 1, tensors[i].nbytes, f) == tensors[i].nbytes;
  int err = ok ? 0 : errno;
  /* The data reaches the disk before the rename makes it the file, so a
   * crash of the machine, not only of the process, leaves the old file or
   * the whole new one. */
  if (ok && (fflush(f) != 0 || (tmp && fsync(fileno(f)) != 0))) {
    ok = false;
    err = errno;
  }
  if (fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  free(header);
  if (ok && tmp && rename(tmp, path) != 0) {
    ok = false;
    err = errno;
  }
  bool renamed = ok && tmp;
  if (!ok && tmp)
    remove(tmp);
  free(tmp);
  if (!ok)
    return fail(ctx, path, "cannot write file%s%s", err ? ": " : "",
                err ? strerror(err) : "");
  return renamed ? sync_dir(ctx, path) : RAF_OK;
}
