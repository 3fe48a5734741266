/* values.c: tensors from the command line, and to the terminal (values.h).
 */
#include "raf-run/values.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

raf_tensor *rr_host_tensor(raf_type *t) {
  raf_tensor *s = malloc(sizeof *s);
  size_t n = (size_t)t->numel * (size_t)raf_dtype_size(t->dtype);
  if (!s || !(s->data = calloc(1, n + 1))) {
    free(s);
    return NULL;
  }
  s->type = t;
  s->nbytes = n;
  s->device = RAF_DEVICE_HOST;
  return s;
}

void rr_host_tensor_free(raf_tensor *t) {
  if (t)
    free(t->data);
  free(t);
}

static bool is_sep(char c) {
  return c == ',' || c == '[' || c == ']' || isspace((unsigned char)c);
}

/* One number of inline text into element i of t. */
static bool parse_number(const char *s, size_t len, raf_tensor *t,
                         int64_t i) {
  char buf[64];
  if (len == 0 || len >= sizeof buf)
    return false;
  memcpy(buf, s, len);
  buf[len] = 0;
  raf_dtype dt = t->type->dtype;
  if (strcmp(buf, "true") == 0 || strcmp(buf, "false") == 0) {
    raf_elem_set_i64(dt, t->data, i, buf[0] == 't');
    return true;
  }
  char *end;
  errno = 0;
  if (!raf_dtype_is_float(dt)) {
    long long v = strtoll(buf, &end, 10);
    if (*end || errno)
      return false;
    if (dt == RAF_BOOL && v != 0 && v != 1)
      return false;
    raf_elem_set_i64(dt, t->data, i, v);
    return true;
  }
  double v = strtod(buf, &end); /* accepts inf, -inf and nan */
  if (*end)
    return false;
  raf_elem_set_f64(dt, t->data, i, v);
  return true;
}

raf_status rr_parse_inline(raf_ctx *ctx, const char *what, const char *text,
                           raf_tensor *t) {
  int64_t n = 0, want = t->type->numel;
  char type[128];
  raf_type_str(t->type, type, sizeof type);
  for (const char *s = text;;) {
    while (*s && is_sep(*s))
      s++;
    if (!*s)
      break;
    const char *start = s;
    while (*s && !is_sep(*s))
      s++;
    if (n < want && !parse_number(start, (size_t)(s - start), t, n)) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "%s: '%.*s' is not a %s value", what, (int)(s - start),
                      start, raf_dtype_name(t->type->dtype));
      return RAF_ERROR;
    }
    n++;
  }
  if (n != want) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "%s: %lld value%s given, but %s has %lld", what,
                    (long long)n, n == 1 ? "" : "s", type, (long long)want);
    return RAF_ERROR;
  }
  return RAF_OK;
}

static void npy_type_str(const raf_npy *a, char *buf, size_t size) {
  int k = snprintf(buf, size, "%s[", raf_dtype_name(a->dtype));
  for (int d = 0; d < a->rank && k > 0 && (size_t)k < size; d++)
    k += snprintf(buf + k, size - (size_t)k, "%s%lld", d ? "," : "",
                  (long long)a->dims[d]);
  if (k > 0 && (size_t)k < size)
    snprintf(buf + k, size - (size_t)k, "]");
}

void rr_relay_diags(raf_ctx *ctx, raf_ctx *scratch, const char *prefix) {
  for (size_t i = 0; i < raf_diag_count(scratch); i++) {
    raf_loc loc;
    raf_severity sev;
    const char *msg;
    raf_diag_get(scratch, i, &loc, &sev, &msg);
    raf_diag_report(ctx, (raf_loc){0}, sev, "%s: %s", prefix, msg);
  }
  raf_ctx_destroy(scratch);
}

raf_status rr_read_npy(raf_ctx *ctx, const char *what, const char *path,
                       raf_npy *out) {
  /* The reader names only the file; its messages are collected apart and
   * reported again after the name of the value that wanted the file. */
  raf_ctx *scratch = raf_ctx_create();
  if (!scratch) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "%s: out of memory",
                    what);
    return RAF_ERROR;
  }
  raf_status rc = raf_npy_read(scratch, path, out);
  rr_relay_diags(ctx, scratch, what);
  return rc;
}

raf_status rr_from_npy(raf_ctx *ctx, const char *what, const char *path,
                       const raf_npy *a, raf_tensor *t) {
  bool same = a->dtype == t->type->dtype && a->rank == t->type->rank;
  for (int d = 0; same && d < a->rank; d++)
    same = a->dims[d] == t->type->dims[d];
  if (!same) {
    char want[128], got[128];
    raf_type_str(t->type, want, sizeof want);
    npy_type_str(a, got, sizeof got);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "%s has type %s, but %s holds %s", what, want, path, got);
    return RAF_ERROR;
  }
  memcpy(t->data, a->data, t->nbytes);
  return RAF_OK;
}

raf_status rr_read_value(raf_ctx *ctx, const char *what, const char *spec,
                         raf_tensor *t) {
  if (spec[0] != '@')
    return rr_parse_inline(ctx, what, spec, t);
  raf_npy a;
  if (rr_read_npy(ctx, what, spec + 1, &a) != RAF_OK)
    return RAF_ERROR;
  raf_status rc = rr_from_npy(ctx, what, spec + 1, &a, t);
  raf_npy_free(&a);
  return rc;
}

raf_npy rr_npy_view(const raf_tensor *t) {
  raf_npy a = {t->type->dtype, t->type->rank, {0}, t->type->numel, t->data};
  for (int d = 0; d < t->type->rank; d++)
    a.dims[d] = t->type->dims[d];
  return a;
}

static void print_elem(FILE *out, const raf_tensor *t, int64_t i) {
  raf_dtype dt = t->type->dtype;
  if (dt == RAF_BOOL)
    fputs(((const uint8_t *)t->data)[i] ? "true" : "false", out);
  else if (raf_dtype_is_float(dt) && isnan(raf_elem_get_f64(dt, t->data, i)))
    fputs("nan", out); /* as NumPy, whatever the sign bit */
  else if (raf_dtype_is_float(dt))
    fprintf(out, "%.8g", raf_elem_get_f64(dt, t->data, i));
  else
    fprintf(out, "%lld", (long long)raf_elem_get_i64(dt, t->data, i));
}

/* NumPy's print options: an array of more than SUMMARY_THRESHOLD elements
 * shows only EDGE_ITEMS at each end of every long dimension. */
enum { SUMMARY_THRESHOLD = 1000, EDGE_ITEMS = 3 };

/* Prints dims [d, rank) of the block at flat index base (stride: the
 * elements per index of dim d). */
static void print_dims(FILE *out, const raf_tensor *t, int d, int64_t base,
                       bool summarize) {
  const raf_type *ty = t->type;
  if (d == ty->rank) {
    print_elem(out, t, base);
    return;
  }
  int64_t stride = 1;
  for (int e = d + 1; e < ty->rank; e++)
    stride *= ty->dims[e];
  int64_t n = ty->dims[d];
  bool cut = summarize && n > 2 * EDGE_ITEMS;
  fputc('[', out);
  for (int64_t k = 0; k < n; k++) {
    if (cut && k == EDGE_ITEMS) { /* skip to the last items */
      k = n - EDGE_ITEMS;
      fputs(d == ty->rank - 1 ? " ..." : "\n" /* then the row break */, out);
      if (d < ty->rank - 1)
        fprintf(out, "%*s...", d + 1, "");
    }
    if (k > 0) {
      if (d == ty->rank - 1) {
        fputc(' ', out);
      } else { /* a new row: a newline per dimension left, then indent */
        for (int r = d + 1; r < ty->rank; r++)
          fputc('\n', out);
        fprintf(out, "%*s", d + 1, "");
      }
    }
    print_dims(out, t, d + 1, base + k * stride, summarize);
  }
  fputc(']', out);
}

void rr_print(FILE *out, const raf_tensor *t, bool summarize) {
  print_dims(out, t, 0, 0, summarize && t->type->numel > SUMMARY_THRESHOLD);
  fputc('\n', out);
}

/* The argument result r of f updates, or NULL. */
static const raf_arg *updated_arg(const raf_func *f, int r) {
  const raf_attr *a = raf_attrs_find(&f->results[r].attrs, "updates");
  if (!a || a->kind != RAF_ATTR_VALUE || !a->val.u.value)
    return NULL;
  int k = a->val.u.value->index;
  return k >= 0 && k < f->nargs ? &f->args[k] : NULL;
}

/* Writes the indices r < n with in[r] as ranges: "1-4,6". */
static void print_ranges(FILE *out, const bool *in, int n) {
  bool first = true;
  for (int r = 0; r < n; r++) {
    if (!in[r])
      continue;
    int end = r;
    while (end + 1 < n && in[end + 1])
      end++;
    fprintf(out, end > r ? "%s%d-%d" : "%s%d", first ? "" : ",", r, end);
    first = false;
    r = end;
  }
}

/* "4 params, 9 states and 1 other argument": the nonzero counts. */
static void print_counts(FILE *out, const int *n, const char *const *what,
                         int kinds) {
  int left = 0;
  for (int k = 0; k < kinds; k++)
    left += n[k] > 0;
  for (int k = 0; k < kinds; k++) {
    if (!n[k])
      continue;
    left--;
    fprintf(out, "%d %s%s%s", n[k], what[k], n[k] == 1 ? "" : "s",
            left > 1 ? ", " : left == 1 ? " and " : "");
  }
}

void rr_print_results(FILE *out, const raf_func *f, raf_tensor *const *results,
                      rr_print_mode mode) {
  if (mode == RR_PRINT_NONE)
    return;
  bool *hidden = calloc((size_t)f->nresults + 1, sizeof *hidden);
  enum { PARAM, STATE, OTHER };
  int count[3] = {0, 0, 0};
  static const char *const kind[3] = {"param", "state", "other argument"};
  for (int r = 0; r < f->nresults; r++) {
    const raf_arg *arg = mode == RR_PRINT_SUMMARY ? updated_arg(f, r) : NULL;
    if (arg && hidden) {
      hidden[r] = true;
      count[raf_arg_flag(arg, "param")   ? PARAM
            : raf_arg_flag(arg, "state") ? STATE
                                         : OTHER]++;
      continue;
    }
    char type[128];
    raf_type_str(results[r]->type, type, sizeof type);
    fprintf(out, "result[%d]: %s\n", r, type);
    rr_print(out, results[r], mode == RR_PRINT_SUMMARY);
  }
  int nhidden = count[PARAM] + count[STATE] + count[OTHER];
  if (nhidden) {
    /* A training step returns its loss, then a copy of every param and
     * state: the values a checkpoint (--save) is for, not the terminal. */
    fputs(nhidden == 1 ? "result[" : "results[", out);
    print_ranges(out, hidden, f->nresults);
    fputs("]: updates of ", out);
    print_counts(out, count, kind, 3);
    fputs(", not printed (--print=full prints them)\n", out);
  }
  free(hidden);
}

static double default_tol(raf_dtype dt) {
  switch (dt) {
  case RAF_F64: return 1e-10;
  case RAF_F32: return 1e-5;
  case RAF_F16: return 1e-3;
  case RAF_BF16: return 1e-2;
  default: return 0;
  }
}

bool rr_compare(const raf_tensor *got, const raf_tensor *expected,
                rr_tolerance tol, char *msg, size_t size) {
  raf_dtype dt = got->type->dtype;
  double atol = tol.atol >= 0 ? tol.atol : default_tol(dt);
  double rtol = tol.rtol >= 0 ? tol.rtol : default_tol(dt);
  for (int64_t i = 0; i < got->type->numel; i++) {
    bool ok;
    double g, e;
    if (raf_dtype_is_float(dt)) {
      g = raf_elem_get_f64(dt, got->data, i);
      e = raf_elem_get_f64(dt, expected->data, i);
      ok = (isnan(g) && isnan(e)) || g == e ||
           (isfinite(e) && fabs(g - e) <= atol + rtol * fabs(e));
    } else {
      int64_t gi = raf_elem_get_i64(dt, got->data, i);
      int64_t ei = raf_elem_get_i64(dt, expected->data, i);
      ok = gi == ei;
      g = (double)gi;
      e = (double)ei;
    }
    if (ok)
      continue;
    char index[160] = "";
    int64_t rest = i;
    int k = 0;
    int64_t idx[RAF_MAX_RANK];
    for (int d = got->type->rank - 1; d >= 0; d--) {
      idx[d] = rest % got->type->dims[d];
      rest /= got->type->dims[d];
    }
    for (int d = 0; d < got->type->rank && k < (int)sizeof index - 24; d++)
      k += snprintf(index + k, sizeof index - (size_t)k, "%s%lld",
                    d ? "," : "", (long long)idx[d]);
    snprintf(msg, size,
             "element [%s] (flat %lld) is %.9g, expected %.9g "
             "(atol %g, rtol %g)",
             index, (long long)i, g, e, atol, rtol);
    return false;
  }
  return true;
}
