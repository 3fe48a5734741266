/* plan.c: the analysis of a fused function into a kernel plan (plan.h).
 *
 * Steps: check that every statement is one the lowering knows (ops,
 * dtypes, attributes); find the iteration space F from the row ops (or the
 * largest result); classify the results (full, row, uniform); walk every
 * use the kernel will evaluate, from the results and the row ops' inputs,
 * checking that row values are read at their own row, and collect the
 * leaf accesses; collapse F's dims as the leaf accesses allow.
 */
#include "codegen/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Maps ----------------------------------------------------------------- */

static void map_none(cg_map *m) { memset(m, -1, sizeof *m); }

cg_map cg_map_operand(const raf_type *ut, const raf_type *rt, cg_map m) {
  cg_map out;
  map_none(&out);
  int shift = rt->rank - ut->rank;
  for (int j = 0; j < ut->rank; j++)
    if (ut->dims[j] != 1 && j + shift >= 0) {
      out.lo[j] = m.lo[j + shift];
      out.hi[j] = m.hi[j + shift];
    }
  return out;
}

/* Maps the non-1 dims of a shape (vd, n) onto the F dims fd[0..m), in
 * order, by products: each gets a run of consecutive entries of fd that is
 * contiguous in F (nothing but size-1 F dims inside it), and every entry is
 * used. Returns 1 when it does, 0 when an F dim must be split first (*need
 * says which, and its outer extent), -1 when it cannot. */
static int partition(const cg_plan *p, const int64_t *vd, int n,
                     const int *fd, int m, cg_map *out, cg_split *need) {
  map_none(out);
  int k = 0;
  for (int j = 0; j < n; j++) {
    if (vd[j] == 1)
      continue;
    int64_t prod = 1;
    int start = k;
    while (prod < vd[j]) {
      if (k == m)
        return -1;
      int64_t e = p->dims[fd[k]];
      if (prod * e <= vd[j]) {
        prod *= e;
        k++;
        continue;
      }
      if (vd[j] % prod || e % (vd[j] / prod))
        return -1;
      need->dim = fd[k];
      need->outer = vd[j] / prod;
      return 0;
    }
    if (prod != vd[j])
      return -1;
    for (int q = start; q + 1 < k; q++)
      for (int d = fd[q] + 1; d < fd[q + 1]; d++)
        if (p->dims[d] != 1)
          return -1;
    out->lo[j] = (int8_t)fd[start];
    out->hi[j] = (int8_t)fd[k - 1];
  }
  return k == m ? 1 : -1;
}

int cg_map_full(const cg_plan *p, const raf_type *t, cg_map *out,
                cg_split *need) {
  int fd[CG_MAX_FDIMS], m = 0;
  for (int d = 0; d < p->rank; d++)
    if (p->dims[d] != 1)
      fd[m++] = d;
  return partition(p, t->dims, t->rank, fd, m, out, need);
}

cg_map cg_map_identity(const cg_plan *p, const raf_type *t) {
  cg_map out;
  cg_split need;
  int64_t numel = 1;
  for (int d = 0; d < p->rank; d++)
    numel *= p->dims[d];
  if (t->numel == numel && cg_map_full(p, t, &out, &need) == 1)
    return out;
  map_none(&out); /* right-aligned, dim for dim: a shape F broadcasts from */
  int shift = p->rank - t->rank;
  for (int j = 0; j < t->rank; j++)
    if (t->dims[j] != 1 && j + shift >= 0)
      out.lo[j] = out.hi[j] = (int8_t)(j + shift);
  return out;
}

int cg_map_row_split(const cg_plan *p, const raf_type *t, cg_map *out,
                     cg_split *need) {
  int fd[CG_MAX_FDIMS], m = 0;
  for (int d = 0; d < p->rank; d++)
    if (p->dims[d] != 1 && !p->inner[d])
      fd[m++] = d;
  return partition(p, t->dims, t->rank, fd, m, out, need);
}

bool cg_map_row(const cg_plan *p, const raf_type *t, cg_map *out) {
  cg_split need;
  return cg_map_row_split(p, t, out, &need) == 1;
}

int cg_map_reshape(const cg_plan *p, const raf_type *ut, const raf_type *rt,
                   cg_map m, cg_map *out, cg_split *need) {
  /* The F dims the result's elements run over, in its C order. */
  int fd[CG_MAX_FDIMS], n = 0;
  for (int j = 0; j < rt->rank; j++)
    for (int d = m.lo[j]; m.lo[j] >= 0 && d <= m.hi[j]; d++)
      if (p->dims[d] != 1) {
        if (n && fd[n - 1] >= d)
          return -1; /* not in F's order: a relayout, not a view */
        fd[n++] = d;
      }
  return partition(p, ut->dims, ut->rank, fd, n, out, need);
}

bool cg_map_equal(const cg_map *a, const cg_map *b, int rank) {
  for (int j = 0; j < rank; j++)
    if (a->lo[j] != b->lo[j] || a->hi[j] != b->hi[j])
      return false;
  return true;
}

void cg_leaf_coef(const cg_plan *p, const raf_type *t, cg_map m,
                  int64_t *coef) {
  for (int d = 0; d < p->rank; d++)
    coef[d] = 0;
  int64_t stride = 1;
  for (int j = t->rank - 1; j >= 0; j--) {
    int64_t inner = 1;
    for (int d = m.hi[j]; m.lo[j] >= 0 && d >= m.lo[j]; d--) {
      coef[d] += stride * inner;
      inner *= p->dims[d];
    }
    stride *= t->dims[j];
  }
}

/* ---- Statements the lowering knows ---------------------------------------- */

bool cg_is_total(const raf_stmt *s) {
  return s->op == RAF_OP_CROSS_ENTROPY &&
         strcmp(raf_stmt_attr_str(s, "reduction"), "none") != 0;
}

int cg_plan_tile(const cg_plan *p) {
  if (!p->has_rowops || p->ntotals || p->nchecks || p->ncouter != 1 ||
      p->ncdims < 2 || p->rows < 2 * CG_TILE)
    return 0;
  for (int c = 1; c < p->ncdims; c++) /* the outer dim is the innermost */
    if (p->cdims[c].last > p->cdims[0].last)
      return 0;
  for (int k = 0; k < p->nrowops; k++) {
    raf_opcode op = p->rowops[k]->op;
    if (op != RAF_OP_SUM && op != RAF_OP_MEAN && op != RAF_OP_MAX &&
        op != RAF_OP_MIN)
      return 0;
  }
  return CG_TILE;
}

bool cg_is_rowop(const raf_stmt *s) {
  switch (s->op) {
  case RAF_OP_SUM:
  case RAF_OP_MEAN:
  case RAF_OP_MAX:
  case RAF_OP_MIN:
  case RAF_OP_SOFTMAX:
  case RAF_OP_LOG_SOFTMAX:
  case RAF_OP_LAYER_NORM:
  case RAF_OP_CROSS_ENTROPY:
  case RAF_OP_SOFTMAX_GRAD:
  case RAF_OP_LOG_SOFTMAX_GRAD:
  case RAF_OP_CROSS_ENTROPY_GRAD:
    return true;
  case RAF_OP_MSE_LOSS:
    return strcmp(raf_stmt_attr_str(s, "reduction"), "none") != 0;
  default:
    return false;
  }
}

bool cg_rowop_is_full(const raf_stmt *s) {
  switch (s->op) {
  case RAF_OP_SOFTMAX:
  case RAF_OP_LOG_SOFTMAX:
  case RAF_OP_LAYER_NORM:
  case RAF_OP_SOFTMAX_GRAD:
  case RAF_OP_LOG_SOFTMAX_GRAD:
  case RAF_OP_CROSS_ENTROPY_GRAD:
    return true;
  default:
    return false;
  }
}

int cg_rowop_input(const raf_stmt *s) {
  return s->op == RAF_OP_CROSS_ENTROPY_GRAD ? 1 : 0;
}

/* The first-operand dtypes in which the lowering takes op: its row of
 * lang/codegen_ops.def (the FUSED rows of the dialects that compile
 * through codegen/, for either target), 0 for an op it does not take. */
static unsigned lowered_dtypes(raf_opcode op) {
  switch (op) {
#define CODEGEN_OP(o, dtypes)                                                  \
  case RAF_OP_##o:                                                             \
    return dtypes;
#include "lang/codegen_ops.def"
#undef CODEGEN_OP
  default:
    return 0;
  }
}

/* Whether the lowering takes s; else a phrase in why. The lowering takes
 * exactly the ops (and first-operand dtypes) of lang/codegen_ops.def;
 * test/unit/test_registry.c lowers a statement of every row, so a row the
 * lowering lacks fails it. */
static bool stmt_supported(const raf_stmt *s, char *why, size_t size) {
  const char *op = raf_op_table[s->op].name;
  raf_dtype dt = raf_stmt_key_dtype(s);
  unsigned dtypes = lowered_dtypes(s->op);
  if ((dtypes >> dt) & 1)
    return true;
  if (dtypes)
    snprintf(why, size, "no lowering of %s for %s", op, raf_dtype_name(dt));
  else
    snprintf(why, size, "no lowering of %s", op);
  return false;
}

/* ---- The iteration space -------------------------------------------------- */

/* The row op's input shape and reduced dims. */
static const raf_type *rowop_space(const raf_stmt *s, bool *inner) {
  const raf_type *x = s->operands[cg_rowop_input(s)].value->type;
  for (int d = 0; d < x->rank; d++)
    inner[d] = false;
  switch (s->op) {
  case RAF_OP_SUM:
  case RAF_OP_MEAN:
  case RAF_OP_MAX:
  case RAF_OP_MIN: {
    raf_attr_value axes;
    if (!raf_stmt_attr(s, "axes", &axes)) {
      for (int d = 0; d < x->rank; d++)
        inner[d] = true;
      break;
    }
    for (int i = 0; i < axes.u.ints.n; i++) {
      int64_t a = axes.u.ints.v[i];
      inner[a < 0 ? a + x->rank : a] = true;
    }
    break;
  }
  case RAF_OP_SOFTMAX:
  case RAF_OP_LOG_SOFTMAX:
  case RAF_OP_SOFTMAX_GRAD:
  case RAF_OP_LOG_SOFTMAX_GRAD: {
    int64_t a = raf_stmt_attr_int(s, "axis");
    inner[a < 0 ? a + x->rank : a] = true;
    break;
  }
  case RAF_OP_LAYER_NORM: {
    int64_t a = raf_stmt_attr_int(s, "axis");
    for (int d = (int)(a < 0 ? a + x->rank : a); d < x->rank; d++)
      inner[d] = true;
    break;
  }
  case RAF_OP_CROSS_ENTROPY:
  case RAF_OP_CROSS_ENTROPY_GRAD:
    inner[x->rank - 1] = true;
    break;
  default: /* mse_loss mean/sum */
    for (int d = 0; d < x->rank; d++)
      inner[d] = true;
    break;
  }
  for (int d = 0; d < x->rank; d++)
    inner[d] = inner[d] && x->dims[d] != 1;
  return x;
}

static bool find_space(const raf_func *f, cg_plan *p, char *why,
                       size_t size) {
  const raf_type *F = NULL;
  for (const raf_stmt *s = f->first; s; s = s->next) {
    if (!cg_is_rowop(s))
      continue;
    bool inner[RAF_MAX_RANK];
    const raf_type *x = rowop_space(s, inner);
    if (!F) {
      F = x;
      memcpy(p->inner, inner, sizeof inner);
      continue;
    }
    bool same = F == x;
    for (int d = 0; same && d < x->rank; d++)
      same = p->inner[d] == inner[d];
    if (!same) {
      char a[64], b[64];
      raf_type_str(F, a, sizeof a);
      raf_type_str(x, b, sizeof b);
      if (F->dims == x->dims || strcmp(a, b) == 0)
        snprintf(why, size, "row ops over different axes of %s", a);
      else
        snprintf(why, size, "row ops over different shapes (%s and %s)", a,
                 b);
      return false;
    }
  }
  p->has_rowops = F != NULL;
  if (!F) { /* elementwise: the largest result */
    const raf_stmt *ret = raf_func_return(f);
    for (int i = 0; ret && i < ret->noperands; i++) {
      const raf_type *t = ret->operands[i].value->type;
      if (!F || t->numel > F->numel)
        F = t;
    }
    if (!F) {
      snprintf(why, size, "no results");
      return false;
    }
    memset(p->inner, 0, sizeof p->inner);
  }
  p->rank = F->rank;
  memcpy(p->dims, F->dims, sizeof(int64_t) * (size_t)F->rank);
  return true;
}

/* ---- Walking the uses ----------------------------------------------------- */

/* Where a value is evaluated: at a point of a row, at the row (no inner
 * index), or in the final step after every row (no index at all). */
typedef enum level { AT_POINT, AT_ROW, AT_FINAL } level;

typedef struct visit {
  const raf_value *v;
  cg_map map;
  level at;
} visit;

typedef struct walker {
  cg_plan *p;
  visit *seen;
  int nseen, capseen;
  int64_t (*leaves)[CG_MAX_FDIMS];
  int nleaves, capleaves;
  char *why;
  size_t size;
  bool ok;
  bool split; /* failed because F must be refined first: need says how */
  cg_split need;
} walker;

static bool fail(walker *w, const char *fmt, const char *a, const char *b) {
  if (w->ok)
    snprintf(w->why, w->size, fmt, a, b);
  w->ok = false;
  return false;
}

static void add_leaf(walker *w, const raf_type *t, cg_map m) {
  if (w->nleaves == w->capleaves) {
    int cap = w->capleaves ? 2 * w->capleaves : 16;
    void *n = realloc(w->leaves, sizeof *w->leaves * (size_t)cap);
    if (!n) {
      fail(w, "out of memory%s%s", "", "");
      return;
    }
    w->leaves = n;
    w->capleaves = cap;
  }
  cg_leaf_coef(w->p, t, m, w->leaves[w->nleaves++]);
}

/* Whether a leaf under m reads inner indices. */
static bool reads_inner(const cg_plan *p, const raf_type *t, cg_map m) {
  for (int j = 0; j < t->rank; j++)
    for (int d = m.lo[j]; m.lo[j] >= 0 && d <= m.hi[j]; d++)
      if (p->inner[d] && p->dims[d] != 1)
        return true;
  return false;
}

/* A map function's answer: 1 goes on; 0 asks for F to be split (the plan
 * starts again), -1 fails with the message. */
static bool mapped(walker *w, int r, const cg_split *need, const char *fmt,
                   const char *a) {
  if (r == 1)
    return true;
  if (r == 0 && w->ok) {
    w->split = true;
    w->need = *need;
  }
  return fail(w, fmt, a, "");
}

static bool walk(walker *w, const raf_value *v, cg_map m, level at);

static bool walk_leaf(walker *w, const raf_value *v, cg_map m, level at) {
  if (at != AT_POINT && reads_inner(w->p, v->type, m))
    return fail(w, "%%%s is read inside a row at row level%s", v->name, "");
  add_leaf(w, v->type, m);
  return w->ok;
}

static bool walk(walker *w, const raf_value *v, cg_map m, level at) {
  for (int i = 0; i < w->nseen; i++)
    if (w->seen[i].v == v && w->seen[i].at == at &&
        cg_map_equal(&w->seen[i].map, &m, v->type->rank))
      return true;
  if (w->nseen == w->capseen) {
    int cap = w->capseen ? 2 * w->capseen : 32;
    void *n = realloc(w->seen, sizeof *w->seen * (size_t)cap);
    if (!n)
      return fail(w, "out of memory%s%s", "", "");
    w->seen = n;
    w->capseen = cap;
  }
  w->seen[w->nseen++] = (visit){v, m, at};
  const raf_stmt *s = v->def;
  if (!s)
    return walk_leaf(w, v, m, at);
  const char *op = raf_op_table[s->op].name;
  if (s->op == RAF_OP_CONSTANT) {
    if (s->cdata->splat || v->type->numel <= 1)
      return true;
    return walk_leaf(w, v, m, at);
  }
  if (cg_is_total(s)) {
    if (at != AT_FINAL)
      return fail(w, "the result of %s (a sum over rows) is read inside the "
                  "rows%s", op, "");
    return true;
  }
  if (cg_is_rowop(s)) {
    if (at == AT_FINAL)
      return fail(w, "the result of %s is read after the rows%s", op, "");
    cg_map want;
    cg_split need;
    bool full = cg_rowop_is_full(s);
    if (!mapped(w, full ? cg_map_full(w->p, v->type, &want, &need)
                        : cg_map_row_split(w->p, v->type, &want, &need),
                &need, "the result of %s has a shape the rows do not have",
                op))
      return false;
    if (!cg_map_equal(&want, &m, v->type->rank) || (full && at != AT_POINT))
      return fail(w, "the result of %s is read across rows%s", op, "");
    return true; /* its inputs are walked with the row ops */
  }
  if (s->op == RAF_OP_RESHAPE) { /* the same elements, viewed anew */
    const raf_value *u = s->operands[0].value;
    cg_map um;
    cg_split need;
    if (!mapped(w, cg_map_reshape(w->p, u->type, v->type, m, &um, &need),
                &need,
                "a reshape to %%%s does not line up with the iteration space",
                v->name))
      return false;
    return walk(w, u, um, at);
  }
  for (int i = 0; i < s->noperands; i++) {
    const raf_value *u = s->operands[i].value;
    if (!walk(w, u, cg_map_operand(u->type, v->type, m), at))
      return false;
  }
  return true;
}

/* The inputs a row op reads, at the points of its rows. */
/* The labels of cross_entropy or its gradient, one per row: an argument,
 * checked by the runtime before the kernel runs, or a constant, checked
 * here. */
static bool walk_labels(walker *w, const raf_stmt *s, const raf_value *x,
                        const raf_value *u) {
  cg_map rm;
  int64_t classes = x->type->dims[x->type->rank - 1];
  int64_t ignore = raf_stmt_attr_int(s, "ignore_index");
  bool constant = u->def && u->def->op == RAF_OP_CONSTANT;
  const char *op = raf_op_table[s->op].name;
  cg_split need;
  if (u->def && !constant)
    return fail(w, "%s's labels are neither an argument of the fused "
                "function nor a constant%s", op, "");
  if (!mapped(w, cg_map_row_split(w->p, u->type, &rm, &need), &need,
              "%s's labels do not have the rows' shape", op))
    return false;
  if (constant) {
    const raf_const *c = u->def->cdata;
    for (int64_t k = 0; k < c->count; k++) {
      int64_t label = raf_const_get_i64(u->type->dtype, c, k);
      if (label != ignore && (label < 0 || label >= classes))
        return fail(w, "%s's constant labels are out of range%s", op, "");
    }
  } else if (w->p->nchecks == CG_MAX_CHECKS) {
    return fail(w, "more than 8 cross_entropy statements%s%s", "", "");
  } else {
    w->p->checks[w->p->nchecks++] = (cg_label_check){
        u->index, classes, ignore, s, s->op == RAF_OP_CROSS_ENTROPY_GRAD};
  }
  return walk(w, u, rm, AT_ROW);
}

/* The operands a row op reads: its input x at the points of its rows, the
 * operands of x's shape (or one that broadcasts to it) alike, labels and
 * cross_entropy_grad's dy per row (or once, for "mean" and "sum"). */
static bool walk_rowop(walker *w, const raf_stmt *s) {
  int xi = cg_rowop_input(s);
  const raf_value *x = s->operands[xi].value;
  cg_map id;
  cg_split need;
  if (!mapped(w, cg_map_full(w->p, x->type, &id, &need), &need,
              "the input of %s does not have the rows' shape",
              raf_op_table[s->op].name))
    return false;
  for (int i = 0; i < s->noperands; i++) {
    const raf_value *u = s->operands[i].value;
    bool labels = (s->op == RAF_OP_CROSS_ENTROPY && i == 1) ||
                  (s->op == RAF_OP_CROSS_ENTROPY_GRAD && i == 2);
    bool ok;
    if (labels) {
      ok = walk_labels(w, s, x, u);
    } else if (s->op == RAF_OP_CROSS_ENTROPY_GRAD && i == 0) {
      cg_map m;
      if (u->type->numel == 1)
        map_none(&m);
      else if (!mapped(w, cg_map_row_split(w->p, u->type, &m, &need), &need,
                       "cross_entropy_grad's dy has a shape the rows do not "
                       "have%s", ""))
        return false;
      ok = walk(w, u, m, AT_ROW);
    } else {
      ok = walk(w, u, cg_map_operand(u->type, x->type, id), AT_POINT);
    }
    if (!ok)
      return false;
  }
  return true;
}

/* Whether v is computed from a statement `is` picks: a forward pass over
 * the statements, marking those under one. */
static bool under(const raf_func *f, const raf_value *v,
                  bool (*is)(const raf_stmt *)) {
  const raf_stmt *marked[512];
  int n = 0;
  for (const raf_stmt *s = f->first; s; s = s->next) {
    bool mark = is(s);
    for (int i = 0; !mark && i < s->noperands; i++)
      for (int k = 0; !mark && k < n; k++)
        mark = marked[k] == s->operands[i].value->def;
    if (s == v->def)
      return mark;
    if (mark && n == 512)
      return true; /* too many to track: assume the worst */
    if (mark)
      marked[n++] = s;
  }
  return false;
}

/* Whether t broadcasts to F (NumPy, right-aligned). */
static bool broadcasts_to_space(const cg_plan *p, const raf_type *t) {
  int shift = p->rank - t->rank;
  for (int j = 0; j < t->rank; j++)
    if (t->dims[j] != 1 && (j + shift < 0 || t->dims[j] != p->dims[j + shift]))
      return false;
  return true;
}

/* Classifies result i and walks what it reads. */
static bool classify(walker *w, int i, const raf_value *v) {
  cg_plan *p = w->p;
  const raf_type *t = v->type;
  cg_output *o = &p->out[i];
  o->value = v;
  map_none(&o->map);
  char a[64], b[64];
  raf_type_str(t, a, sizeof a);
  snprintf(b, sizeof b, "%%%s", v->name);
  int64_t numel = 1;
  for (int d = 0; d < p->rank; d++)
    numel *= p->dims[d];
  cg_split need;
  int full = t->numel == numel ? cg_map_full(p, t, &o->map, &need) : -1;
  if (full == 0)
    return mapped(w, 0, &need, "%s", b);
  int row = 0;
  if (p->has_rowops && full != 1 &&
      (row = cg_map_row_split(p, t, &o->map, &need)) == 0)
    return mapped(w, 0, &need, "%s", b);
  level at = AT_ROW;
  if (under(p->f, v, cg_is_total)) {
    if (t->numel != 1)
      return fail(w, "result %s (%s) is more than one element computed "
                  "after the rows", b, a);
    o->cls = CG_OUT_FINAL;
    map_none(&o->map);
    at = AT_FINAL;
  } else if (full == 1) {
    o->cls = CG_OUT_FULL;
    at = AT_POINT;
  } else if (t->numel == 1 && !under(p->f, v, cg_is_rowop)) {
    o->cls = CG_OUT_UNIFORM;
    map_none(&o->map);
  } else if (row == 1) {
    o->cls = CG_OUT_ROW;
  } else if (broadcasts_to_space(p, t)) {
    o->cls = CG_OUT_PART;
    o->map = cg_map_identity(p, t);
    at = AT_POINT;
  } else {
    return fail(w, "result %s (%s) does not fit the iteration space", b, a);
  }
  if (!walk(w, v, o->map, at))
    return false;
  if (at != AT_FINAL)
    add_leaf(w, t, o->map);
  return w->ok;
}

/* Collapses F's dims over the leaf accesses. */
static void collapse(cg_plan *p, int64_t (*leaves)[CG_MAX_FDIMS], int n) {
  p->ncdims = p->ncouter = 0;
  for (int group = 0; group < 2; group++) {
    int last = -1;
    for (int d = 0; d < p->rank; d++) {
      if (p->dims[d] == 1 || (int)p->inner[d] != group)
        continue;
      bool merge = last >= 0;
      for (int l = 0; merge && l < n; l++)
        merge = leaves[l][last] == leaves[l][d] * p->dims[d];
      if (merge) {
        p->cdims[p->ncdims - 1].extent *= p->dims[d];
        p->cdims[p->ncdims - 1].last = d;
      } else {
        p->cdims[p->ncdims++] = (cg_cdim){p->dims[d], d};
      }
      last = d;
    }
    if (group == 0)
      p->ncouter = p->ncdims;
  }
  /* An elementwise kernel walks its last dim inside a row when its dims do
   * not collapse into one. */
  if (!p->has_rowops && p->ncdims >= 2)
    p->ncouter = p->ncdims - 1;
  p->rows = p->cols = 1;
  for (int c = 0; c < p->ncdims; c++)
    *(c < p->ncouter ? &p->rows : &p->cols) *= p->cdims[c].extent;
  for (int d = 0; d < p->rank; d++)
    if (p->dims[d] == 0)
      p->rows = 0;
}

/* Splits F dim d into outer x (extent / outer). */
static bool split_dim(cg_plan *p, cg_split sp) {
  if (p->rank == CG_MAX_FDIMS || sp.outer <= 1 ||
      sp.outer >= p->dims[sp.dim] || p->dims[sp.dim] % sp.outer)
    return false;
  for (int d = p->rank; d > sp.dim + 1; d--) {
    p->dims[d] = p->dims[d - 1];
    p->inner[d] = p->inner[d - 1];
  }
  p->dims[sp.dim + 1] = p->dims[sp.dim] / sp.outer;
  p->inner[sp.dim + 1] = p->inner[sp.dim];
  p->dims[sp.dim] = sp.outer;
  p->rank++;
  return true;
}

/* One analysis with F refined by splits[0..nsplits). */
static bool attempt(const raf_func *f, cg_plan *p, const cg_split *splits,
                    int nsplits, cg_split *need, bool *again, char *why,
                    size_t size) {
  const raf_stmt *ret = raf_func_return(f);
  memset(p, 0, sizeof *p);
  p->f = f;
  *again = false;
  for (const raf_stmt *s = f->first; s; s = s->next) {
    if (s->op == RAF_OP_RETURN)
      continue;
    if (!stmt_supported(s, why, size))
      return false;
    p->nstmts++;
    p->nrowops += cg_is_rowop(s);
  }
  if (!find_space(f, p, why, size))
    return false;
  for (int i = 0; i < nsplits; i++)
    if (!split_dim(p, splits[i])) {
      snprintf(why, size, "reshapes that do not line up");
      return false;
    }
  p->out = calloc((size_t)ret->noperands + 1, sizeof *p->out);
  p->rowops = calloc((size_t)p->nrowops + 1, sizeof *p->rowops);
  walker w = {.p = p, .why = why, .size = size, .ok = p->out && p->rowops};
  if (!w.ok)
    snprintf(why, size, "out of memory");
  p->nout = ret->noperands;
  int k = 0;
  for (const raf_stmt *s = f->first; w.ok && s; s = s->next)
    if (cg_is_rowop(s)) {
      p->rowops[k++] = s;
      p->ntotals += cg_is_total(s);
      walk_rowop(&w, s);
    }
  for (int i = 0; w.ok && i < ret->noperands; i++)
    classify(&w, i, ret->operands[i].value);
  if (w.ok && f->nargs + f->nresults + 2 * p->ntotals > CG_MAX_BUFS)
    fail(&w, "more than %s arguments and results%s", "192", "");
  if (w.ok)
    collapse(p, w.leaves, w.nleaves);
  free(w.seen);
  free(w.leaves);
  if (!w.ok) {
    cg_plan_free(p);
    *again = w.split;
    *need = w.need;
  }
  return w.ok;
}

bool cg_plan_make(const raf_func *f, cg_plan *p, char *why, size_t size) {
  memset(p, 0, sizeof *p);
  const raf_attr *fused = raf_attrs_find(&f->attrs, "fused");
  if (!fused || fused->kind != RAF_ATTR_BOOL || !fused->val.u.b) {
    snprintf(why, size, "@%s is not a fused function", f->name);
    return false;
  }
  if (!raf_func_return(f)) {
    snprintf(why, size, "@%s has no return", f->name);
    return false;
  }
  /* A reshape that splits a dim of F refines F and starts again. */
  cg_split splits[CG_MAX_FDIMS];
  for (int n = 0; n < CG_MAX_FDIMS; n++) {
    bool again;
    if (attempt(f, p, splits, n, &splits[n], &again, why, size))
      return true;
    if (!again)
      return false;
  }
  snprintf(why, size, "reshapes that split F into more than %d dims",
           CG_MAX_FDIMS);
  return false;
}

void cg_plan_free(cg_plan *p) {
  free(p->out);
  free(p->rowops);
  p->out = NULL;
  p->rowops = NULL;
}
