/* imp.c: raf-import's state: its arena, the error list, the text buffer the
 * function body is written into, and the .raf names it hands out. Kept
 * apart from the op mappers so that they only say what to emit. */
#include "raf-import/import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void imp_init(imp *im, const char *file, const imp_options *opt) {
  memset(im, 0, sizeof *im);
  raf_arena_init(&im->arena);
  raf_strmap_init(&im->values);
  raf_strmap_init(&im->names);
  im->file = file;
  im->opt = *opt;
  im->node_index = -1;
}

void imp_free(imp *im) {
  for (int i = 0; i < im->nerrors; i++)
    free(im->errors[i]);
  free(im->errors);
  free(im->args);
  free(im->text);
  raf_strmap_free(&im->values);
  raf_strmap_free(&im->names);
  raf_arena_free(&im->arena);
}

static char *vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0)
    return NULL;
  char *s = malloc((size_t)n + 1);
  if (s)
    vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

void imp_error(imp *im, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (!s) {
    im->oom = true;
    return;
  }
  if (im->nerrors == im->cap_errors) {
    int cap = im->cap_errors ? 2 * im->cap_errors : 8;
    char **e = realloc(im->errors, sizeof *e * (size_t)cap);
    if (!e) {
      free(s);
      im->oom = true;
      return;
    }
    im->errors = e;
    im->cap_errors = cap;
  }
  im->errors[im->nerrors++] = s;
}

char *imp_fmt(imp *im, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (!s) {
    im->oom = true;
    return "";
  }
  char *r = raf_arena_strndup(&im->arena, s, strlen(s));
  free(s);
  if (!r) {
    im->oom = true;
    return "";
  }
  return r;
}

char *imp_fmt_ints(imp *im, const int64_t *v, int n) {
  char buf[32 * (RAF_MAX_RANK * 2 + 2)];
  size_t len = 0;
  buf[len++] = '[';
  for (int i = 0; i < n && len < sizeof buf - 40; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld",
                            i ? ", " : "", (long long)v[i]);
  buf[len++] = ']';
  buf[len] = 0;
  return imp_fmt(im, "%s", buf);
}

void imp_append(imp *im, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (!s) {
    im->oom = true;
    return;
  }
  size_t n = strlen(s);
  if (im->len + n + 1 > im->cap) {
    size_t cap = im->cap ? im->cap : 4096;
    while (im->len + n + 1 > cap)
      cap *= 2;
    char *t = realloc(im->text, cap);
    if (!t) {
      free(s);
      im->oom = true;
      return;
    }
    im->text = t;
    im->cap = cap;
  }
  memcpy(im->text + im->len, s, n + 1);
  im->len += n;
  free(s);
}

const char *imp_type_str(imp *im, raf_dtype dt, int rank,
                         const int64_t *dims) {
  char buf[32 * RAF_MAX_RANK + 16];
  size_t len = (size_t)snprintf(buf, sizeof buf, "%s[", raf_dtype_name(dt));
  for (int i = 0; i < rank; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld",
                            i ? "," : "", (long long)dims[i]);
  snprintf(buf + len, sizeof buf - len, "]");
  return imp_fmt(im, "%s", buf);
}

/* Temporaries are %tN; an ONNX name of that form is renamed (below), so
 * the two never meet. */
const char *imp_fresh(imp *im) {
  return imp_fmt(im, "%%t%d", ++im->counter);
}

static bool looks_like_temporary(const char *s) {
  if (s[0] != 't' || !s[1])
    return false;
  for (const char *p = s + 1; *p; p++)
    if (*p < '0' || *p > '9')
      return false;
  return true;
}

const char *imp_unique_name(imp *im, const char *onnx_name) {
  size_t n = strlen(onnx_name);
  char *s = raf_arena_alloc(&im->arena, n + 8);
  if (!s) {
    im->oom = true;
    return "arg";
  }
  for (size_t i = 0; i < n; i++) {
    char c = onnx_name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.';
    s[i] = ok ? c : '_';
  }
  if (n == 0)
    strcpy(s, "arg");
  /* Each clash adds a '_'; the arena string is re-made when it grows. */
  while (looks_like_temporary(s) || raf_strmap_get(&im->names, s, strlen(s)))
    s = imp_fmt(im, "%s_", s);
  if (!raf_strmap_put(&im->names, s, strlen(s), s))
    im->oom = true;
  return s;
}
