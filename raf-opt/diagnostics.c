/* diagnostics.c: --verify-diagnostics (see diagnostics.h).
 *
 * An annotation is `expected-SEVERITY[@WHERE] {{TEXT}}` in a comment, where
 * SEVERITY is error, warning or note and WHERE is +N or -N (lines relative to
 * the comment's), `above` or `below`; without WHERE it is the comment's own
 * line. A diagnostic matches when severity and line agree and its message
 * contains TEXT. Both diagnostics nobody expected and expectations nobody
 * met are reported.
 */
#include "raf-opt/diagnostics.h"

#include <stdlib.h>
#include <string.h>

typedef struct expectation {
  raf_severity sev;
  uint32_t line;     /* the line the diagnostic must be on */
  uint32_t at_line;  /* where the annotation is written */
  const char *text;
  size_t len;
  bool met;
} expectation;

static const char *const sev_names[] = {"error", "warning", "note"};

static size_t collect(const char *text, size_t len, uint32_t first_line,
                      expectation **out) {
  size_t n = 0, cap = 0;
  expectation *v = NULL;
  uint32_t line = first_line;
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    for (const char *q = p; q < eol;) {
      const char *hit = NULL;
      for (const char *s = q; s + 9 <= eol && !hit; s++)
        if (memcmp(s, "expected-", 9) == 0)
          hit = s;
      if (!hit)
        break;
      const char *s = hit + 9;
      int sev = -1;
      for (int k = 0; k < 3; k++) {
        size_t kl = strlen(sev_names[k]);
        if ((size_t)(eol - s) >= kl && memcmp(s, sev_names[k], kl) == 0) {
          sev = k;
          s += kl;
          break;
        }
      }
      q = s;
      if (sev < 0)
        continue;
      int64_t target = line;
      if (s < eol && *s == '@') {
        s++;
        if ((size_t)(eol - s) >= 5 && memcmp(s, "above", 5) == 0) {
          target = line - 1;
          s += 5;
        } else if ((size_t)(eol - s) >= 5 && memcmp(s, "below", 5) == 0) {
          target = line + 1;
          s += 5;
        } else {
          char *e;
          target = line + strtol(s, &e, 10);
          s = e;
        }
      }
      while (s < eol && *s == ' ')
        s++;
      if (eol - s < 4 || memcmp(s, "{{", 2) != 0)
        continue;
      const char *t = s + 2, *close = NULL;
      for (const char *c = t; c + 2 <= eol && !close; c++)
        if (memcmp(c, "}}", 2) == 0)
          close = c;
      if (!close)
        continue;
      if (n == cap) {
        cap = cap ? cap * 2 : 16;
        expectation *g = realloc(v, cap * sizeof *v);
        if (!g)
          break;
        v = g;
      }
      v[n++] = (expectation){(raf_severity)sev, (uint32_t)target, line, t,
                             (size_t)(close - t), false};
      q = close + 2;
    }
    line++;
    p = nl ? nl + 1 : end;
  }
  *out = v;
  return n;
}

static bool contains(const char *msg, const char *text, size_t len) {
  size_t ml = strlen(msg);
  for (size_t i = 0; i + len <= ml; i++)
    if (memcmp(msg + i, text, len) == 0)
      return true;
  return len == 0;
}

bool raf_opt_verify_diagnostics(raf_ctx *ctx, size_t from, const char *name,
                                const char *text, size_t len,
                                uint32_t first_line, FILE *out) {
  expectation *ex = NULL;
  size_t nex = collect(text, len, first_line, &ex);
  bool ok = true;
  for (size_t i = from; i < raf_diag_count(ctx); i++) {
    raf_loc loc;
    raf_severity sev;
    const char *msg;
    raf_diag_get(ctx, i, &loc, &sev, &msg);
    bool matched = false;
    for (size_t k = 0; k < nex && !matched; k++)
      if (!ex[k].met && ex[k].sev == sev && ex[k].line == loc.line &&
          contains(msg, ex[k].text, ex[k].len))
        matched = ex[k].met = true;
    /* A note nobody asked about explains an expected error: not a failure. */
    if (!matched && sev != RAF_SEV_NOTE) {
      ok = false;
      if (loc.line)
        fprintf(out, "%s:%u:%u: ", loc.file, loc.line, loc.col);
      fprintf(out, "error: unexpected %s: %s\n", sev_names[sev], msg);
    }
  }
  for (size_t k = 0; k < nex; k++)
    if (!ex[k].met) {
      ok = false;
      fprintf(out, "%s:%u: error: expected %s \"%.*s\" was not produced\n",
              name, ex[k].at_line, sev_names[ex[k].sev], (int)ex[k].len,
              ex[k].text);
    }
  free(ex);
  return ok;
}
