/* ctx.c: the context: diagnostics and the source buffers they quote.
 *
 * Diagnostics are collected, never printed on the spot, so a tool can render
 * them, count them or match them against expected-error annotations. The
 * renderer finds the source line of a location in the registered text and
 * draws a caret under its column, as GCC and Clang do. Reading a source
 * whole (raf_read_stream) lives here too, beside the buffers it fills.
 */
#include "ir/ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct raf_diag {
  raf_loc loc;
  raf_severity sev;
  char *message;
} raf_diag;

typedef struct raf_source {
  const char *name;
  char *text;
  size_t len;
  uint32_t first_line;
} raf_source;

struct raf_ctx {
  raf_diag *diags;
  size_t ndiags, cap, nerrors;
  raf_source *sources;
  size_t nsources;
  raf_arena names;
  raf_strmap name_map;
};

raf_ctx *raf_ctx_create(void) {
  raf_ctx *c = calloc(1, sizeof *c);
  if (c) {
    raf_arena_init(&c->names);
    raf_strmap_init(&c->name_map);
  }
  return c;
}

void raf_ctx_destroy(raf_ctx *c) {
  if (!c)
    return;
  raf_diag_clear(c);
  free(c->diags);
  for (size_t i = 0; i < c->nsources; i++)
    free(c->sources[i].text);
  free(c->sources);
  raf_strmap_free(&c->name_map);
  raf_arena_free(&c->names);
  free(c);
}

const char *raf_ctx_intern(raf_ctx *c, const char *name) {
  return raf_ctx_intern_span(c, name, strlen(name));
}

const char *raf_ctx_intern_span(raf_ctx *c, const char *name, size_t len) {
  const char *s = raf_strmap_get(&c->name_map, name, len);
  if (s)
    return s;
  char *copy = raf_arena_strndup(&c->names, name, len);
  if (!copy || !raf_strmap_put(&c->name_map, copy, len, copy))
    return "<out of memory>";
  return copy;
}

const char *raf_ctx_add_source(raf_ctx *c, const char *name, const char *text,
                               size_t len, uint32_t first_line,
                               char **copy_out) {
  const char *n = raf_ctx_intern(c, name);
  raf_source *grown =
      realloc(c->sources, (c->nsources + 1) * sizeof *c->sources);
  char *copy = malloc(len + 2);
  if (!grown || !copy) {
    free(copy);
    if (grown)
      c->sources = grown;
    if (copy_out)
      *copy_out = NULL;
    return n;
  }
  c->sources = grown;
  memcpy(copy, text, len);
  copy[len] = copy[len + 1] = 0; /* what Flex's yy_scan_buffer wants */
  if (copy_out)
    *copy_out = copy;
  c->sources[c->nsources++] = (raf_source){n, copy, len, first_line};
  return n;
}

void raf_diag_vreport(raf_ctx *c, raf_loc loc, raf_severity sev,
                      const char *fmt, va_list ap) {
  if (c->ndiags == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    raf_diag *d = realloc(c->diags, cap * sizeof *d);
    if (!d)
      return;
    c->diags = d;
    c->cap = cap;
  }
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char *msg = malloc(n > 0 ? (size_t)n + 1 : 1);
  if (!msg)
    return;
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  c->diags[c->ndiags++] = (raf_diag){loc, sev, msg};
  if (sev == RAF_SEV_ERROR)
    c->nerrors++;
}

void raf_diag_report(raf_ctx *c, raf_loc loc, raf_severity sev,
                     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  raf_diag_vreport(c, loc, sev, fmt, ap);
  va_end(ap);
}

size_t raf_diag_count(const raf_ctx *c) { return c->ndiags; }
size_t raf_error_count(const raf_ctx *c) { return c->nerrors; }

void raf_diag_get(const raf_ctx *c, size_t i, raf_loc *loc, raf_severity *sev,
                  const char **message) {
  if (loc)
    *loc = c->diags[i].loc;
  if (sev)
    *sev = c->diags[i].sev;
  if (message)
    *message = c->diags[i].message;
}

void raf_diag_clear(raf_ctx *c) {
  for (size_t i = 0; i < c->ndiags; i++)
    free(c->diags[i].message);
  c->ndiags = 0;
  c->nerrors = 0;
}

/* The text of line `line` in the latest source registered under name that
 * covers it; NULL when unknown. */
static const char *find_line(const raf_ctx *c, raf_loc loc, size_t *len) {
  for (size_t k = c->nsources; k-- > 0;) {
    const raf_source *s = &c->sources[k];
    if (s->name != loc.file || loc.line < s->first_line)
      continue;
    const char *p = s->text, *end = s->text + s->len;
    for (uint32_t l = s->first_line; l < loc.line && p < end; l++) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      p = nl ? nl + 1 : end;
    }
    if (p >= end)
      continue;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    *len = (size_t)((nl ? nl : end) - p);
    return p;
  }
  return NULL;
}

/* Diagnostics are shown in source order, each error with the notes that
 * followed it: a group starts at every diagnostic that is not a note. */
typedef struct diag_group {
  const raf_diag *first;
  size_t file_rank; /* files in the order they were first reported */
  size_t index, count;
} diag_group;

#define CMP(x, y) ((x) < (y) ? -1 : (x) > (y))
static int group_cmp(const void *pa, const void *pb) {
  const diag_group *a = pa, *b = pb;
  const raf_loc *la = &a->first->loc, *lb = &b->first->loc;
  int r = CMP(a->file_rank, b->file_rank);
  if (!r)
    r = CMP(la->line, lb->line);
  if (!r)
    r = CMP(la->col, lb->col);
  return r ? r : CMP(a->index, b->index);
}

static void render_one(const raf_ctx *c, const raf_diag *d, FILE *out) {
  static const char *const sev_names[] = {"error", "warning", "note"};
  if (d->loc.line)
    fprintf(out, "%s:%u:%u: ", d->loc.file ? d->loc.file : "<unknown>",
            d->loc.line, d->loc.col);
  fprintf(out, "%s: %s\n", sev_names[d->sev], d->message);
  size_t len = 0;
  const char *line = d->loc.line ? find_line(c, d->loc, &len) : NULL;
  if (!line)
    return;
  fprintf(out, "%.*s\n", (int)len, line);
  for (uint32_t col = 1; col < d->loc.col && col <= len; col++)
    fputc(line[col - 1] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

void raf_diag_render(const raf_ctx *c, FILE *out) {
  diag_group *g = malloc((c->ndiags ? c->ndiags : 1) * sizeof *g);
  size_t n = 0;
  for (size_t i = 0; g && i < c->ndiags; i++) {
    if (n == 0 || c->diags[i].sev != RAF_SEV_NOTE) {
      /* the rank of a file is the index of its first group */
      size_t rank = n;
      for (size_t k = n; k-- > 0;)
        if (g[k].first->loc.file == c->diags[i].loc.file) {
          rank = g[k].file_rank;
          break;
        }
      g[n++] = (diag_group){&c->diags[i], rank, i, 0};
    }
    g[n - 1].count++;
  }
  if (!g) { /* out of memory: reported order will do */
    for (size_t i = 0; i < c->ndiags; i++)
      render_one(c, &c->diags[i], out);
    return;
  }
  /* qsort is not stable, but index breaks every tie. */
  qsort(g, n, sizeof *g, group_cmp);
  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < g[k].count; i++)
      render_one(c, g[k].first + i, out);
  free(g);
}

char *raf_read_stream(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) {
      if (ferror(f)) {
        free(buf);
        return NULL;
      }
      break;
    }
    char *g = realloc(buf, cap * 2);
    if (!g)
      free(buf);
    buf = g;
    cap *= 2;
  }
  *len = n;
  return buf;
}
