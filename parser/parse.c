/* parse.c: raf_parse_module, the entry point of the parser.
 *
 * Parsing is two steps. The grammar builds every function with the types the
 * text states; then, with the whole module known, calls and @function
 * attributes are resolved (a function may be called before its definition)
 * and the types left out are inferred in statement order, each statement's
 * attributes checked first. When that finds errors in a module without
 * syntax errors, the verifier reports the rest before the module is thrown
 * away, so one run reports every error.
 */
#include "parser/build.h"
#include "parser.h"
#include "lexer.h"

#include <stdlib.h>
#include <string.h>

static void resolve_func_attrs(raf_attrs *a, void *parser) {
  raf_parser *p = parser;
  for (int i = 0; i < a->n; i++) {
    raf_attr *at = &a->v[i];
    if (at->kind != RAF_ATTR_FUNC)
      continue;
    const char *name = at->val.u.s;
    at->val.u.func = name ? raf_module_find_func(p->m, name) : NULL;
    if (!at->val.u.func)
      raf_parse_error(p, at->loc, "unknown function @%s", name ? name : "");
  }
}

static void resolve_module(raf_parser *p) {
  for (int i = 0; i < p->calls.n; i++) {
    raf_pending_call *c = &RAF_BUF_AT(&p->calls, raf_pending_call, i);
    char *name = raf_arena_strndup(&p->m->arena, c->callee.s + 1,
                                   (size_t)c->callee.len - 1);
    c->stmt->callee = name ? raf_module_find_func(p->m, name) : NULL;
    if (!c->stmt->callee)
      raf_parse_error(p, c->callee.loc, "call of undefined function %.*s",
                      c->callee.len, c->callee.s);
  }
  if (p->nfuncrefs)
    raf_module_visit_attrs(p->m, resolve_func_attrs, p);
}

static void infer_missing_types(raf_parser *p) {
  raf_type *types[64];
  for (raf_func *f = p->m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next) {
      if (s->nresults == 0 || s->results[0]->type)
        continue;
      if (!raf_verify_stmt_attrs(p->ctx, p->m, s))
        continue;
      bool known = s->op != RAF_OP_CALL || s->callee;
      for (int i = 0; known && i < s->noperands; i++)
        known = s->operands[i].value && s->operands[i].value->type;
      /* An unknown operand type was reported where it arose. */
      if (!known)
        continue;
      if (s->nresults > (int)(sizeof types / sizeof types[0])) {
        raf_parse_error(p, s->loc, "too many results to infer");
        continue;
      }
      if (raf_infer_stmt(p->m, s, types, s->nresults) != RAF_OK)
        continue;
      for (int i = 0; i < s->nresults; i++)
        s->results[i]->type = types[i];
    }
}

static void parser_free(raf_parser *p) {
  raf_buf *bufs[] = {&p->placeholders, &p->lhs,   &p->operands, &p->types,
                     &p->dims,         &p->nums,  &p->attrs,    &p->results,
                     &p->lit,          &p->calls, &p->operand_locs};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    free(bufs[i]->v);
  raf_strmap_free(&p->forward);
}

raf_module *raf_parse_module(raf_ctx *ctx, const char *name, const char *text,
                             size_t len, uint32_t first_line) {
  raf_parser p;
  memset(&p, 0, sizeof p);
  p.ctx = ctx;
  char *copy;
  p.file = raf_ctx_add_source(ctx, name, text, len, first_line, &copy);
  p.line = first_line ? first_line : 1;
  p.after_nl = true;
  p.m = raf_module_create(ctx);
  if (!p.m || !copy) {
    raf_module_destroy(p.m);
    return NULL;
  }
  size_t errors = raf_error_count(ctx);
  yyscan_t scanner;
  if (raf_yylex_init_extra(&p, &scanner)) {
    raf_module_destroy(p.m);
    return NULL;
  }
  /* Scan the context's copy in place: no second copy of a large module. */
  YY_BUFFER_STATE buf = raf_yy_scan_buffer(copy, len + 2, scanner);
  raf_yyparse(scanner, &p);
  bool syntax_ok = raf_error_count(ctx) == errors;
  resolve_module(&p);
  if (syntax_ok) {
    /* A call of an undefined function stays untyped; the verifier then
     * reports everything else the module gets wrong, in one run. */
    infer_missing_types(&p);
    if (raf_error_count(ctx) != errors)
      raf_verify_unreported(ctx, p.m);
  }
  raf_yy_delete_buffer(buf, scanner);
  raf_yylex_destroy(scanner);
  parser_free(&p);
  if (raf_error_count(ctx) != errors) {
    raf_module_destroy(p.m);
    return NULL;
  }
  return p.m;
}
