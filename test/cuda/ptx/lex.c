/* lex.c: the tokens of PTX text, and the errors the parser reports with
 * them, for parse.c and parse_instr.c.
 *
 * A token is an identifier (which takes dots and `::`, so an opcode with
 * its modifiers, `ld.global.nc.v4.f32`, and a special register, `%tid.x`,
 * are one token each), a number (decimal, hex, octal, and the float bit
 * patterns `0f3F800000` and `0d3FF0000000000000`), a string, or one
 * punctuation character. Comments are skipped; lines are counted for the
 * JIT log.
 */
#include "parse.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ptxp_failed(const parser *ps) { return ps->status != PTX_OK; }

void ptxp_error_at(parser *ps, int line, ptx_status st, const char *fmt,
                     ...) {
  if (ptxp_failed(ps))
    return;
  ps->status = st;
  if (!ps->log || !ps->log_size)
    return;
  int n = snprintf(ps->log, ps->log_size,
                   "ptxas application ptx input, line %d; %s: ", line,
                   st == PTX_UNSUPPORTED_VERSION ? "fatal   " : "error   ");
  if (n < 0 || (size_t)n >= ps->log_size)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ps->log + n, ps->log_size - (size_t)n, fmt, ap);
  va_end(ap);
}

void *ptxp_grow(void *p, int *cap, int need, size_t elem) {
  if (need <= *cap)
    return p;
  int c = *cap ? *cap * 2 : 16;
  while (c < need)
    c *= 2;
  void *q = realloc(p, (size_t)c * elem);
  if (q)
    *cap = c;
  return q;
}

/* ---- tokens ---- */

static bool ident_start(int c) {
  return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.';
}
static bool ident_char(int c) {
  return isalnum(c) || c == '_' || c == '$' || c == '.';
}

void ptxp_skip_line(parser *ps) {
  while (*ps->p && *ps->p != '\n')
    ps->p++;
}

void ptxp_next(parser *ps) {
  for (;;) {
    while (isspace((unsigned char)*ps->p))
      if (*ps->p++ == '\n')
        ps->line++;
    if (ps->p[0] == '/' && ps->p[1] == '/')
      ptxp_skip_line(ps);
    else if (ps->p[0] == '/' && ps->p[1] == '*') {
      const char *e = strstr(ps->p + 2, "*/");
      for (const char *q = ps->p; q < (e ? e : ps->p + strlen(ps->p)); q++)
        ps->line += *q == '\n';
      ps->p = e ? e + 2 : ps->p + strlen(ps->p);
    } else
      break;
  }
  token *t = &ps->tok;
  memset(t, 0, sizeof *t);
  t->start = ps->p;
  t->line = ps->line;
  int c = (unsigned char)*ps->p;
  if (!c) {
    t->kind = T_EOF;
  } else if (ident_start(c) && !(c == '.' && isdigit((unsigned char)ps->p[1]))) {
    const char *q = ps->p + 1;
    while (ident_char((unsigned char)*q) || (q[0] == ':' && q[1] == ':' &&
                                             ident_char((unsigned char)q[2])))
      q += *q == ':' ? 2 : 1;
    t->kind = T_IDENT;
    ps->p = q;
  } else if (isdigit(c)) {
    const char *q = ps->p;
    if (q[0] == '0' && (q[1] == 'f' || q[1] == 'F' || q[1] == 'd' ||
                        q[1] == 'D')) {
      t->kind = T_FLOAT;
      t->float_bits = (q[1] == 'f' || q[1] == 'F') ? 32 : 64;
      char *end;
      t->ival = strtoull(q + 2, &end, 16);
      ps->p = end;
    } else {
      char *end_i, *end_f;
      unsigned long long v = strtoull(q, &end_i, 0);
      double d = strtod(q, &end_f);
      if (end_f > end_i) {
        t->kind = T_FLOAT;
        t->fval = d;
        ps->p = end_f;
      } else {
        t->kind = T_INT;
        t->ival = v;
        ps->p = end_i;
        if (*ps->p == 'U')
          ps->p++;
      }
    }
  } else if (c == '"') {
    const char *q = ps->p + 1;
    while (*q && *q != '"')
      q++;
    t->kind = T_STRING;
    ps->p = *q ? q + 1 : q;
  } else {
    t->kind = T_PUNCT;
    ps->p++;
  }
  t->len = (int)(ps->p - t->start);
}

bool ptxp_is_punct(const parser *ps, char c) {
  return ps->tok.kind == T_PUNCT && ps->tok.start[0] == c;
}
bool ptxp_is_word(const parser *ps, const char *w) {
  return ps->tok.kind == T_IDENT && (int)strlen(w) == ps->tok.len &&
         memcmp(ps->tok.start, w, (size_t)ps->tok.len) == 0;
}
bool ptxp_accept(parser *ps, char c) {
  if (!ptxp_is_punct(ps, c))
    return false;
  ptxp_next(ps);
  return true;
}
void ptxp_expect(parser *ps, char c) {
  if (!ptxp_accept(ps, c))
    PTXP_ERROR(ps, "syntax error: expected '%c' at '%.*s'", c,
          ps->tok.len ? ps->tok.len : 3, ps->tok.len ? ps->tok.start : "EOF");
}
char *ptxp_tok_dup(const parser *ps) {
  char *s = malloc((size_t)ps->tok.len + 1);
  if (s) {
    memcpy(s, ps->tok.start, (size_t)ps->tok.len);
    s[ps->tok.len] = '\0';
  }
  return s;
}
uint64_t ptxp_expect_int(parser *ps) {
  bool neg = ptxp_accept(ps, '-');
  if (ps->tok.kind != T_INT) {
    PTXP_ERROR(ps, "syntax error: expected a number at '%.*s'", ps->tok.len,
          ps->tok.start);
    return 0;
  }
  uint64_t v = ps->tok.ival;
  ptxp_next(ps);
  return neg ? 0 - v : v; /* unsigned: -INT64_MIN too */
}

int ptxp_type_of(const char *s, int len) {
  for (int t = 1; t < PTX_T_COUNT; t++)
    if ((int)strlen(ptx_type_names[t]) == len &&
        memcmp(ptx_type_names[t], s, (size_t)len) == 0)
      return t;
  return PTX_T_NONE;
}

