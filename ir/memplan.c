/* memplan.c: reading, checking and measuring a function's memory plan
 * (see memplan.h for the attributes and docs/Memory.md for the rules).
 *
 * The analysis numbers a function's values (arguments, then statement
 * results in order) and finds each one's definition and last reader. The
 * reader adds the places the plan's attributes give and checks them; the
 * check is the sweep over positions that keeps the arena values alive at
 * each one and compares every new value with them, so it costs the number
 * of values times the values live at once.
 */
#include "ir/memplan.h"

#include "ir/cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sizes saturate at 2^52 bytes (4 PiB, beyond any machine): a type may
 * hold up to 2^63 - 1 elements, and the sums of a plan must not overflow
 * (2^11 saturated values still fit in int64); such a plan is never run,
 * since its allocation fails first. */
#define HUGE_BYTES ((int64_t)1 << 52)

int64_t raf_mem_bytes(const raf_type *t) {
  int64_t size = raf_dtype_size(t->dtype);
  return t->numel > HUGE_BYTES / size ? HUGE_BYTES : t->numel * size;
}

int64_t raf_mem_aligned(int64_t bytes) {
  return (bytes + RAF_MEM_ALIGN - 1) / RAF_MEM_ALIGN * RAF_MEM_ALIGN;
}

int raf_mem_id(const raf_mem_plan *p, const raf_value *v) {
  if (!v->def)
    return v->index;
  return p->first[v->def->order - p->stmt[0]->order] + v->index;
}

void raf_mem_free(raf_mem_plan *p) {
  free(p->scratch);
  free(p->stmt);
  free(p->first);
  free(p->v);
  memset(p, 0, sizeof *p);
}

raf_status raf_mem_analyze(raf_func *f, raf_mem_plan *p) {
  memset(p, 0, sizeof *p);
  p->f = f;
  p->dispatched = raf_mem_dispatched(f->module);
  raf_func_number(f);
  int n = 0, nvalues = f->nargs;
  raf_stmt *ret = raf_func_return(f);
  for (raf_stmt *s = f->first; s && s != ret; s = s->next) {
    n++;
    nvalues += s->nresults;
  }
  p->nstmts = n;
  p->nvalues = nvalues;
  /* stmt[n] is the return, so positions map back from orders. */
  p->stmt = malloc(sizeof *p->stmt * (size_t)(n + 1));
  p->first = malloc(sizeof *p->first * (size_t)(n + 1));
  p->v = calloc((size_t)(nvalues ? nvalues : 1), sizeof *p->v);
  p->scratch = malloc(sizeof *p->scratch * (size_t)(n + 1));
  if (!p->stmt || !p->first || !p->v || !p->scratch || !ret) {
    raf_mem_free(p);
    return RAF_ERROR;
  }
  for (int k = 0; k <= n; k++)
    p->scratch[k] = -1;
  int k = 0, id = f->nargs;
  for (int i = 0; i < f->nargs; i++)
    p->v[i] = (raf_mem_value){f->args[i].value, RAF_MEM_ARG, i, 0,
                              raf_mem_bytes(f->args[i].value->type),
                              -1, -1, -1, 0, -1, false};
  for (raf_stmt *s = f->first; s != ret; s = s->next, k++) {
    p->stmt[k] = s;
    p->first[k] = id;
    for (int r = 0; r < s->nresults; r++, id++)
      p->v[id] = (raf_mem_value){s->results[r], RAF_MEM_ARENA, 0, 0,
                                 raf_mem_bytes(s->results[r]->type),
                                 k, k, -1, 0, -1, false};
    for (int i = 0; i < s->noperands; i++)
      p->v[raf_mem_id(p, s->operands[i].value)].last = k;
    /* An async collective reads its operands until its wait, which comes
     * later, so this is their last use. */
    const raf_stmt *start = s->op == RAF_OP_WAIT ? s->operands[0].value->def
                                                 : NULL;
    for (int i = 0; start && i < start->noperands; i++)
      if (p->v[raf_mem_id(p, start->operands[i].value)].last < k)
        p->v[raf_mem_id(p, start->operands[i].value)].last = k;
  }
  p->stmt[n] = ret;
  p->first[n] = id;
  for (int q = 0; q < ret->noperands; q++) {
    raf_mem_value *x = &p->v[raf_mem_id(p, ret->operands[q].value)];
    x->last = n;
    if (x->nreturned++ == 0) {
      x->returned = q;
      if (x->kind == RAF_MEM_ARENA) {
        x->kind = RAF_MEM_RESULT;
        x->index = q;
      }
    }
  }
  return RAF_OK;
}

/* ---- What may run in place ----------------------------------------------- */

/* The ops that read element i of each operand before they write element i
 * of the result, and no other element: the inplace column of lang/ops.def
 * (OVER), which test/unit/test_registry.c ties to the kernels' classes. */
static bool elementwise_op(raf_opcode op) {
  return raf_op_table[op].inplace == RAF_INPLACE_OVER;
}

bool raf_mem_op_inplace(const raf_stmt *s, int operand) {
  if (s->nresults != 1 || operand < 0 || operand >= s->noperands)
    return false;
  /* The kernels that keep the rule: those of a dialect that declares the
   * op's in-place kind (lang/dialects.def's inplace column). A statement
   * with no dialect is judged by its op alone. */
  raf_dialect d = raf_stmt_dialect(s);
  raf_inplace_class kind = raf_op_table[s->op].inplace;
  bool rows = kind == RAF_INPLACE_ROWS;
  if (d != RAF_DIALECT_COUNT && !(raf_dialect_get(d)->inplace & (1u << kind)))
    return false;
  const raf_type *in = s->operands[operand].value->type,
                 *out = s->results[0]->type;
  if (raf_op_table[s->op].inplace == RAF_INPLACE_VIEW)
    return raf_mem_bytes(in) == raf_mem_bytes(out);
  return (elementwise_op(s->op) || rows) && in == out;
}

bool raf_mem_call_inplace(const raf_func *g, int arg, int result) {
  const raf_attr *fused = raf_attrs_find(&g->attrs, "fused");
  if (!fused || fused->kind != RAF_ATTR_BOOL || !fused->val.u.b ||
      arg < 0 || arg >= g->nargs || result < 0 || result >= g->nresults ||
      g->args[arg].value->type != g->results[result].type)
    return false;
  raf_stmt *ret = raf_func_return(g);
  if (!ret || ret->noperands != g->nresults)
    return false;
  raf_value *a = g->args[arg].value, *r = ret->operands[result].value;
  if (!r->def)
    return false;
  for (int q = 0; q < ret->noperands; q++)
    if (ret->operands[q].value == a ||
        (q != result && ret->operands[q].value == r))
      return false;
  bool after = false; /* past r's statement */
  for (raf_stmt *s = g->first; s && s != ret; s = s->next) {
    if (s->op == RAF_OP_CALL)
      return false;
    for (int i = 0; i < s->noperands; i++)
      if (s->operands[i].value == a &&
          (after || (s == r->def && !raf_mem_op_inplace(s, i))))
        return false;
    if (s == r->def)
      after = true;
  }
  return true;
}

/* Whether t broadcasts to f's shape (NumPy rules, right-aligned). */
static bool broadcasts_to(const raf_type *t, const raf_type *f) {
  if (t->rank > f->rank)
    return false;
  for (int d = 1; d <= t->rank; d++)
    if (t->dims[t->rank - d] != 1 &&
        t->dims[t->rank - d] != f->dims[f->rank - d])
      return false;
  return true;
}

/* Whether a statement reads element i of its operand at point i of an
 * iteration space of t's shape: a reshape into t's shape of as many
 * elements (the sharded step's gradient, a slice of a flat bucket). */
static bool flat_reshape(const raf_stmt *s, const raf_type *t) {
  return s->op == RAF_OP_RESHAPE &&
         raf_type_same_shape(s->results[0]->type, t) &&
         s->operands[0].value->type->numel == t->numel;
}

/* Whether argument v of g is read only by flat_reshape statements. */
static bool read_flat_only(const raf_func *g, const raf_value *v,
                           const raf_type *t) {
  for (const raf_stmt *s = g->first; s; s = s->next)
    for (int i = 0; i < s->noperands; i++)
      if (s->operands[i].value == v && !flat_reshape(s, t))
        return false;
  return true;
}

bool raf_mem_compiled_call_inplace(const raf_func *g, int arg, int result) {
  if (!raf_mem_call_inplace(g, arg, result))
    return false;
  const raf_value *a = g->args[arg].value;
  const raf_type *t = a->type;
  for (int i = 0; i < g->nargs; i++)
    if (!broadcasts_to(g->args[i].value->type, t) &&
        !read_flat_only(g, g->args[i].value, t))
      return false;
  /* The values computed from a, in statement order (a first). */
  int n = 1, cap = 16;
  const raf_value **from_a = malloc(sizeof *from_a * (size_t)cap);
  bool ok = from_a != NULL;
  if (ok)
    from_a[0] = a;
  for (raf_stmt *s = g->first; ok && s; s = s->next) {
    if (s->op == RAF_OP_RETURN)
      continue;
    const raf_value *v = s->results[0];
    bool reads_a = false;
    for (int i = 0; i < s->noperands; i++)
      for (int j = 0; j < n && !reads_a; j++)
        reads_a = s->operands[i].value == from_a[j];
    /* A cast reads element i and writes element i too: its inplace
     * column is SEPARATE only because it never keeps its operand's type
     * (amp's update widens its bf16 gradient in the kernel). */
    ok = (s->op == RAF_OP_CONSTANT || s->op == RAF_OP_CAST ||
          elementwise_op(s->op) || flat_reshape(s, t)) &&
         broadcasts_to(v->type, t) &&
         (!reads_a || raf_type_same_shape(v->type, t));
    if (ok && reads_a) {
      if (n == cap) {
        cap *= 2;
        const raf_value **m = realloc(from_a, sizeof *m * (size_t)cap);
        ok = m != NULL;
        from_a = m ? m : from_a;
      }
      if (ok)
        from_a[n++] = v;
    }
  }
  free(from_a);
  return ok;
}

bool raf_mem_is_called(const raf_func *f) {
  for (raf_func *g = f->module->first; g; g = g->next)
    for (raf_stmt *s = g->first; s; s = s->next)
      if (s->op == RAF_OP_CALL && s->callee == f)
        return true;
  return false;
}

/* ---- Reading and checking a plan ----------------------------------------- */

typedef struct reader {
  raf_ctx *ctx;
  raf_mem_plan *p;
  int *donated_to; /* per argument: the result donated to it, or -1 */
  bool ok;
} reader;

__attribute__((format(printf, 3, 4))) static void bad(reader *rd, raf_loc loc,
                                                      const char *fmt, ...) {
  rd->ok = false;
  if (!rd->ctx)
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  raf_diag_report(rd->ctx, loc, RAF_SEV_ERROR, "memory plan of @%s: %s",
                  rd->p->f->name, msg);
}

/* The list attribute `name` of s with s->nresults entries, or NULL. */
static const raf_attr *result_list(reader *rd, const raf_stmt *s,
                                   const char *name) {
  const raf_attr *a = raf_attrs_find(&s->attrs, name);
  if (a && a->kind == RAF_ATTR_INTS && a->val.u.ints.n != s->nresults) {
    bad(rd, a->loc.line ? a->loc : s->loc,
        "%s has %d entries for %d result%s", name, a->val.u.ints.n,
        s->nresults, s->nresults == 1 ? "" : "s");
    return NULL;
  }
  return a && a->kind == RAF_ATTR_INTS ? a : NULL;
}

static void read_donations(reader *rd) {
  raf_mem_plan *p = rd->p;
  raf_func *f = p->f;
  raf_stmt *ret = p->stmt[p->nstmts];
  bool checked_calls = false;
  for (int q = 0; q < f->nresults; q++) {
    const raf_attr *d = raf_attrs_find(&f->results[q].attrs, "donated");
    if (!d || d->kind != RAF_ATTR_BOOL || !d->val.u.b)
      continue;
    const raf_attr *up = raf_attrs_find(&f->results[q].attrs, "updates");
    raf_value *x = ret->operands[q].value;
    raf_mem_value *v = &p->v[raf_mem_id(p, x)];
    if (!up || up->kind != RAF_ATTR_VALUE || !up->val.u.value) {
      bad(rd, d->loc, "result %d is donated but updates no argument", q);
      continue;
    }
    if (!x->def || v->nreturned != 1) {
      bad(rd, d->loc, "donated result %d must be a statement's result "
          "returned once", q);
      continue;
    }
    if (!checked_calls && raf_mem_is_called(f))
      bad(rd, d->loc, "result %d is donated, but @%s is called (its "
          "callers own its arguments)", q, f->name);
    checked_calls = true;
    v->kind = RAF_MEM_DONATED;
    v->index = up->val.u.value->index;
    rd->donated_to[v->index] = q;
  }
}

/* Reads offsets and inplace of the statement at position k. A value that
 * overwrites one in an argument's buffer is in that buffer too. */
static void read_stmt(reader *rd, int k) {
  raf_mem_plan *p = rd->p;
  raf_stmt *s = p->stmt[k];
  const raf_attr *off = result_list(rd, s, "offsets");
  const raf_attr *inp = result_list(rd, s, "inplace");
  if (!off) {
    if (!raf_attrs_find(&s->attrs, "offsets"))
      bad(rd, s->loc, "%s has no offsets", raf_op_table[s->op].name);
    return;
  }
  for (int r = 0; r < s->nresults; r++) {
    raf_mem_value *v = &p->v[p->first[k] + r];
    int64_t o = off->val.u.ints.v[r];
    int64_t i = inp ? inp->val.u.ints.v[r] : -1;
    const char *name = v->value->name;
    if (i < -1 || i >= s->noperands) {
      bad(rd, s->loc, "inplace of %%%s names no operand", name);
      continue;
    }
    v->inplace = (int)i;
    raf_mem_value *u =
        i >= 0 ? &p->v[raf_mem_id(p, s->operands[i].value)] : NULL;
    bool in_arg = u && (u->kind == RAF_MEM_ARG || u->kind == RAF_MEM_DONATED);
    if (in_arg && v->kind == RAF_MEM_ARENA) {
      v->kind = RAF_MEM_DONATED;
      v->index = u->index;
    }
    if (v->kind == RAF_MEM_RESULT && o != -1)
      v->kind = RAF_MEM_ARENA; /* a returned value kept in the arena */
    if (v->kind == RAF_MEM_DONATED && v->returned >= 0 && o != -1) {
      v->staged = true; /* made in the arena, then moved */
      if (i >= 0)
        bad(rd, s->loc, "%%%s is staged, so it overwrites no operand", name);
    }
    if (v->kind == RAF_MEM_ARENA || v->staged) {
      if (o < 0 || o % RAF_MEM_ALIGN || o > p->arena ||
          v->bytes > p->arena - o)
        bad(rd, s->loc,
            "%%%s (%lld bytes) at offset %lld is not an aligned place in "
            "the arena of %lld bytes", name, (long long)v->bytes,
            (long long)o, (long long)p->arena);
      v->offset = o;
    } else if (o != -1) {
      bad(rd, s->loc, "%%%s is in an argument's buffer, so its offset must "
          "be -1, not %lld", name, (long long)o);
    }
    if (!u)
      continue;
    bool allowed = s->op == RAF_OP_CALL
                       ? raf_mem_call_inplace(s->callee, (int)i, r)
                       : raf_mem_op_inplace(s, (int)i);
    int uses = 0;
    for (int j = 0; j < s->noperands; j++)
      uses += s->operands[j].value == u->value;
    raf_dialect d = raf_stmt_dialect(s);
    const char *dialect =
        d == RAF_DIALECT_COUNT ? NULL : raf_dialect_get(d)->name;
    if (!allowed && dialect) /* planned before this dialect was chosen */
      bad(rd, s->loc, "%%%s cannot overwrite operand %lld (%%%s) of %s: "
          "dialect %s computes it out of place (run dispatch, with the "
          "device and dialects it runs on, before plan-memory)", name,
          (long long)i, u->value->name, raf_op_table[s->op].name, dialect);
    else if (!allowed || (s->op == RAF_OP_CALL && uses != 1))
      bad(rd, s->loc, "%%%s cannot overwrite operand %lld (%%%s) of %s", name,
          (long long)i, u->value->name, raf_op_table[s->op].name);
    else if (u->last != k)
      bad(rd, s->loc, "%%%s overwrites %%%s, which is read later", name,
          u->value->name);
    else if (in_arg && rd->donated_to[u->index] < 0)
      bad(rd, s->loc, "%%%s overwrites argument %%%s, whose buffer is not "
          "donated", name, p->f->args[u->index].value->name);
    else if (in_arg ? v->kind != RAF_MEM_DONATED || v->index != u->index
                    : v->kind != RAF_MEM_ARENA || v->offset != u->offset)
      bad(rd, s->loc, "%%%s overwrites %%%s but is not placed in its "
          "buffer", name, u->value->name);
  }
  for (int r = 0; r < s->nresults; r++) { /* one operand, one result */
    raf_mem_value *v = &p->v[p->first[k] + r];
    for (int q = 0; q < r; q++)
      if (v->inplace >= 0 && p->v[p->first[k] + q].inplace >= 0 &&
          s->operands[v->inplace].value ==
              s->operands[p->v[p->first[k] + q].inplace].value)
        bad(rd, s->loc, "%%%s and %%%s overwrite one operand",
            p->v[p->first[k] + q].value->name, v->value->name);
  }
}

/* Reads the scratch of the statement at position k: a planned one of the
 * size its kernel needs (raf_mem_scratch_of), at a place of the arena
 * aligned to RAF_MEM_SCRATCH_ALIGN (cuBLASLt's workspace needs 256). */
static void read_scratch(reader *rd, int k) {
  raf_mem_plan *p = rd->p;
  raf_stmt *s = p->stmt[k];
  const raf_attr *a = raf_attrs_find(&s->attrs, "scratch");
  if (!a || a->kind != RAF_ATTR_INT)
    return;
  int64_t o = a->val.u.i, bytes = raf_mem_scratch_of(s).bytes;
  raf_loc loc = a->loc.line ? a->loc : s->loc;
  if (bytes == 0)
    bad(rd, loc, "%s has a scratch but its kernel needs none",
        raf_op_table[s->op].name);
  else if (o < 0 || o % RAF_MEM_SCRATCH_ALIGN || o > p->arena ||
           bytes > p->arena - o)
    bad(rd, loc, "the scratch of %s (%lld bytes) at offset %lld is not a "
        "%d-byte aligned place in the arena of %lld bytes",
        raf_op_table[s->op].name,
        (long long)bytes, (long long)o, RAF_MEM_SCRATCH_ALIGN,
        (long long)p->arena);
  else
    p->scratch[k] = o;
}

/* Where a value lies for the overlap check: 0 the arena, 1 + a argument
 * a's buffer (donated), -1 nowhere the plan shares; and its offset. */
static int region(const raf_mem_value *v, int64_t *offset) {
  *offset = v->kind == RAF_MEM_ARENA ? v->offset : 0;
  if (v->kind == RAF_MEM_ARENA)
    return 0;
  if (v->kind == RAF_MEM_DONATED || v->kind == RAF_MEM_ARG)
    return 1 + v->index;
  return -1;
}

/* The first of live[0..n) (or of the statement's staged places) that
 * [off, off + bytes) of region `reg` meets, but `src`, or -1 (-2 for a
 * staged place). Only values read after position `after` count. */
static int meets(const raf_mem_plan *p, const int *live, int n,
                 const int64_t *staged, int nstaged, int reg, int64_t off,
                 int64_t bytes, int src, int after) {
  for (int j = 0; j < n; j++) {
    int64_t uo;
    const raf_mem_value *u = &p->v[live[j]];
    if (live[j] != src && u->last > after && region(u, &uo) == reg &&
        uo < off + bytes && off < uo + u->bytes)
      return live[j];
  }
  for (int j = 0; reg == 0 && j < nstaged; j++)
    if (staged[2 * j] < off + bytes && off < staged[2 * j] + staged[2 * j + 1])
      return -2;
  return -1;
}

/* No two values alive at once overlap in the arena or in a donated
 * argument's buffer (the argument itself included), but an operand and the
 * result that overwrites it. A staged result is in the arena during its
 * statement only, and in its argument's buffer after it. */
static void check_overlaps(reader *rd) {
  raf_mem_plan *p = rd->p;
  int *live = malloc(sizeof *live * (size_t)(p->nvalues + 1));
  int64_t *staged = NULL;
  int nlive = 0, most = 1;
  for (int k = 0; k < p->nstmts; k++)
    if (p->stmt[k]->nresults > most)
      most = p->stmt[k]->nresults;
  staged = malloc(sizeof *staged * 2 * (size_t)most);
  if (!live || !staged) {
    bad(rd, p->f->loc, "out of memory");
    free(live);
    free(staged);
    return;
  }
  for (int a = 0; a < p->f->nargs; a++)
    if (rd->donated_to[a] >= 0 && p->v[a].last >= 0)
      live[nlive++] = a;
  for (int k = 0; k < p->nstmts; k++) {
    raf_stmt *s = p->stmt[k];
    int nstaged = 0;
    for (int r = 0; r < s->nresults; r++) {
      int id = p->first[k] + r;
      raf_mem_value *v = &p->v[id];
      int64_t vo;
      int reg = region(v, &vo);
      if (reg < 0 || v->bytes == 0)
        continue;
      int src = v->inplace >= 0
                    ? raf_mem_id(p, s->operands[v->inplace].value)
                    : -1;
      int hit;
      if (v->staged &&
          (hit = meets(p, live, nlive, staged, nstaged, 0, v->offset,
                       v->bytes, -1, k - 1)) != -1) {
        bad(rd, s->loc, "%%%s is staged at [%lld, %lld), which %s%s%s "
            "takes", v->value->name, (long long)v->offset,
            (long long)(v->offset + v->bytes), hit >= 0 ? "%" : "",
            hit >= 0 ? p->v[hit].value->name : "another staged result",
            hit >= 0 ? ", alive," : "");
        continue;
      }
      if (v->staged) {
        staged[2 * nstaged] = v->offset;
        staged[2 * nstaged++ + 1] = v->bytes;
      }
      /* A staged result reaches its argument's buffer after its
       * statement: what is read there only until then does not count. */
      hit = meets(p, live, nlive, staged, reg == 0 ? nstaged : 0, reg, vo,
                  v->bytes, src, v->staged ? k : k - 1);
      if (hit == -2)
        bad(rd, s->loc, "%%%s [%lld, %lld) overlaps a staged result",
            v->value->name, (long long)vo, (long long)(vo + v->bytes));
      else if (hit >= 0 && reg == 0)
        bad(rd, s->loc, "%%%s [%lld, %lld) overlaps %%%s [%lld, %lld), "
            "which is alive", v->value->name, (long long)vo,
            (long long)(vo + v->bytes), p->v[hit].value->name,
            (long long)p->v[hit].offset,
            (long long)(p->v[hit].offset + p->v[hit].bytes));
      else if (hit >= 0)
        bad(rd, s->loc, "%%%s is put in the buffer of argument %%%s while "
            "%%%s, there too, is alive", v->value->name,
            p->f->args[v->index].value->name, p->v[hit].value->name);
      live[nlive++] = id;
    }
    if (p->scratch[k] >= 0) { /* alive with the operands and results */
      int64_t bytes = raf_mem_scratch_of(s).bytes;
      int hit = meets(p, live, nlive, staged, nstaged, 0, p->scratch[k],
                      bytes, -1, k - 1);
      if (hit != -1)
        bad(rd, s->loc, "the scratch of %s [%lld, %lld) overlaps %s%s, "
            "which is alive", raf_op_table[s->op].name,
            (long long)p->scratch[k], (long long)(p->scratch[k] + bytes),
            hit >= 0 ? "%" : "", hit >= 0 ? p->v[hit].value->name
                                          : "a staged result");
    }
    int kept = 0; /* drop what dies here */
    for (int j = 0; j < nlive; j++)
      if (p->v[live[j]].last > k)
        live[kept++] = live[j];
    nlive = kept;
  }
  free(live);
  free(staged);
}

raf_status raf_mem_read(raf_ctx *ctx, raf_func *f, raf_mem_plan *p) {
  if (raf_mem_analyze(f, p) != RAF_OK) {
    if (ctx)
      raf_diag_report(ctx, f->loc, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  reader rd = {ctx, p, NULL, true};
  const raf_attr *arena = raf_attrs_find(&f->attrs, "arena");
  p->planned = arena && arena->kind == RAF_ATTR_INT;
  if (!p->planned) {
    for (int k = 0; k < p->nstmts; k++) {
      raf_stmt *s = p->stmt[k];
      if (raf_attrs_find(&s->attrs, "offsets") ||
          raf_attrs_find(&s->attrs, "inplace") ||
          raf_attrs_find(&s->attrs, "scratch"))
        bad(&rd, s->loc,
            "offsets, inplace and scratch need {arena} on the function");
    }
    for (int q = 0; q < f->nresults; q++)
      if (raf_attrs_find(&f->results[q].attrs, "donated"))
        bad(&rd, f->loc, "donated needs {arena} on the function");
    return rd.ok ? RAF_OK : RAF_ERROR;
  }
  p->arena = arena->val.u.i;
  if (p->arena < 0)
    bad(&rd, arena->loc, "arena must be >= 0, not %lld",
        (long long)p->arena);
  rd.donated_to = malloc(sizeof *rd.donated_to * (size_t)(f->nargs + 1));
  if (!rd.donated_to) {
    bad(&rd, f->loc, "out of memory");
    return RAF_ERROR;
  }
  for (int a = 0; a < f->nargs; a++)
    rd.donated_to[a] = -1;
  read_donations(&rd);
  for (int k = 0; k < p->nstmts; k++) {
    read_stmt(&rd, k);
    read_scratch(&rd, k);
  }
  if (rd.ok)
    check_overlaps(&rd);
  free(rd.donated_to);
  return rd.ok ? RAF_OK : RAF_ERROR;
}

raf_status raf_mem_verify_module(raf_ctx *ctx, raf_module *m) {
  raf_status rc = RAF_OK;
  for (raf_func *f = m->first; f; f = f->next) {
    raf_mem_plan p;
    if (raf_mem_read(ctx, f, &p) != RAF_OK)
      rc = RAF_ERROR;
    raf_mem_free(&p);
  }
  return rc;
}

/* ---- Statistics ---------------------------------------------------------- */

/* Whether the executor runs the call at position k of p statement by
 * statement: it overwrites an operand in a way no compiled kernel can
 * (raf_mem_compiled_call_inplace), or its mark names no dialect that runs
 * it whole (raf_mem_call_compiled); in a module not yet dispatched, when
 * no dialect could (raf_mem_call_compiled_estimate). */
static bool interpreted(const raf_mem_plan *p, int k) {
  raf_stmt *s = p->stmt[k];
  if (s->op != RAF_OP_CALL)
    return false;
  for (int r = 0; r < s->nresults; r++) {
    int i = p->v[p->first[k] + r].inplace;
    if (i >= 0 && !raf_mem_compiled_call_inplace(s->callee, i, r))
      return true;
  }
  return p->dispatched ? !raf_mem_call_compiled(s)
                       : !raf_mem_call_compiled_estimate(s);
}

/* The values f's forward makes (raf_func_forward) that a statement of its
 * backward reads: what is kept from the loss to the gradients, PyTorch's
 * saved tensors. A value read only by the return is not saved. f has a
 * backward of its own when it has a loss, a statement besides the forward
 * and the return, and no call in its forward of a function that is not
 * {fused} (a step that calls @f_grad has its backward in the callee, which
 * has the figure); else out->saved is -1. */
static raf_status saved_for_backward(raf_func *f, raf_memory_stats *out) {
  out->saved = -1;
  bool *fwd;
  int n;
  if (raf_func_forward(f, &fwd, &n) != RAF_OK)
    return RAF_ERROR;
  if (!fwd)
    return RAF_OK;
  int64_t base = f->first->order;
  bool backward = false, own = true;
  for (raf_stmt *s = f->first; s->op != RAF_OP_RETURN; s = s->next) {
    bool in_fwd = fwd[s->order - base];
    backward |= !in_fwd;
    if (in_fwd && s->op == RAF_OP_CALL &&
        !raf_attrs_find(&s->callee->attrs, "fused"))
      own = false;
  }
  if (backward && own) {
    out->saved = 0;
    for (raf_stmt *s = f->first; s->op != RAF_OP_RETURN; s = s->next) {
      if (!fwd[s->order - base])
        continue;
      for (int r = 0; r < s->nresults; r++) {
        const raf_use *u = s->results[r]->uses;
        while (u && (u->user->op == RAF_OP_RETURN ||
                     fwd[u->user->order - base]))
          u = u->next;
        if (u) {
          out->saved += raf_mem_bytes(s->results[r]->type);
          out->nsaved++;
        }
      }
    }
  }
  free(fwd);
  return RAF_OK;
}

raf_status raf_mem_stats_of(raf_func *f, raf_memory_stats *out) {
  memset(out, 0, sizeof *out);
  if (saved_for_backward(f, out) != RAF_OK)
    return RAF_ERROR;
  raf_mem_plan p;
  if (raf_mem_read(NULL, f, &p) != RAF_OK) {
    raf_mem_free(&p);
    if (raf_mem_analyze(f, &p) != RAF_OK)
      return RAF_ERROR;
    p.planned = false;
  }
  out->planned = p.planned;
  out->arena = p.planned ? p.arena : 0;
  for (int i = 0; i < f->nargs; i++)
    out->args += p.v[i].bytes;
  raf_stmt *ret = p.stmt[p.nstmts];
  /* Planned, run from raf_exec_call: the arena is taken whole; results
   * written in the caller's places get buffers when their statements run,
   * copies (an argument returned, a value returned twice) at the end; the
   * calls run statement by statement add their arenas while they run. */
  int64_t own = 0, extra = 0;
  /* Unplanned: each value allocated at its statement, freed after its
   * last reader; arguments and returned values never freed. */
  int64_t cur = 0, live = 0, sum = 0;
  int64_t *dies = calloc((size_t)(p.nstmts + 1), sizeof *dies);
  if (!dies) {
    raf_mem_free(&p);
    return RAF_ERROR;
  }
  for (int id = f->nargs; id < p.nvalues; id++)
    if (p.v[id].returned < 0)
      dies[p.v[id].last] += p.v[id].bytes;
  for (int k = 0; k < p.nstmts; k++) {
    raf_stmt *s = p.stmt[k];
    int64_t made = 0;
    for (int r = 0; r < s->nresults; r++)
      made += p.v[p.first[k] + r].bytes;
    for (int r = 0; r < s->nresults; r++)
      if (p.v[p.first[k] + r].kind == RAF_MEM_RESULT)
        own += p.v[p.first[k] + r].bytes;
    raf_memory_stats cs;
    if (interpreted(&p, k) &&
        raf_mem_stats_of(s->callee, &cs) == RAF_OK) {
      /* What the call adds while it runs: the callee's arena and its own
       * calls' when planned; else what it allocates, its results included
       * (a planned caller copies them into its places and frees them). */
      int64_t n = cs.planned ? cs.arena + cs.calls : cs.live - cs.args;
      if (p.planned && n > out->calls)
        out->calls = n;
      if (own + n > extra)
        extra = own + n;
      if (cur + cs.live - cs.args > live)
        live = cur + cs.live - cs.args;
      sum += cs.unplanned - cs.args - cs.results;
    }
    cur += made;
    sum += made;
    if (cur > live)
      live = cur;
    cur -= dies[k];
  }
  free(dies);
  /* A returned argument, or a value returned twice, is copied. */
  for (int q = 0; q < ret->noperands; q++) {
    raf_mem_value *v = &p.v[raf_mem_id(&p, ret->operands[q].value)];
    if (!v->value->def || v->returned != q) {
      cur += v->bytes;
      sum += v->bytes;
      own += v->bytes;
    }
  }
  if (cur > live)
    live = cur;
  out->live = out->args + live;
  out->unplanned = out->args + sum;
  if (own > extra)
    extra = own;
  out->results = own;
  out->peak = out->args + out->arena + extra;
  raf_mem_free(&p);
  return RAF_OK;
}

size_t raf_module_memory_stats(raf_module *m, raf_memory_stats *out,
                               size_t cap) {
  size_t n = 0;
  for (raf_func *f = m->first; f; f = f->next, n++)
    if (n < cap) {
      if (raf_mem_stats_of(f, &out[n]) != RAF_OK)
        memset(&out[n], 0, sizeof out[n]);
      raf_cost c = raf_func_cost(f);
      out[n].func = f->name;
      out[n].flops = c.flops;
      out[n].moved = c.bytes;
    }
  return n;
}
