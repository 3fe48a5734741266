/* parser.y: the grammar of .raf modules (docs/LangRef.md, "Structure").
 *
 * A pure (reentrant) LALR(1) parser with locations. The actions only collect
 * pieces; parser/build.c turns them into IR and reports semantic errors
 * (unknown ops, redefinitions, bad literals). Recovery is per line: a bad
 * statement is skipped to its newline, a bad function header to the next
 * '}', so one run reports every independent error.
 *
 * Syntax errors are worded here (yyreport_syntax_error), not by Bison:
 * what was expected, in words, and what was found instead; a bracket left
 * open is named by what it opens ("expected ')' to close the operand
 * list"), which the lexer records as it reads. LAC makes the expected
 * tokens exact.
 */
%define api.pure full
%define api.prefix {raf_yy}
%define parse.error custom
%define parse.lac full
%locations
%param {void *scanner}
%parse-param {raf_parser *p}

%code requires {
#include "parser/parse_state.h"
}

%code provides {
/* The names Flex's bison-bridge expects. */
#define YYSTYPE RAF_YYSTYPE
#define YYLTYPE RAF_YYLTYPE
}

%union {
  raf_span tok;
  raf_type *type;
  raf_attrs attrs;
  raf_attr attr;
  int count;
}

%code {
#include "parser/build.h"
int raf_yylex(RAF_YYSTYPE *lval, RAF_YYLTYPE *lloc, void *scanner);
static void raf_yyerror(RAF_YYLTYPE *l, void *scanner, raf_parser *p,
                        const char *msg) {
  (void)scanner;
  raf_parse_error(p, raf_loc_of(p, l->first_line, l->first_column), "%s", msg);
}
#define LOC(l) raf_loc_of(p, (l).first_line, (l).first_column)

}

%token FUNC "'func'" RETURN "'return'" CALL "'call'" CONSTANT "'constant'"
%token TRUE "'true'" FALSE "'false'" LOC "'loc'" ARROW "'->'" NL "newline"
%token <tok> VALUE "value name" GLOBAL "function name" INTEGER "integer"
%token <tok> FLOAT "float" STRING "string" IDENT "identifier"
%token <tok> DTYPE "element type"

%type <type> type
%type <attrs> attr_dict opt_attrs
%type <attr> attr attr_value
%type <count> opt_operands operands types opt_types lhs
%type <tok> number

%%

module:
    opt_nl funcs
  ;

opt_nl:
    %empty
  | NL
  ;

funcs:
    %empty
  | funcs func opt_nl
  | funcs error '}' opt_nl    { raf_build_end_func(p, NULL); }
  ;

func:
    func_head '{' NL body '}'            { raf_build_end_func(p, NULL); }
  | func_head attr_dict '{' NL body '}'  { raf_build_end_func(p, &$2); }
  ;

func_head:
    FUNC GLOBAL { raf_build_begin_func(p, $2); }
    '(' opt_params ')' opt_nl ARROW result_sig
  ;

opt_params:
    %empty
  | params
  ;

params:
    param
  | params ',' param
  ;

param:
    VALUE ':' type opt_attrs   { raf_build_param(p, $1, $3, &$4); }
  ;

result_sig:
    type                         { raf_build_result(p, $1, NULL);
                                   raf_build_results_done(p); }
  | '(' ')'                      { raf_build_results_done(p); }
  | '(' result_list ')'          { raf_build_results_done(p); }
  ;

result_list:
    result
  | result_list ',' result
  ;

result:
    type opt_attrs               { raf_build_result(p, $1, &$2); }
  ;

body:
    %empty
  | body stmt_line
  ;

stmt_line:
    stmt NL
  | stmt loc_suffix NL
  | error NL                     { raf_build_poison_stmt(p); }
  ;

loc_suffix:
    LOC '(' STRING ':' INTEGER ':' INTEGER ')'
                                 { raf_build_stmt_loc(p, $3, $5, $7); }
  ;

stmt:
    lhs '=' IDENT '(' opt_operands ')' opt_attrs opt_types
                                 { raf_build_op(p, $3, LOC(@1), &$7); }
  | lhs '=' CONSTANT lit opt_attrs ':' type
                                 { raf_build_constant(p, LOC(@1), LOC(@4),
                                                      &$5, $7); }
  | lhs '=' CALL GLOBAL '(' opt_operands ')' opt_attrs opt_types
                                 { raf_build_call(p, $4, LOC(@1), &$8); }
  | RETURN opt_operands          { raf_build_return(p, LOC(@1)); }
  ;

lhs:
    VALUE                        { raf_build_lhs(p, $1); $$ = 1; }
  | lhs ',' VALUE                { raf_build_lhs(p, $3); $$ = $1 + 1; }
  ;

opt_operands:
    %empty                       { $$ = 0; }
  | operands
  ;

operands:
    VALUE                        { raf_build_operand(p, $1); $$ = 1; }
  | operands ',' VALUE           { raf_build_operand(p, $3); $$ = $1 + 1; }
  ;

opt_types:
    %empty                       { $$ = 0; }
  | ':' types                    { $$ = $2; }
  ;

types:
    type                         { raf_build_stmt_type(p, $1); $$ = 1; }
  | types ',' type               { raf_build_stmt_type(p, $3); $$ = $1 + 1; }
  ;

type:
    DTYPE '[' { p->dims.n = 0; } opt_dims ']'
                                 { $$ = raf_build_type(p, $1); }
  ;

opt_dims:
    %empty
  | dims
  ;

dims:
    INTEGER                      { raf_build_dim(p, $1); }
  | dims ',' INTEGER             { raf_build_dim(p, $3); }
  ;

opt_attrs:
    %empty                       { $$ = (raf_attrs){NULL, 0}; }
  | attr_dict
  ;

attr_dict:
    '{' { raf_build_attrs_begin(p); } attr_list '}'
                                 { $$ = raf_build_attrs_end(p); }
  | '{' '}'                      { $$ = (raf_attrs){NULL, 0}; }
  ;

attr_list:
    attr                         { raf_build_attr_push(p, &$1); }
  | attr_list ',' attr           { raf_build_attr_push(p, &$3); }
  ;

attr:
    IDENT                        { $$ = raf_build_flag(p, $1); }
  | IDENT '=' attr_value         { $$ = $3; raf_build_attr_name(p, &$$, $1); }
  ;

attr_value:
    INTEGER                      { $$ = raf_build_int_attr(p, $1); }
  | FLOAT                        { $$ = raf_build_float_attr(p, $1); }
  | STRING                       { $$ = raf_build_string_attr(p, $1); }
  | TRUE                         { $$ = raf_build_bool_attr(true); }
  | FALSE                        { $$ = raf_build_bool_attr(false); }
  | DTYPE                        { $$ = raf_build_dtype_attr($1); }
  | VALUE                        { $$ = raf_build_value_attr(p, $1); }
  | GLOBAL                       { $$ = raf_build_func_attr(p, $1); }
  | '[' ']'                      { p->nums.n = 0; $$ = raf_build_list_attr(p); }
  | '[' { p->nums.n = 0; } number_list ']'
                                 { $$ = raf_build_list_attr(p); }
  ;

number_list:
    number                       { RAF_BUF_PUSH(&p->nums, $1); }
  | number_list ',' number       { RAF_BUF_PUSH(&p->nums, $3); }
  ;

number:
    INTEGER
  | FLOAT
  ;

lit:
    number                       { raf_build_lit_scalar(p, $1); }
  | TRUE                         { raf_build_lit_scalar(p, (raf_span){"1", 1, LOC(@1)}); }
  | FALSE                        { raf_build_lit_scalar(p, (raf_span){"0", 1, LOC(@1)}); }
  | '[' { raf_build_lit_open(p, LOC(@1)); } lit_items ']'
                                 { raf_build_lit_close(p, LOC(@1)); }
  | '[' ']'                      { raf_build_lit_open(p, LOC(@1));
                                   raf_build_lit_close(p, LOC(@1)); }
  ;

lit_items:
    lit
  | lit_items ',' lit
  ;

%%

/* A token kind in words, as what is expected. */
static const char *expected_name(yysymbol_kind_t k, bool op_context) {
  switch (k) {
  case YYSYMBOL_YYEOF: return "the end of the file";
  case YYSYMBOL_NL: return "the end of the line";
  case YYSYMBOL_VALUE: return "a value name";
  case YYSYMBOL_GLOBAL: return "a function name";
  case YYSYMBOL_INTEGER: return "an integer";
  case YYSYMBOL_FLOAT: return "a float";
  case YYSYMBOL_STRING: return "a string";
  case YYSYMBOL_IDENT: return op_context ? "an operator" : "a name";
  case YYSYMBOL_DTYPE: return "a type";
  case YYSYMBOL_YYerror: return "an attribute value";
  default: return yysymbol_name(k); /* 'func', '->', '(' ... */
  }
}

/* Whether k is the character token c. */
static bool is_char(yysymbol_kind_t k, char c) {
  const char *name = yysymbol_name(k);
  return name[0] == '\'' && name[1] == c && name[2] == '\'';
}

/* Appends to buf as snprintf does, never past its end. */
static void add(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t size, size_t *len, const char *fmt, ...) {
  va_list ap;
  if (*len >= size)
    return;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *len, size - *len, fmt, ap);
  va_end(ap);
  *len += k > 0 ? (size_t)k : 0;
}

static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner,
                                 raf_parser *p) {
  (void)scanner;
  enum { MAX_LISTED = 5 };
  yysymbol_kind_t exp[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
  /* Where any attribute value may stand, say so rather than list them. */
  int values = 0;
  for (int i = 0; i < n; i++)
    values += exp[i] == YYSYMBOL_INTEGER || exp[i] == YYSYMBOL_STRING ||
              exp[i] == YYSYMBOL_VALUE || exp[i] == YYSYMBOL_DTYPE;
  if (values == 4) {
    exp[0] = YYSYMBOL_YYerror; /* stands for "an attribute value" */
    n = 1;
  }
  yysymbol_kind_t got = yypcontext_token(ctx);
  const YYLTYPE *l = yypcontext_location(ctx);
  char found[96], msg[512];
  size_t len = 0;
  bool at_end = got == YYSYMBOL_NL || got == YYSYMBOL_YYEOF;
  if (at_end)
    snprintf(found, sizeof found, "%s", expected_name(got, false));
  else
    snprintf(found, sizeof found, "'%.*s'",
             p->tok_len < 64 ? p->tok_len : 64, p->tok_text);
  /* The bracket the error is inside: a bracket just read opens nothing
   * yet, and one just closed is what the error is in. */
  int inner = p->nopen - 1;
  if (is_char(got, '(') || is_char(got, '[') || is_char(got, '{'))
    inner--;
  const char *in = NULL;
  char close = 0;
  if (is_char(got, ')') || is_char(got, ']') || is_char(got, '}'))
    in = p->closed_what;
  else if (inner >= 0 && inner < (int)sizeof p->open) {
    in = p->open_what[inner];
    close = p->open[inner] == '(' ? ')' : p->open[inner] == '[' ? ']' : '}';
  }
  bool expects_close = false, op_context = false;
  for (int i = 0; i < n && i < MAX_LISTED; i++) {
    expects_close |= close && is_char(exp[i], close);
    op_context |= exp[i] == YYSYMBOL_CALL;
  }
  /* 'func' and 'return' start lines: a bracket open before them was left
   * open on an earlier line. */
  bool line_ended = at_end || got == YYSYMBOL_FUNC || got == YYSYMBOL_RETURN;
  if (n > 0 && n <= MAX_LISTED && expects_close && line_ended) {
    add(msg, sizeof msg, &len, "expected '%c' to close %s", close, in);
  } else if (n > 0 && n <= MAX_LISTED) {
    add(msg, sizeof msg, &len, "expected ");
    for (int i = 0; i < n; i++)
      add(msg, sizeof msg, &len, "%s%s",
          i == 0 ? "" : i == n - 1 ? " or " : ", ",
          expected_name(exp[i], op_context));
    if (in)
      add(msg, sizeof msg, &len, " in %s", in);
    add(msg, sizeof msg, &len, ", not %s", found);
  } else {
    add(msg, sizeof msg, &len, "unexpected %s", found);
    if (in)
      add(msg, sizeof msg, &len, " in %s", in);
  }
  /* A line that ended too soon is reported where it ended, not where the
   * next token is (after the comments and lines that an open bracket lets
   * a newline run into). */
  raf_loc at = raf_loc_of(p, l->first_line, l->first_column);
  if (line_ended && p->tok_end.line)
    at = at_end ? p->tok_end : p->prev_end;
  raf_parse_error(p, at, "%s", msg);
  return 0;
}
