/* parse.c: PTX text to the interpreter's records (ptx_internal.h), as the
 * driver's JIT compiles a module at cuModuleLoadDataEx.
 *
 * One pass over the tokens: directives declare the module's variables
 * and functions, a function body's statements become instructions whose
 * operands are all register slots (immediates, symbol addresses and
 * special registers get constant slots). Labels and callees may be used
 * before they are defined, so their uses are patched at the end of the
 * function and of the module; what stays unresolved is an error.
 *
 * Errors go to the JIT log as ptxas writes them ("ptxas application ptx
 * input, line N; error   : ..."), and loading stops at the first one.
 */
#include "parse.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const unsigned char ptx_type_bits[PTX_T_COUNT] = {
    0,
#define X(e, name, bits, kind) bits,
    PTX_TYPES(X)
#undef X
};
const char ptx_type_kind[PTX_T_COUNT] = {
    0,
#define X(e, name, bits, kind) kind,
    PTX_TYPES(X)
#undef X
};
const char *const ptx_type_names[PTX_T_COUNT] = {
    "",
#define X(e, name, bits, kind) name,
    PTX_TYPES(X)
#undef X
};

static const char *const op_names[PTX_OP_COUNT] = {
#define OP(e, name) name,
#include "ops.def"
#undef OP
};

const char *ptxp_op_name(int op) {
  return op < PTX_OP_COUNT ? op_names[op] : "mov";
}

static const char *const sreg_names[PTX_SR_COUNT] = {
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
    "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y",
    "%nctaid.z", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
    "%gridid", "%lanemask_eq", "%lanemask_lt", "%lanemask_le",
    "%lanemask_gt", "%lanemask_ge", "%clock", "%clock64", "%globaltimer",
    "%dynamic_smem_size", "%total_smem_size", "WARP_SZ"};

/* ---- slots ---- */

/* A function's slots are allocated for each thread that runs it: a bound
 * far above what compilers emit keeps a range like %r<2000000000> from
 * overflowing the count. */
#define PTX_MAX_SLOTS (1 << 20)
/* The largest variable; and the most .local bytes of a function (the
 * GPU's 512 KB a thread), which keep a thread's local memory, 32 calls
 * deep, far from 32-bit offsets' overflow. */
#define PTX_MAX_VAR_BYTES (1 << 28)
#define PTX_MAX_LOCAL_BYTES (512 << 10)

static int new_slots(parser *ps, int n) {
  int s = ps->fn->nregs;
  if (n < 0 || n > PTX_MAX_SLOTS - s) {
    PTXP_ERROR(ps, "too many registers (or a register range of %d)", n);
    return 0;
  }
  ps->fn->nregs += n;
  return s;
}

int ptxp_const_slot(parser *ps, uint64_t value) {
  ptx_function *fn = ps->fn;
  for (int i = 0; i < fn->nconsts; i++)
    if (fn->consts[i].value == value && !fn->consts[i].local &&
        !fn->consts[i].dynamic_shared)
      return fn->consts[i].slot;
  ptx_const *c = PTXP_PUSH(ps, fn->consts, fn->nconsts, fn->consts_cap);
  if (!c)
    return 0;
  *c = (ptx_const){new_slots(ps, 1), false, value, false};
  return c->slot;
}

/* A literal's bits as an operand of type t. */
uint64_t ptxp_literal_bits(const token *t, int type) {
  double d;
  if (t->kind == T_INT) {
    if (ptx_type_kind[type] != 'f')
      return t->ival;
    d = (double)(int64_t)t->ival;
  } else if (t->float_bits == 32) {
    float f;
    uint32_t u = (uint32_t)t->ival;
    memcpy(&f, &u, 4);
    if (type == PTX_T_F32 || ptx_type_kind[type] != 'f')
      return u;
    d = f;
  } else if (t->float_bits == 64) {
    if (type == PTX_T_F64 || ptx_type_kind[type] != 'f')
      return t->ival;
    memcpy(&d, &t->ival, 8);
  } else {
    d = t->fval;
  }
  switch (type) {
  case PTX_T_F16: return ptx_f16_from_double(d, PTX_RN);
  case PTX_T_BF16: return ptx_bf16_from_double(d, PTX_RN);
  case PTX_T_F32: {
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  case PTX_T_F64: {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
  }
  default: /* a float for an integer: truncated, saturated (no UB) */
    if (!(d > -0x1p63))
      return isnan(d) ? 0 : (uint64_t)INT64_MIN;
    if (d >= 0x1p64)
      return UINT64_MAX;
    return d >= 0x1p63 ? (uint64_t)d : (uint64_t)(int64_t)d;
  }
}

/* ---- names ---- */

name *ptxp_find_name(parser *ps, const char *s, int len, int *index) {
  for (int i = ps->nnames - 1; i >= 0; i--) {
    name *n = &ps->names[i];
    if (n->count == 0) {
      if (n->len == len && memcmp(n->start, s, (size_t)len) == 0) {
        *index = 0;
        return n;
      }
    } else if (len > n->len && memcmp(n->start, s, (size_t)n->len) == 0) {
      int k = 0, j = n->len;
      if (s[j] == '0' && len > j + 1)
        continue;
      for (; j < len && isdigit((unsigned char)s[j]) && k < n->count; j++)
        k = k * 10 + (s[j] - '0'); /* k < count <= PTX_MAX_SLOTS: no overflow */
      if (j == len && k < n->count) {
        *index = k;
        return n;
      }
    }
  }
  return NULL;
}

static name *add_name(parser *ps, const char *start, int len, int count,
                      int slot, int type) {
  name *n = PTXP_PUSH(ps, ps->names, ps->nnames, ps->names_cap);
  if (n)
    *n = (name){start, len, count, slot, (uint8_t)type, ps->depth};
  return n;
}

ptx_var *ptxp_find_var(ptx_module *m, const char *s, int len) {
  for (int i = 0; i < m->nvars; i++)
    if ((int)strlen(m->vars[i].name) == len &&
        memcmp(m->vars[i].name, s, (size_t)len) == 0)
      return &m->vars[i];
  return NULL;
}

static int find_fn(ptx_module *m, const char *s, int len) {
  for (int i = 0; i < m->nfns; i++)
    if ((int)strlen(m->fns[i]->name) == len &&
        memcmp(m->fns[i]->name, s, (size_t)len) == 0)
      return i;
  return -1;
}

/* The slot of a variable's address. The extern .shared array's is placed
 * after every static .shared variable, which later functions may still
 * declare: its slots are filled at the end of the module. */
int ptxp_var_slot(parser *ps, const ptx_var *v) {
  if (v->space != PTX_SHARED || v->size != 0)
    return ptxp_const_slot(ps, v->address);
  ptx_function *fn = ps->fn;
  for (int i = 0; i < fn->nconsts; i++)
    if (fn->consts[i].dynamic_shared)
      return fn->consts[i].slot;
  ptx_const *c = PTXP_PUSH(ps, fn->consts, fn->nconsts, fn->consts_cap);
  if (!c)
    return 0;
  *c = (ptx_const){.slot = new_slots(ps, 1), .dynamic_shared = true};
  return c->slot;
}

static int sreg_slot(parser *ps, int sr) {
  if (ps->fn->sreg_slot[sr] < 0)
    ps->fn->sreg_slot[sr] = new_slots(ps, 1);
  return ps->fn->sreg_slot[sr];
}

/* The slot of a register, special register or symbol (its address). */
int ptxp_value_slot(parser *ps, const char *s, int len) {
  int k;
  name *n = ptxp_find_name(ps, s, len, &k);
  if (n)
    return n->slot + k;
  for (int i = 0; i < PTX_SR_COUNT; i++)
    if ((int)strlen(sreg_names[i]) == len &&
        memcmp(sreg_names[i], s, (size_t)len) == 0)
      return sreg_slot(ps, i);
  ptx_var *v = ptxp_find_var(ps->m, s, len);
  if (v)
    return ptxp_var_slot(ps, v);
  for (int i = 0; i < ps->fn->nparams; i++)
    if ((int)strlen(ps->fn->params[i].name) == len &&
        memcmp(ps->fn->params[i].name, s, (size_t)len) == 0)
      return ptxp_const_slot(ps, ps->fn->params[i].offset +
                                (ps->fn->is_entry ? 0 : PTX_FRAME_PARAM));
  for (int i = 0; i < ps->fn->nrets; i++)
    if ((int)strlen(ps->fn->rets[i].name) == len &&
        memcmp(ps->fn->rets[i].name, s, (size_t)len) == 0)
      return ptxp_const_slot(ps, ps->fn->rets[i].offset + PTX_FRAME_PARAM);
  ptxp_error_at(ps, ps->tok.line, PTX_INVALID_PTX, "unresolved symbol '%.*s'",
           len, s);
  return 0;
}

/* ---- declarations ---- */

typedef struct decl {
  uint8_t space, type;
  uint32_t align;
  uint64_t count; /* array elements (1 for a scalar; 0 for []) */
  bool array, ptr;
  const char *name;
  int name_len, line;
} decl;

/* [.space] [.align N] [.ptr .space .align N] .type name [ [N] ]... */
static void parse_decl(parser *ps, decl *d) {
  memset(d, 0, sizeof *d);
  d->count = 1;
  while (ps->tok.kind == T_IDENT && ps->tok.start[0] == '.') {
    int t = ptxp_type_of(ps->tok.start + 1, ps->tok.len - 1);
    if (t)
      d->type = (uint8_t)t;
    else if (ptxp_is_word(ps, ".align")) {
      ptxp_next(ps);
      uint32_t a = (uint32_t)ptxp_expect_int(ps);
      if (!d->ptr)
        d->align = a;
      continue;
    } else if (ptxp_is_word(ps, ".ptr"))
      d->ptr = true;
    else if (ptxp_is_word(ps, ".global") || ptxp_is_word(ps, ".shared") ||
             ptxp_is_word(ps, ".const") || ptxp_is_word(ps, ".local") ||
             ptxp_is_word(ps, ".param")) {
      if (!d->ptr)
        d->space = ptxp_is_word(ps, ".global")   ? PTX_GLOBAL
                   : ptxp_is_word(ps, ".shared") ? PTX_SHARED
                   : ptxp_is_word(ps, ".const")  ? PTX_CONST
                   : ptxp_is_word(ps, ".local")  ? PTX_LOCAL
                                            : PTX_PARAM;
    } else if (!ptxp_is_word(ps, ".v2") && !ptxp_is_word(ps, ".v4") &&
               !ptxp_is_word(ps, ".visible") && !ptxp_is_word(ps, ".extern") &&
               !ptxp_is_word(ps, ".weak") && !ptxp_is_word(ps, ".common")) {
      PTXP_ERROR(ps, "unknown directive '%.*s'", ps->tok.len, ps->tok.start);
      return;
    }
    ptxp_next(ps);
  }
  if (!d->type) {
    PTXP_ERROR(ps, "syntax error: a declaration without a type");
    return;
  }
  if (ps->tok.kind != T_IDENT) {
    PTXP_ERROR(ps, "syntax error: expected a name at '%.*s'", ps->tok.len,
          ps->tok.start);
    return;
  }
  d->name = ps->tok.start;
  d->name_len = ps->tok.len;
  d->line = ps->tok.line;
  ptxp_next(ps);
  if (ptxp_is_punct(ps, '<')) /* a register range: the caller reads it */
    return;
  while (ptxp_accept(ps, '[')) {
    d->array = true;
    if (ptxp_accept(ps, ']')) {
      d->count = 0;
      continue;
    }
    uint64_t n = ptxp_expect_int(ps);
    d->count = n && d->count > UINT64_MAX / n ? UINT64_MAX : d->count * n;
    ptxp_expect(ps, ']');
  }
  /* sizes are 32-bit offsets in the param, local and shared areas */
  uint64_t elem = ptx_type_bits[d->type] >= 8 ? ptx_type_bits[d->type] / 8 : 1;
  if (d->count > PTX_MAX_VAR_BYTES / elem)
    PTXP_ERROR(ps, "'%.*s' is larger than %d bytes", d->name_len, d->name,
               PTX_MAX_VAR_BYTES);
  if (!d->align)
    d->align = ptx_type_bits[d->type] >= 8 ? ptx_type_bits[d->type] / 8 : 1;
}

static char param_kind(const decl *d) {
  if (d->array)
    return 's';
  switch (d->type) {
  case PTX_T_U64: case PTX_T_B64: case PTX_T_S64: return 'p';
  case PTX_T_F64: return 'd';
  case PTX_T_F32: return 'f';
  default: return 'i';
  }
}

static uint32_t align_up(uint32_t v, uint32_t a) {
  return a ? (v + a - 1) / a * a : v;
}

/* Adds a param of `d` at the end of the function's param area. */
/* Places a param of `d` at the end of the function's param area; its
 * offset there. */
static uint32_t place_param(parser *ps, const decl *d, uint32_t *size) {
  *size = (uint32_t)(d->count * (ptx_type_bits[d->type] < 8
                                     ? 1
                                     : ptx_type_bits[d->type] / 8));
  uint32_t at = align_up(ps->fn->param_size, d->align);
  if (at < ps->fn->param_size || *size > PTX_MAX_VAR_BYTES - at) {
    ptxp_error_at(ps, d->line, PTX_INVALID_PTX, "parameters of more than "
                  "%d bytes", PTX_MAX_VAR_BYTES);
    return 0;
  }
  ps->fn->param_size = at + *size;
  return at;
}

static ptx_param *add_param(parser *ps, ptx_param **arr, int *n,
                            const decl *d) {
  ptx_param *np = realloc(*arr, (size_t)(*n + 1) * sizeof **arr);
  if (!np) {
    ptxp_error_at(ps, d->line, PTX_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  *arr = np;
  ptx_param *p = &np[(*n)++];
  p->offset = place_param(ps, d, &p->size);
  p->kind = param_kind(d);
  p->name = malloc((size_t)d->name_len + 1);
  if (p->name) {
    memcpy(p->name, d->name, (size_t)d->name_len);
    p->name[d->name_len] = '\0';
  }
  return p;
}

/* ( .param ..., .param ... ) */
static void parse_param_list(parser *ps, ptx_param **arr, int *n) {
  ptxp_expect(ps, '(');
  while (!ptxp_failed(ps) && !ptxp_accept(ps, ')')) {
    decl d;
    parse_decl(ps, &d);
    if (ptxp_failed(ps))
      return;
    if (d.space != PTX_PARAM && d.space != 0) {
      PTXP_ERROR(ps, "a parameter not in .param");
      return;
    }
    add_param(ps, arr, n, &d);
    if (!ptxp_is_punct(ps, ')'))
      ptxp_expect(ps, ',');
  }
}

/* = value or = { values } into init, elements of `type`. */
static void parse_init(parser *ps, ptx_var *v, int type, uint64_t *at) {
  if (ptxp_accept(ps, '{')) {
    while (!ptxp_failed(ps) && !ptxp_accept(ps, '}')) {
      parse_init(ps, v, type, at);
      if (!ptxp_is_punct(ps, '}'))
        ptxp_expect(ps, ',');
    }
    return;
  }
  bool neg = ptxp_accept(ps, '-');
  if (ps->tok.kind != T_INT && ps->tok.kind != T_FLOAT) {
    PTXP_ERROR(ps, "unsupported initializer '%.*s'", ps->tok.len, ps->tok.start);
    return;
  }
  token t = ps->tok;
  if (neg) {
    t.ival = 0 - t.ival; /* unsigned: -INT64_MIN too */
    t.fval = -t.fval;
  }
  uint64_t bits = ptxp_literal_bits(&t, type);
  if (neg && t.kind == T_FLOAT && t.float_bits)
    bits ^= (uint64_t)1 << (ptx_type_bits[type] - 1);
  unsigned size = ptx_type_bits[type] / 8;
  if (*at + size > v->size) {
    PTXP_ERROR(ps, "too many initializers for '%s'", v->name);
    return;
  }
  memcpy(v->init + *at, &bits, size);
  *at += size;
  ptxp_next(ps);
}

static void module_var(parser *ps, const decl *d) {
  ptx_module *m = ps->m;
  if (ptxp_find_var(m, d->name, d->name_len)) {
    ptxp_error_at(ps, d->line, PTX_INVALID_PTX, "duplicate definition of '%.*s'",
             d->name_len, d->name);
    return;
  }
  ptx_var *v = PTXP_PUSH(ps, m->vars, m->nvars, m->vars_cap);
  if (!v)
    return;
  memset(v, 0, sizeof *v);
  v->name = malloc((size_t)d->name_len + 1);
  if (!v->name) {
    ptxp_error_at(ps, d->line, PTX_OUT_OF_MEMORY, "out of memory");
    return;
  }
  memcpy(v->name, d->name, (size_t)d->name_len);
  v->name[d->name_len] = '\0';
  v->space = d->space;
  v->align = d->align;
  v->size = d->count * (ptx_type_bits[d->type] / 8 ? ptx_type_bits[d->type] / 8 : 1);
  if (d->space == PTX_SHARED) {
    if (d->count == 0) { /* extern: dynamic shared memory */
      v->size = 0;
      v->address = (uint64_t)-1; /* placed at launch (launch.c) */
      if (d->align > m->dynamic_align)
        m->dynamic_align = d->align;
    } else {
      m->static_shared = align_up(m->static_shared, d->align);
      v->address = m->static_shared;
      m->static_shared += (uint32_t)v->size;
    }
  } else {
    /* .global and .const: device memory of their own, zero-filled. */
    v->host = aligned_alloc(256, (v->size + 255) / 256 * 256 + 256);
    v->init = v->host;
    if (!v->host) {
      ptxp_error_at(ps, d->line, PTX_OUT_OF_MEMORY, "out of memory");
      return;
    }
    memset(v->host, 0, (v->size + 255) / 256 * 256 + 256);
    v->address = (uint64_t)(uintptr_t)v->host ^ ((uint64_t)1 << 63);
    if (ptx_memory_add(v->address, v->host, v->size ? v->size : 1) != PTX_OK)
      ptxp_error_at(ps, d->line, PTX_OUT_OF_MEMORY, "out of memory");
  }
  if (ptxp_accept(ps, '=')) {
    if (!v->init) {
      PTXP_ERROR(ps, "an initializer of a .shared variable");
      return;
    }
    uint64_t at = 0;
    parse_init(ps, v, d->type, &at);
  }
}

/* The extern .shared array's address: after the static ones. */
static void place_dynamic_shared(ptx_module *m) {
  uint32_t a = m->dynamic_align ? m->dynamic_align : 16;
  uint32_t at = align_up(m->static_shared, a);
  for (int i = 0; i < m->nvars; i++)
    if (m->vars[i].space == PTX_SHARED && m->vars[i].size == 0)
      m->vars[i].address = at;
  for (int i = 0; i < m->nfns; i++)
    for (int j = 0; j < m->fns[i]->nconsts; j++)
      if (m->fns[i]->consts[j].dynamic_shared)
        m->fns[i]->consts[j].value = at;
}


/* ---- function bodies ---- */

static void parse_reg_decl(parser *ps) {
  ptxp_next(ps); /* .reg */
  int type = PTX_T_NONE;
  while (ps->tok.kind == T_IDENT && ps->tok.start[0] == '.') {
    int t = ptxp_type_of(ps->tok.start + 1, ps->tok.len - 1);
    if (t)
      type = t;
    else if (!ptxp_is_word(ps, ".v2") && !ptxp_is_word(ps, ".v4")) {
      PTXP_ERROR(ps, "unknown register type '%.*s'", ps->tok.len, ps->tok.start);
      return;
    }
    ptxp_next(ps);
  }
  if (!type) {
    PTXP_ERROR(ps, "a .reg without a type");
    return;
  }
  for (;;) {
    if (ps->tok.kind != T_IDENT) {
      PTXP_ERROR(ps, "syntax error: expected a register name");
      return;
    }
    token at = ps->tok;
    ptxp_next(ps);
    if (ptxp_accept(ps, '<')) {
      int count = (int)ptxp_expect_int(ps);
      ptxp_expect(ps, '>');
      add_name(ps, at.start, at.len, count, new_slots(ps, count), type);
    } else {
      add_name(ps, at.start, at.len, 0, new_slots(ps, 1), type);
    }
    if (!ptxp_accept(ps, ','))
      break;
  }
  ptxp_expect(ps, ';');
}

/* .local/.shared/.param in a body. */
static void parse_body_var(parser *ps) {
  decl d;
  parse_decl(ps, &d);
  if (ptxp_failed(ps))
    return;
  if (d.space == PTX_LOCAL) {
    ptx_function *fn = ps->fn;
    fn->local_size = align_up(fn->local_size, d.align);
    ptx_const *c = PTXP_PUSH(ps, fn->consts, fn->nconsts, fn->consts_cap);
    if (c) {
      *c = (ptx_const){new_slots(ps, 1), true, fn->local_size, false};
      add_name(ps, d.name, d.name_len, 0, c->slot, d.type);
    }
    fn->local_size += (uint32_t)(d.count * (ptx_type_bits[d.type] / 8));
    if (fn->local_size > PTX_MAX_LOCAL_BYTES)
      PTXP_ERROR(ps, "more than %d bytes of .local", PTX_MAX_LOCAL_BYTES);
  } else if (d.space == PTX_PARAM) {
    /* call-site params live in the frame's param area after the formals */
    uint32_t size;
    uint32_t at = place_param(ps, &d, &size);
    add_name(ps, d.name, d.name_len, 0,
             ptxp_const_slot(ps, at + PTX_FRAME_PARAM), d.type);
  } else if (d.space == PTX_SHARED) {
    char scoped[256];
    snprintf(scoped, sizeof scoped, "%s::%.*s", ps->fn->name, d.name_len,
             d.name);
    decl g = d;
    g.name = scoped;
    g.name_len = (int)strlen(scoped);
    module_var(ps, &g);
    if (!ptxp_failed(ps))
      add_name(ps, d.name, d.name_len, 0,
               ptxp_var_slot(ps, &ps->m->vars[ps->m->nvars - 1]), d.type);
  } else {
    PTXP_ERROR(ps, "unsupported declaration in a function body");
  }
  if (ptxp_accept(ps, '='))
    PTXP_ERROR(ps, "an initializer in a function body");
  ptxp_expect(ps, ';');
}

static void parse_body(parser *ps) {
  ptxp_expect(ps, '{');
  ps->depth = 1;
  while (!ptxp_failed(ps) && ps->depth > 0) {
    if (ps->tok.kind == T_EOF) {
      PTXP_ERROR(ps, "syntax error: end of input in a function body");
    } else if (ptxp_accept(ps, '{')) {
      ps->depth++;
    } else if (ptxp_accept(ps, '}')) {
      while (ps->nnames && ps->names[ps->nnames - 1].depth >= ps->depth)
        ps->nnames--;
      ps->depth--;
    } else if (ptxp_is_word(ps, ".reg")) {
      parse_reg_decl(ps);
    } else if (ptxp_is_word(ps, ".local") || ptxp_is_word(ps, ".shared") ||
               ptxp_is_word(ps, ".param")) {
      parse_body_var(ps);
    } else if (ptxp_is_word(ps, ".pragma")) {
      ptxp_next(ps);
      ptxp_next(ps);
      ptxp_expect(ps, ';');
    } else if (ptxp_is_word(ps, ".loc") || ptxp_is_word(ps, ".file")) {
      ptxp_skip_line(ps);
      ptxp_next(ps);
    } else if (ps->tok.kind == T_IDENT && ps->p[0] == ':' && ps->p[1] != ':') {
      name *l = PTXP_PUSH(ps, ps->labels, ps->nlabels, ps->labels_cap);
      if (l)
        *l = (name){ps->tok.start, ps->tok.len, 0, ps->fn->ncode, 0, 0};
      ptxp_next(ps);
      ptxp_expect(ps, ':');
    } else {
      ptxp_instruction(ps);
    }
  }
  /* labels */
  for (int i = 0; i < ps->nbranches && !ptxp_failed(ps); i++) {
    fixup *f = &ps->branches[i];
    int j = 0;
    while (j < ps->nlabels && !(ps->labels[j].len == f->len &&
                                memcmp(ps->labels[j].start, f->start,
                                       (size_t)f->len) == 0))
      j++;
    if (j == ps->nlabels)
      ptxp_error_at(ps, f->line, PTX_INVALID_PTX, "unresolved label '%.*s'",
               f->len, f->start);
    else
      ps->fn->code[f->insn].target = ps->labels[j].slot;
  }
  ps->nlabels = ps->nbranches = ps->nnames = 0;
  /* A body that runs off its end returns. */
  ptx_insn *ret = PTXP_PUSH(ps, ps->fn->code, ps->fn->ncode, ps->fn->code_cap);
  if (ret) {
    memset(ret, 0, sizeof *ret);
    ret->op = PTX_OP_RET;
    ret->guard = PTX_NO_SLOT;
    ret->line = (uint32_t)ps->tok.line;
  }
}

static void function_free(ptx_function *fn) {
  if (!fn)
    return;
  free(fn->name);
  for (int i = 0; i < fn->nparams; i++)
    free(fn->params[i].name);
  for (int i = 0; i < fn->nrets; i++)
    free(fn->rets[i].name);
  free(fn->params);
  free(fn->rets);
  free(fn->code);
  free(fn->consts);
  free(fn);
}

/* .entry/.func NAME ... { body } or ; */
static void parse_function(parser *ps, bool entry) {
  int line = ps->tok.line;
  ptxp_next(ps);
  ptx_function *fn = calloc(1, sizeof *fn);
  if (!fn) {
    ptxp_error_at(ps, line, PTX_OUT_OF_MEMORY, "out of memory");
    return;
  }
  for (int i = 0; i < PTX_SR_COUNT; i++)
    fn->sreg_slot[i] = -1;
  fn->is_entry = entry;
  fn->module = ps->m;
  fn->line = (uint32_t)line;
  ps->fn = fn;
  if (!entry && ptxp_is_punct(ps, '('))
    parse_param_list(ps, &fn->rets, &fn->nrets);
  if (ps->tok.kind != T_IDENT) {
    PTXP_ERROR(ps, "syntax error: expected a function name");
    function_free(fn); /* and the return values parsed before */
    ps->fn = NULL;
    return;
  }
  fn->name = ptxp_tok_dup(ps);
  if (fn->name && strchr(fn->name, '.'))
    PTXP_ERROR(ps, "'%s' is not a PTX identifier (it has a '.')", fn->name);
  ptxp_next(ps);
  if (ptxp_is_punct(ps, '('))
    parse_param_list(ps, &fn->params, &fn->nparams);
  /* formals first, then return values, in one frame param area */
  while (!ptxp_failed(ps) && ps->tok.kind == T_IDENT) {
    unsigned *dims = ptxp_is_word(ps, ".maxntid")   ? fn->maxntid
                     : ptxp_is_word(ps, ".reqntid") ? fn->reqntid
                                               : NULL;
    if (dims) {
      ptxp_next(ps);
      dims[0] = dims[1] = dims[2] = 1;
      for (int i = 0; i < 3; i++) {
        dims[i] = (unsigned)ptxp_expect_int(ps);
        if (!ptxp_accept(ps, ','))
          break;
      }
    } else if (ptxp_is_word(ps, ".minnctapersm") || ptxp_is_word(ps, ".maxnreg") ||
               ptxp_is_word(ps, ".maxclusterrank")) {
      ptxp_next(ps);
      ptxp_expect_int(ps);
    } else if (ptxp_is_word(ps, ".noreturn")) {
      ptxp_next(ps);
    } else if (ptxp_is_word(ps, ".pragma")) {
      ptxp_next(ps);
      ptxp_next(ps);
      ptxp_expect(ps, ';');
    } else {
      PTXP_ERROR(ps, "unknown directive '%.*s'", ps->tok.len, ps->tok.start);
    }
  }
  int existing = find_fn(ps->m, fn->name, (int)strlen(fn->name));
  ptx_function *unused = NULL;
  bool body = !ptxp_failed(ps) && !ptxp_accept(ps, ';');
  if (ptxp_failed(ps)) {
    unused = fn;
  } else if (existing >= 0 && body && ps->m->fns[existing]->defined) {
    ptxp_error_at(ps, line, PTX_INVALID_PTX, "duplicate definition of '%s'",
                  fn->name);
    unused = fn;
  } else if (existing >= 0 && !body) {
    unused = fn; /* a second declaration */
  } else if (existing >= 0) { /* a body defines an earlier declaration */
    unused = ps->m->fns[existing];
    ps->m->fns[existing] = fn;
    ps->fn_index = existing;
  } else {
    ptx_function **slot =
        PTXP_PUSH(ps, ps->m->fns, ps->m->nfns, ps->m->fns_cap);
    if (slot)
      *slot = fn;
    else
      unused = fn;
    ps->fn_index = ps->m->nfns - 1;
  }
  if (body && unused != fn && !ptxp_failed(ps)) {
    fn->defined = true;
    ps->sink = new_slots(ps, 1);
    parse_body(ps);
  }
  function_free(unused);
  ps->fn = NULL;
}

/* The newest PTX ISA a driver version takes. */
static int isa_of_driver(int v) {
  int major = v / 1000, minor = (v % 1000) / 10;
  if (major >= 13)
    return 90 + minor;
  if (major == 12)
    return minor <= 5 ? 80 + minor : minor == 6 ? 85 : minor == 7 ? 86
                      : minor == 8 ? 87 : 88;
  if (major == 11)
    return 70 + minor;
  return 60;
}

static void parse_module(parser *ps) {
  ptx_module *m = ps->m;
  ptxp_next(ps);
  while (!ptxp_failed(ps) && ps->tok.kind != T_EOF) {
    int line = ps->tok.line;
    if (ptxp_is_word(ps, ".version")) {
      ptxp_next(ps);
      if (ps->tok.kind != T_FLOAT || ps->tok.float_bits) {
        PTXP_ERROR(ps, "syntax error: .version needs MAJOR.MINOR");
        return;
      }
      int v = (int)lround(ps->tok.fval * 10);
      m->version_major = v / 10;
      m->version_minor = v % 10;
      ptxp_next(ps);
      int most = isa_of_driver(ps->dev->driver_version);
      if (v > most)
        ptxp_error_at(ps, line, PTX_UNSUPPORTED_VERSION,
                 "Unsupported .version %d.%d; current version is '%d.%d'",
                 v / 10, v % 10, most / 10, most % 10);
    } else if (ptxp_is_word(ps, ".target")) {
      ptxp_next(ps);
      for (;;) {
        if (ps->tok.kind == T_IDENT && strncmp(ps->tok.start, "sm_", 3) == 0) {
          int sm = atoi(ps->tok.start + 3);
          bool specific = ps->tok.start[ps->tok.len - 1] == 'a' ||
                          ps->tok.start[ps->tok.len - 1] == 'f';
          int cc = ps->dev->cc_major * 10 + ps->dev->cc_minor;
          m->sm = sm;
          if (sm > cc || (specific && sm != cc))
            ptxp_error_at(ps, line, PTX_NO_BINARY,
                     "the target %.*s cannot run on a device of compute "
                     "capability %d.%d",
                     ps->tok.len, ps->tok.start, cc / 10, cc % 10);
        }
        ptxp_next(ps);
        if (!ptxp_accept(ps, ','))
          break;
      }
    } else if (ptxp_is_word(ps, ".address_size")) {
      ptxp_next(ps);
      if (ptxp_expect_int(ps) != 64)
        PTXP_ERROR(ps, "only .address_size 64 is supported");
    } else if (ptxp_is_word(ps, ".file") || ptxp_is_word(ps, ".loc")) {
      ptxp_skip_line(ps);
      ptxp_next(ps);
    } else if (ptxp_is_word(ps, ".section")) { /* debug sections: skipped */
      ptxp_next(ps);
      ptxp_next(ps);
      ptxp_expect(ps, '{');
      for (int depth = 1; depth > 0 && ps->tok.kind != T_EOF; ptxp_next(ps))
        depth += ptxp_is_punct(ps, '{') - ptxp_is_punct(ps, '}');
    } else if (ptxp_is_word(ps, ".visible") || ptxp_is_word(ps, ".extern") ||
               ptxp_is_word(ps, ".weak") || ptxp_is_word(ps, ".common")) {
      ptxp_next(ps);
    } else if (ptxp_is_word(ps, ".entry") || ptxp_is_word(ps, ".func")) {
      if (!m->version_major) {
        PTXP_ERROR(ps, "a function before .version");
        return;
      }
      parse_function(ps, ptxp_is_word(ps, ".entry"));
    } else if (ptxp_is_word(ps, ".global") || ptxp_is_word(ps, ".const") ||
               ptxp_is_word(ps, ".shared")) {
      decl d;
      parse_decl(ps, &d);
      if (!ptxp_failed(ps))
        module_var(ps, &d);
      ptxp_expect(ps, ';');
    } else {
      PTXP_ERROR(ps, "syntax error at '%.*s'", ps->tok.len, ps->tok.start);
    }
  }
  if (!ptxp_failed(ps) && !m->version_major)
    ptxp_error_at(ps, 1, PTX_INVALID_PTX, "no .version directive");
  if (!ptxp_failed(ps) && !m->sm)
    ptxp_error_at(ps, 1, PTX_INVALID_PTX, "no .target directive");
  /* callees */
  for (int i = 0; i < ps->ncalls && !ptxp_failed(ps); i++) {
    fixup *f = &ps->calls[i];
    int j = find_fn(m, f->start, f->len);
    if (j < 0 || !m->fns[j]->defined)
      ptxp_error_at(ps, f->line, PTX_INVALID_PTX,
               "unresolved symbol '%.*s' (a function without a body)",
               f->len, f->start);
  }
  place_dynamic_shared(m);
}

void ptx_module_free(ptx_module *m) {
  if (!m)
    return;
  for (int i = 0; i < m->nfns; i++)
    function_free(m->fns[i]);
  for (int i = 0; i < m->nvars; i++) {
    if (m->vars[i].host) {
      ptx_memory_remove(m->vars[i].address);
      free(m->vars[i].host);
    }
    free(m->vars[i].name);
  }
  free(m->fns);
  free(m->vars);
  free(m->kernels);
  free(m);
}

ptx_status ptx_module_load(const char *text, const ptx_device *dev,
                           ptx_module **out, char *log, size_t log_size) {
  *out = NULL;
  if (log && log_size)
    log[0] = '\0';
  parser ps = {.p = text, .line = 1, .dev = dev, .log = log,
               .log_size = log_size};
  ps.m = calloc(1, sizeof *ps.m);
  if (!ps.m)
    return PTX_OUT_OF_MEMORY;
  parse_module(&ps);
  /* call targets: the fixup's insn is (function << 20 | insn) */
  for (int i = 0; i < ps.ncalls && !ptxp_failed(&ps); i++) {
    fixup *f = &ps.calls[i];
    ptx_function *caller = ps.m->fns[f->insn >> 20];
    caller->code[f->insn & 0xfffff].target = find_fn(ps.m, f->start, f->len);
  }
  if (!ptxp_failed(&ps)) {
    int n = 0;
    for (int i = 0; i < ps.m->nfns; i++)
      n += ps.m->fns[i]->is_entry && ps.m->fns[i]->defined;
    ps.m->kernels = calloc((size_t)n + 1, sizeof *ps.m->kernels);
    if (!ps.m->kernels)
      ps.status = PTX_OUT_OF_MEMORY;
    for (int i = 0; i < ps.m->nfns && ps.m->kernels; i++)
      if (ps.m->fns[i]->is_entry && ps.m->fns[i]->defined)
        ps.m->kernels[ps.m->nkernels++].fn = ps.m->fns[i];
  }
  free(ps.names);
  free(ps.labels);
  free(ps.branches);
  free(ps.calls);
  if (ptxp_failed(&ps)) {
    ptx_module_free(ps.m);
    return ps.status;
  }
  *out = ps.m;
  return PTX_OK;
}

ptx_kernel *ptx_module_kernel(ptx_module *m, const char *name) {
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i].fn->name, name) == 0)
      return &m->kernels[i];
  return NULL;
}

void ptx_module_kernel_names(const ptx_module *m, char *buf, size_t size) {
  if (!size)
    return;
  buf[0] = '\0';
  for (int i = 0; i < m->nkernels; i++) {
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", i ? "," : "",
             m->kernels[i].fn->name);
  }
}

const char *ptx_kernel_name(const ptx_kernel *k) { return k->fn->name; }
int ptx_kernel_param_count(const ptx_kernel *k) { return k->fn->nparams; }
size_t ptx_kernel_param_size(const ptx_kernel *k, int i) {
  return k->fn->params[i].size;
}
unsigned ptx_kernel_max_threads(const ptx_kernel *k) {
  const unsigned *d = k->fn->maxntid[0] ? k->fn->maxntid : k->fn->reqntid;
  return d[0] * d[1] * d[2];
}

char ptx_kernel_param_kind(const ptx_kernel *k, int i) {
  return k->fn->params[i].kind;
}
