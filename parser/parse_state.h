/* parse_state.h: the state shared by the Flex lexer and the Bison parser.
 *
 * The parser is reentrant: everything it needs lives in one raf_parser, so
 * several modules can be parsed at once on different threads. Lists being
 * parsed (statement results, operands, types, dims, numbers) accumulate in
 * growable buffers here and the grammar's rules reduce to their lengths.
 */
#ifndef RAF_PARSE_STATE_H
#define RAF_PARSE_STATE_H

#include "ir/ir.h"

typedef struct raf_span {
  const char *s;
  int len;
  raf_loc loc;
} raf_span;

/* A growable buffer of fixed-size items, malloc'd. */
typedef struct raf_buf {
  void *v;
  int n, cap;
} raf_buf;

typedef struct raf_pending_call {
  raf_stmt *stmt;
  raf_span callee;
} raf_pending_call;

typedef struct raf_parser {
  raf_ctx *ctx;
  raf_module *m;
  const char *file;
  void *scanner;
  int depth;     /* open ( and [ : newlines inside them are blanks */
  bool after_nl; /* last token was a newline: collapse runs of them */
  uint32_t line; /* current line */

  raf_func *func;      /* function being parsed; NULL after a bad header */
  raf_strmap forward;  /* value name -> placeholder, for uses before defs */
  raf_buf placeholders; /* raf_value* made for forward uses */

  raf_buf lhs;      /* raf_span: result names of the statement */
  raf_buf operands; /* raf_value* */
  raf_buf operand_locs; /* raf_loc of each operand, for diagnostics */
  raf_buf types;    /* raf_type* */
  raf_buf dims;     /* int64_t */
  raf_buf nums;     /* raf_span: numbers of a list attribute */
  raf_buf attrs;    /* raf_attr of the dict being parsed */
  raf_buf results;  /* raf_result_sig of the signature */

  /* Dense constant literals: flattened elements and per-depth lengths. */
  raf_buf lit;          /* raf_span */
  int lit_depth, lit_rank, lit_error;
  /* The last string read was reported (unterminated, a bad escape): a
   * dialect name is not looked up in it. */
  bool bad_string;
  int64_t lit_dims[RAF_MAX_RANK + 1];
  int64_t lit_count[RAF_MAX_RANK + 1];

  /* For syntax errors in the project's words: the text of the last token
   * read (the parser's lookahead when it finds an error), the kinds of the
   * two tokens before it, and the brackets open on the line with what each
   * opens ("the operand list"). */
  const char *tok_text;
  int tok_len;
  int prev_tok, prev2_tok;
  int nopen;
  char open[16];
  const char *open_what[16];
  const char *closed_what; /* what the last closing bracket closed */
  bool brackets_ended;     /* a newline was read: the next token clears */
  raf_loc tok_end, prev_end; /* just after the last token, the one before */

  raf_buf calls;    /* raf_pending_call */
  int nfuncrefs;    /* @function attributes waiting to be resolved */
  raf_loc stmt_loc; /* explicit loc(...) of the statement, if any */
  bool has_stmt_loc;
} raf_parser;

bool raf_buf_push(raf_buf *b, const void *item, size_t size);
#define RAF_BUF_AT(b, T, i) (((T *)(b)->v)[i])
#define RAF_BUF_PUSH(b, x) raf_buf_push((b), &(x), sizeof(x))

void raf_parse_error(raf_parser *p, raf_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
