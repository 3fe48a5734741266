/* parse_instr.c: one PTX instruction, from its tokens to a ptx_insn.
 *
 * An instruction is `[@[!]%p] name.modifier... operands;`. The name picks
 * the opcode (ops.def); each modifier is a type, a rounding, a state space
 * or a word of the opcode's own (a comparison, an atomic operation, a
 * shuffle mode), and an unknown one is an error, as in ptxas. Operands
 * become slots (parse.c's value_slot and const_slot); an immediate takes
 * the type of its position, so `add.f32 %f1, %f2, 1` adds 1.0.
 */
#include "parse.h"

#include <string.h>

enum { O_SLOT, O_IMM, O_ADDR, O_VEC, O_SYM };

typedef struct operand {
  int kind;
  int slot, slot2; /* slot2: the second of a `%p|%q` pair, or -1 */
  bool neg;        /* !%p */
  int64_t offset;  /* O_ADDR */
  token tok;       /* O_IMM, O_SYM */
  bool imm_neg;
  int nvec, vec[4];
} operand;

static const char *const cmp_names[] = {
    "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
    "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
static const char *const atom_names[] = {"add", "min", "max", "exch", "cas",
                                         "inc", "dec", "and", "or", "xor"};
static const char *const shfl_names[] = {"up", "down", "bfly", "idx"};
static const char *const vote_names[] = {"all", "any", "uni", "ballot"};
static const char *const testp_names[] = {"finite", "infinite", "number",
                                          "notanumber", "normal",
                                          "subnormal"};
/* Words that change nothing the interpreter computes: caching, memory
 * order and scope (it runs one thread at a time), .uni, .sync, .full. */
static const char *const noise[] = {
    "sync", "aligned", "uni", "volatile", "relaxed", "acquire", "release",
    "acq_rel", "weak", "sc", "cta", "gl", "gpu", "sys", "cluster", "nc", "ca",
    "cg", "cs", "lu", "cv", "wb", "wt", "full", "mmio", "noftz", "L1",
    "L2", "level", "evict_normal", "evict_first", "evict_last",
    "no_allocate", "cache_hint", "unified", NULL};

static int word_index(const char *const *table, int n, const char *w,
                      int len) {
  for (int i = 0; i < n; i++)
    if ((int)strlen(table[i]) == len && memcmp(table[i], w, (size_t)len) == 0)
      return i;
  return -1;
}
#define WORD(table, w, len)                                                 \
  word_index(table, (int)(sizeof table / sizeof table[0]), w, len)

static bool eq(const char *w, int len, const char *s) {
  return (int)strlen(s) == len && memcmp(w, s, (size_t)len) == 0;
}

static int space_of(const char *w, int len) {
  const char *colon = memchr(w, ':', (size_t)len);
  int base = colon ? (int)(colon - w) : len;
  if (eq(w, base, "global")) return PTX_GLOBAL;
  if (eq(w, base, "shared")) return PTX_SHARED;
  if (eq(w, base, "local")) return PTX_LOCAL;
  if (eq(w, base, "param")) return PTX_PARAM;
  if (eq(w, base, "const")) return PTX_CONST;
  return -1;
}

/* One modifier of `in`; false when unknown. */
static bool modifier(ptx_insn *in, const char *w, int len) {
  int i, op = in->op;
  bool compares = op == PTX_OP_SETP || op == PTX_OP_SET;
  if ((i = ptxp_type_of(w, len)) != PTX_T_NONE) {
    if (!in->type)
      in->type = (uint8_t)i;
    else
      in->type2 = (uint8_t)i;
    return true;
  }
  if (compares && (i = WORD(cmp_names, w, len)) >= 0) {
    in->sub = (uint8_t)i;
    return true;
  }
  if (compares && (eq(w, len, "and") || eq(w, len, "or") ||
                   eq(w, len, "xor"))) {
    in->boolop = eq(w, len, "and") ? PTX_BOOL_AND
                 : eq(w, len, "or") ? PTX_BOOL_OR : PTX_BOOL_XOR;
    return true;
  }
  if ((op == PTX_OP_ATOM || op == PTX_OP_RED) &&
      (i = WORD(atom_names, w, len)) >= 0) {
    in->sub = (uint8_t)i;
    return true;
  }
  if (op == PTX_OP_SHFL && (i = WORD(shfl_names, w, len)) >= 0) {
    in->sub = (uint8_t)i;
    return true;
  }
  if (op == PTX_OP_VOTE && (i = WORD(vote_names, w, len)) >= 0) {
    in->sub = (uint8_t)i;
    return true;
  }
  if (op == PTX_OP_TESTP && (i = WORD(testp_names, w, len)) >= 0) {
    in->sub = (uint8_t)i;
    return true;
  }
  if ((op == PTX_OP_BAR || op == PTX_OP_BARRIER) && eq(w, len, "warp")) {
    in->op = PTX_OP_BARWARP;
    return true;
  }
  if ((op == PTX_OP_BAR || op == PTX_OP_BARRIER) && eq(w, len, "red")) {
    in->flags |= PTX_F_RED;
    return true;
  }
  if ((in->flags & PTX_F_RED) &&
      (eq(w, len, "popc") || eq(w, len, "and") || eq(w, len, "or"))) {
    in->sub = eq(w, len, "popc") ? PTX_BARRED_POPC
              : eq(w, len, "and") ? PTX_BARRED_AND : PTX_BARRED_OR;
    return true;
  }
  if ((op == PTX_OP_BAR || op == PTX_OP_BARRIER) && eq(w, len, "arrive")) {
    in->flags |= PTX_F_ARRIVE;
    return true;
  }
  static const char *const rounds[] = {"rn", "rz", "rm", "rp", "rna"};
  static const char *const int_rounds[] = {"rni", "rzi", "rmi", "rpi"};
  if ((i = WORD(rounds, w, len)) >= 0) {
    in->round = (uint8_t)i;
    return true;
  }
  if ((i = WORD(int_rounds, w, len)) >= 0) {
    in->round = (uint8_t)i;
    in->flags |= PTX_F_INTROUND;
    return true;
  }
  if ((i = space_of(w, len)) >= 0) {
    in->space = (uint8_t)i;
    return true;
  }
  /* A 0 flag is accepted and changes nothing computed here: .approx (the
   * functions are libm's, within its bounds either way), .lo (mul's
   * default), .abs (xorsign's), shf's .r and .wrap (the defaults). */
  static const struct {
    const char *w;
    uint32_t flag;
  } flags[] = {{"ftz", PTX_F_FTZ},       {"sat", PTX_F_SAT},
               {"approx", 0},            {"NaN", PTX_F_NAN},
               {"hi", PTX_F_HI},         {"lo", 0},
               {"wide", PTX_F_WIDE},     {"cc", PTX_F_CC},
               {"to", PTX_F_TO},         {"shiftamt", PTX_F_SHIFTAMT},
               {"l", PTX_F_LEFT},        {"r", 0},
               {"wrap", 0},              {"clamp", PTX_F_CLAMP},
               {"relu", PTX_F_RELU},     {"xorsign", PTX_F_XORSIGN},
               {"abs", 0}};
  for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
    if (eq(w, len, flags[k].w)) {
      in->flags |= flags[k].flag;
      return true;
    }
  if (eq(w, len, "v2") || eq(w, len, "v4")) {
    in->vec = (uint8_t)(w[1] - '0');
    return true;
  }
  if (eq(w, len, "generic")) {
    in->space = PTX_GENERIC;
    return true;
  }
  for (int k = 0; noise[k]; k++) {
    int n = (int)strlen(noise[k]);
    if (len >= n && memcmp(w, noise[k], (size_t)n) == 0 &&
        (len == n || w[n] == ':'))
      return true;
  }
  return false;
}

static void parse_operand(parser *ps, operand *o) {
  memset(o, 0, sizeof *o);
  o->slot2 = -1;
  if (ptxp_accept(ps, '[')) {
    o->kind = O_ADDR;
    if (ps->tok.kind == T_IDENT) {
      o->slot = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
      ptxp_next(ps);
      if (ptxp_accept(ps, '+'))
        o->offset = (int64_t)ptxp_expect_int(ps);
      else if (ptxp_is_punct(ps, '-'))
        o->offset = (int64_t)ptxp_expect_int(ps);
    } else { /* an absolute address */
      o->slot = ptxp_const_slot(ps, 0);
      o->offset = (int64_t)ptxp_expect_int(ps);
    }
    ptxp_expect(ps, ']');
  } else if (ptxp_accept(ps, '{')) {
    o->kind = O_VEC;
    while (!ptxp_failed(ps) && !ptxp_accept(ps, '}')) {
      if (o->nvec == 4) {
        PTXP_ERROR(ps, "a vector of more than 4 elements");
        return;
      }
      if (ptxp_is_word(ps, "_"))
        o->vec[o->nvec++] = ps->sink;
      else if (ps->tok.kind == T_INT || ps->tok.kind == T_FLOAT)
        o->vec[o->nvec++] = ptxp_const_slot(ps, ps->tok.ival); /* raw bits */
      else
        o->vec[o->nvec++] = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
      ptxp_next(ps);
      if (!ptxp_is_punct(ps, '}'))
        ptxp_expect(ps, ',');
    }
  } else if (ps->tok.kind == T_INT || ps->tok.kind == T_FLOAT ||
             ptxp_is_punct(ps, '-')) {
    o->kind = O_IMM;
    o->imm_neg = ptxp_accept(ps, '-');
    if (ps->tok.kind != T_INT && ps->tok.kind != T_FLOAT) {
      PTXP_ERROR(ps, "syntax error: expected a number");
      return;
    }
    o->tok = ps->tok;
    ptxp_next(ps);
  } else if (ptxp_accept(ps, '!')) {
    o->kind = O_SLOT;
    o->neg = true;
    o->slot = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
    ptxp_next(ps);
  } else if (ps->tok.kind == T_IDENT) {
    int k;
    if (ptxp_find_name(ps, ps->tok.start, ps->tok.len, &k) ||
        ps->tok.start[0] == '%' || ptxp_find_var(ps->m, ps->tok.start, ps->tok.len)) {
      o->kind = O_SLOT;
      o->slot = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
    } else {
      o->kind = O_SYM; /* a label, a function or a parameter */
      o->tok = ps->tok;
    }
    ptxp_next(ps);
    if (ptxp_accept(ps, '|')) {
      o->slot2 = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
      ptxp_next(ps);
    }
  } else {
    PTXP_ERROR(ps, "syntax error at '%.*s'", ps->tok.len, ps->tok.start);
  }
}

/* The type an immediate takes at source position `pos`. */
static int src_type(const ptx_insn *in, int pos) {
  switch (in->op) {
  case PTX_OP_CVT: case PTX_OP_SET: return in->type2;
  case PTX_OP_SLCT: return pos == 2 ? in->type2 : in->type;
  case PTX_OP_SELP: case PTX_OP_SETP:
    return pos == 2 ? PTX_T_PRED : in->type;
  case PTX_OP_SHL: case PTX_OP_SHR: return pos == 1 ? PTX_T_U32 : in->type;
  case PTX_OP_BFE: return pos ? PTX_T_U32 : in->type;
  case PTX_OP_BFI: return pos >= 2 ? PTX_T_U32 : in->type;
  case PTX_OP_SHF: case PTX_OP_SHFL: case PTX_OP_PRMT: case PTX_OP_BAR:
  case PTX_OP_BARRIER: case PTX_OP_BARWARP: case PTX_OP_VOTE:
    return PTX_T_U32;
  default: return in->type;
  }
}

static int operand_slot(parser *ps, const ptx_insn *in, const operand *o,
                        int pos) {
  if (o->kind == O_SLOT)
    return o->slot;
  if (o->kind == O_IMM) {
    token t = o->tok;
    int type = src_type(in, pos);
    uint64_t bits;
    if (o->imm_neg && t.kind == T_INT) {
      t.ival = 0 - t.ival; /* unsigned: -INT64_MIN too */
      bits = ptxp_literal_bits(&t, type);
    } else if (o->imm_neg && !t.float_bits) {
      t.fval = -t.fval;
      bits = ptxp_literal_bits(&t, type);
    } else {
      bits = ptxp_literal_bits(&t, type);
      if (o->imm_neg)
        bits ^= (uint64_t)1 << (ptx_type_bits[type] - 1);
    }
    if (ptx_type_bits[type] < 64 && ptx_type_bits[type] > 1)
      bits &= ((uint64_t)1 << ptx_type_bits[type]) - 1;
    return ptxp_const_slot(ps, bits);
  }
  if (o->kind == O_SYM)
    return ptxp_value_slot(ps, o->tok.start, o->tok.len);
  PTXP_ERROR(ps, "unexpected operand");
  return 0;
}

static bool has_dst(int op, const ptx_insn *in) {
  switch (op) {
  case PTX_OP_BAR: case PTX_OP_BARRIER:
    return in->flags & PTX_F_RED;
  case PTX_OP_ST: case PTX_OP_RED: case PTX_OP_BRA: case PTX_OP_CALL:
  case PTX_OP_RET: case PTX_OP_EXIT: case PTX_OP_TRAP:
  case PTX_OP_MEMBAR: case PTX_OP_FENCE:
  case PTX_OP_PREFETCH: case PTX_OP_PREFETCHU: case PTX_OP_NANOSLEEP:
  case PTX_OP_PMEVENT: case PTX_OP_BARWARP:
    return false;
  default: return true;
  }
}

/* call[.uni] [(ret),] fname [, (args)]; */
static void parse_call(parser *ps, ptx_insn *in) {
  in->dst[0] = PTX_NO_SLOT;
  ps->fn->calls = true;
  if (ptxp_accept(ps, '(')) {
    in->dst[0] = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
    in->ndst = 1;
    ptxp_next(ps);
    ptxp_expect(ps, ')');
    ptxp_expect(ps, ',');
  }
  if (ps->tok.kind != T_IDENT) {
    PTXP_ERROR(ps, "syntax error: expected a function name");
    return;
  }
  fixup *f = PTXP_PUSH(ps, ps->calls, ps->ncalls, ps->calls_cap);
  if (f)
    *f = (fixup){ps->fn_index << 20 | ps->fn->ncode, ps->tok.start,
                 ps->tok.len, ps->tok.line};
  ptxp_next(ps);
  if (ptxp_accept(ps, ',')) {
    ptxp_expect(ps, '(');
    while (!ptxp_failed(ps) && !ptxp_accept(ps, ')')) {
      if (in->nsrc == PTX_MAX_SRC) {
        PTXP_ERROR(ps, "a call with more than %d arguments", PTX_MAX_SRC);
        return;
      }
      in->src[in->nsrc++] = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
      ptxp_next(ps);
      if (!ptxp_is_punct(ps, ')'))
        ptxp_expect(ps, ',');
    }
  }
  if (ptxp_accept(ps, ','))
    PTXP_ERROR(ps, "indirect calls (a prototype) are not supported");
}

void ptxp_instruction(parser *ps) {
  ptx_insn in;
  memset(&in, 0, sizeof in);
  in.guard = PTX_NO_SLOT;
  in.round = PTX_RNONE;
  in.line = (uint32_t)ps->tok.line;
  in.vec = 1;
  for (int i = 0; i < 4; i++)
    in.dst[i] = PTX_NO_SLOT;
  if (ptxp_accept(ps, '@')) {
    in.guard_neg = ptxp_accept(ps, '!');
    in.guard = ptxp_value_slot(ps, ps->tok.start, ps->tok.len);
    ptxp_next(ps);
  }
  if (ps->tok.kind != T_IDENT) {
    PTXP_ERROR(ps, "syntax error at '%.*s'", ps->tok.len ? ps->tok.len : 3,
               ps->tok.len ? ps->tok.start : "EOF");
    return;
  }
  const char *w = ps->tok.start, *end = w + ps->tok.len;
  const char *dot = memchr(w, '.', (size_t)(end - w));
  int base = dot ? (int)(dot - w) : (int)(end - w);
  int op = -1;
  for (int i = 0; i < PTX_OP_COUNT; i++)
    if (eq(w, base, ptxp_op_name(i)))
      op = i;
  if (op < 0) {
    PTXP_ERROR(ps, "Unknown instruction '%.*s'", ps->tok.len, w);
    return;
  }
  in.op = (uint16_t)op;
  for (const char *m = dot; m && m < end;) {
    const char *s = m + 1;
    const char *e = s;
    while (e < end && (*e != '.' || (e > s && e[-1] == ':')))
      e++;
    /* L2::cache_hint and shared::cta are one modifier */
    if (!modifier(&in, s, (int)(e - s))) {
      PTXP_ERROR(ps, "Unknown modifier '.%.*s' of '%.*s'", (int)(e - s), s,
                 ps->tok.len, w);
      return;
    }
    m = e < end ? e : NULL;
  }
  ptxp_next(ps);
  if (in.op == PTX_OP_CALL) {
    parse_call(ps, &in);
  } else {
    operand ops[8];
    int n = 0;
    while (!ptxp_failed(ps) && !ptxp_is_punct(ps, ';') && ps->tok.kind != T_EOF) {
      if (n == 8) {
        PTXP_ERROR(ps, "too many operands");
        return;
      }
      parse_operand(ps, &ops[n++]);
      if (!ptxp_is_punct(ps, ';'))
        ptxp_expect(ps, ',');
    }
    if (ptxp_failed(ps))
      return;
    int first = 0;
    if (in.op == PTX_OP_BRA) {
      if (n != 1 || ops[0].kind != O_SYM) {
        PTXP_ERROR(ps, "bra needs a label");
        return;
      }
      fixup *f = PTXP_PUSH(ps, ps->branches, ps->nbranches, ps->branches_cap);
      if (f)
        *f = (fixup){ps->fn->ncode, ops[0].tok.start, ops[0].tok.len,
                     ops[0].tok.line};
      n = 0;
    } else if (in.op == PTX_OP_MOV && n == 2 && ops[0].kind == O_VEC) {
      in.op = PTX_OP_UNPACK;
      in.vec = (uint8_t)ops[0].nvec;
      memcpy(in.dst, ops[0].vec, sizeof in.dst);
      in.ndst = (uint8_t)ops[0].nvec;
      first = 1;
    } else if (in.op == PTX_OP_MOV && n == 2 && ops[1].kind == O_VEC) {
      in.op = PTX_OP_PACK;
      in.vec = (uint8_t)ops[1].nvec;
      in.dst[0] = operand_slot(ps, &in, &ops[0], -1);
      in.ndst = 1;
      memcpy(in.src, ops[1].vec, sizeof ops[1].vec);
      in.nsrc = (uint8_t)ops[1].nvec;
      n = 0;
    } else if (has_dst(in.op, &in)) {
      if (n == 0) {
        PTXP_ERROR(ps, "'%s' needs a destination", ptxp_op_name(in.op));
        return;
      }
      if (ops[0].kind == O_VEC) {
        memcpy(in.dst, ops[0].vec, sizeof in.dst);
        in.ndst = (uint8_t)ops[0].nvec;
        if (ops[0].nvec != in.vec) {
          PTXP_ERROR(ps, "a vector of %d for .v%d", ops[0].nvec, in.vec);
          return;
        }
      } else if (ops[0].kind == O_SLOT) {
        in.dst[0] = ops[0].slot;
        in.dst[1] = ops[0].slot2;
        in.ndst = ops[0].slot2 >= 0 ? 2 : 1;
      } else {
        PTXP_ERROR(ps, "the destination of '%s' is not a register",
                   ptxp_op_name(in.op));
        return;
      }
      first = 1;
    }
    for (int i = first; i < n && !ptxp_failed(ps); i++) {
      operand *o = &ops[i];
      if (o->kind == O_ADDR) {
        if (in.nsrc != 0) {
          PTXP_ERROR(ps, "an address that is not the first source");
          return;
        }
        in.src[in.nsrc++] = o->slot;
        in.offset = o->offset;
      } else if (o->kind == O_VEC) {
        if (o->nvec != in.vec || in.nsrc + o->nvec > PTX_MAX_SRC) {
          PTXP_ERROR(ps, "a vector of %d for .v%d", o->nvec, in.vec);
          return;
        }
        for (int k = 0; k < o->nvec; k++)
          in.src[in.nsrc++] = o->vec[k];
      } else {
        if (in.nsrc == PTX_MAX_SRC) {
          PTXP_ERROR(ps, "too many operands");
          return;
        }
        if (o->neg)
          in.flags |= PTX_F_NEG_C;
        in.src[in.nsrc] = operand_slot(ps, &in, o, in.nsrc);
        in.nsrc++;
      }
    }
  }
  ptxp_expect(ps, ';');
  if (ptxp_failed(ps))
    return;
  ptx_insn *slot = PTXP_PUSH(ps, ps->fn->code, ps->fn->ncode, ps->fn->code_cap);
  if (slot)
    *slot = in;
}
