/* parse.h: what the module parser (parse.c) and the instruction parser
 * (parse_instr.c) share: the token stream, the names of the function
 * being parsed, and the helpers that turn operands into slots. Internal
 * to the interpreter.
 */
#ifndef RAF_PTX_PARSE_H
#define RAF_PTX_PARSE_H

#include "ptx_internal.h"

enum tok_kind { T_EOF, T_IDENT, T_INT, T_FLOAT, T_STRING, T_PUNCT };

typedef struct token {
  enum tok_kind kind;
  const char *start;
  int len, line;
  uint64_t ival;  /* T_INT; T_FLOAT: bits when hex */
  double fval;    /* T_FLOAT, decimal */
  int float_bits; /* T_FLOAT: 32 (0f), 64 (0d) or 0 (decimal) */
} token;

/* A name in a function body: a register (a range %r<N> is one entry), a
 * .local or .param variable, or a .shared one (an address constant). */
typedef struct name {
  const char *start;
  int len;
  int count; /* a range's size, 0 for one name */
  int slot;  /* register: first slot; variables: their constant slot;
                labels: their instruction */
  uint8_t type;
  int depth;
} name;

/* A use of a label or a callee, resolved once all are known. */
typedef struct fixup {
  int insn; /* branches: index in fn->code; calls: function << 20 | insn */
  const char *start;
  int len, line;
} fixup;

typedef struct parser {
  const char *p;
  int line;
  token tok;
  ptx_module *m;
  const ptx_device *dev;
  char *log;
  size_t log_size;
  ptx_status status;
  /* the function being parsed */
  ptx_function *fn;
  int fn_index;
  name *names;
  int nnames, names_cap, depth;
  name *labels;
  int nlabels, labels_cap;
  fixup *branches, *calls;
  int nbranches, branches_cap, ncalls, calls_cap;
  int sink; /* the slot of `_` */
} parser;

void ptxp_error_at(parser *ps, int line, ptx_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define PTXP_ERROR(ps, ...)                                                 \
  ptxp_error_at(ps, (ps)->tok.line, PTX_INVALID_PTX, __VA_ARGS__)
void *ptxp_grow(void *p, int *cap, int need, size_t elem);
/* A new element at the end of arr (NULL, with an error, when out of
 * memory). */
#define PTXP_PUSH(ps, arr, n, cap)                                          \
  ((arr) = ptxp_grow((arr), &(cap), (n) + 1, sizeof *(arr)),                \
   (arr) ? &(arr)[(n)++]                                                    \
         : (ptxp_error_at(ps, (ps)->tok.line, PTX_OUT_OF_MEMORY,            \
                          "out of memory"),                                 \
            (void *)NULL))

bool ptxp_failed(const parser *ps);
char *ptxp_tok_dup(const parser *ps); /* the caller frees it */
void ptxp_skip_line(parser *ps);
void ptxp_next(parser *ps);
bool ptxp_is_punct(const parser *ps, char c);
bool ptxp_is_word(const parser *ps, const char *w);
bool ptxp_accept(parser *ps, char c);
void ptxp_expect(parser *ps, char c);
uint64_t ptxp_expect_int(parser *ps);
int ptxp_type_of(const char *s, int len);
const char *ptxp_op_name(int op);
int ptxp_const_slot(parser *ps, uint64_t value);
uint64_t ptxp_literal_bits(const token *t, int type);
name *ptxp_find_name(parser *ps, const char *s, int len, int *index);
ptx_var *ptxp_find_var(ptx_module *m, const char *s, int len);
int ptxp_value_slot(parser *ps, const char *s, int len);
int ptxp_var_slot(parser *ps, const ptx_var *v);
void ptxp_instruction(parser *ps);

#endif
