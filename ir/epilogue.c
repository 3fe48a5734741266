/* epilogue.c: which statement groups are one cuBLASLt matmul with an
 * epilogue (the forms are listed in ir/epilogue.h).
 *
 * The fuse pass, the dispatch rule and the cublas dialect all ask this one
 * function, so that a group the pattern makes is always one the dialect
 * claims and runs as a whole, and never one that would fall back to
 * running statement by statement.
 *
 * The reading is a walk down a chain: from the product, each statement of
 * the group reads the value before it, and only the gelu's input may be
 * read outside the group as well (it is cuBLASLt's aux output). cuBLASLt's
 * order is fixed: bias and residual are added before the activation, and
 * the activation (or its derivative) comes last. A residual is not taken
 * under a gelu: cuBLASLt documents the bias before its GELU, not where C
 * enters, so that group stays two kernels.
 */
#include "ir/epilogue.h"

#include <string.h>

enum { MAX_MEMBERS = 8 };

static bool is_tanh_gelu(const raf_stmt *s) {
  const char *a = raf_stmt_attr_str(s, "approximate");
  return a && strcmp(a, "tanh") == 0;
}

/* matmul(a, b) that is one GEMM, all of one dtype (which dtypes, the
 * dialect's FUSED rows say: its traits check them): a 2-D b,
 * and a 2-D a or one whose leading dims fold into its rows
 * (x [B, T, C] @ w [C, F]). */
static bool plain_product(const raf_stmt *s) {
  if (s->op != RAF_OP_MATMUL || s->noperands != 2 || s->nresults != 1)
    return false;
  const raf_type *a = s->operands[0].value->type,
                 *b = s->operands[1].value->type, *r = s->results[0]->type;
  raf_dtype dt = r->dtype;
  return a->rank >= 2 &&
         b->rank == 2 && r->rank == a->rank && a->dtype == dt &&
         b->dtype == dt &&
         (a->rank == 2 || !raf_stmt_attr_bool(s, "transpose_a"));
}

/* sum(dy) {axes = [0]} of the product's b = dy, with the product
 * x^T dy: the bias gradient cuBLASLt reduces from its A operand (raf's b)
 * over the product's k (raf's M). */
static bool bias_grad(const raf_stmt *mm, const raf_stmt *sum,
                      raf_epilogue *e) {
  raf_attr_value axes;
  const raf_value *dy = mm->operands[1].value;
  if (sum->op != RAF_OP_SUM || sum->nresults != 1 ||
      sum->operands[0].value != dy || mm->operands[0].value->type->rank != 2 ||
      !raf_stmt_attr_bool(mm, "transpose_a") ||
      raf_stmt_attr_bool(mm, "transpose_b") ||
      !raf_stmt_attr(sum, "axes", &axes) || axes.u.ints.n != 1 ||
      (axes.u.ints.v[0] != 0 && axes.u.ints.v[0] != -2))
    return false;
  const raf_type *t = sum->results[0]->type;
  if (t->rank != 1 || t->dims[0] != dy->type->dims[1] ||
      t->dtype != dy->type->dtype)
    return false;
  e->kind = RAF_EPILOGUE_BIAS_GRAD;
  e->bias_grad = sum->results[0];
  e->out = mm->results[0];
  return true;
}

/* The member that reads v, when exactly one does. */
static const raf_stmt *sole_reader(const raf_stmt *const *m, int n,
                                   const bool *used, const raf_value *v) {
  const raf_stmt *found = NULL;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m[i]->noperands; j++)
      if (m[i]->operands[j].value == v) {
        if (found || used[i])
          return NULL;
        found = m[i];
        break;
      }
  return found;
}

/* Reads statement s, which reads cur (the chain so far), into e. */
static bool chain_step(raf_epilogue *e, const raf_stmt *s,
                       const raf_value *cur, bool cur_escapes) {
  if (s->nresults != 1 || e->gelu || e->kind == RAF_EPILOGUE_DGELU)
    return false; /* the activation is last */
  /* Only the gelu's input may be read outside the group too. */
  if (cur_escapes && s->op != RAF_OP_GELU)
    return false;
  const raf_type *t = cur->type;
  if (s->op == RAF_OP_ADD && s->noperands == 2) {
    const raf_value *o = s->operands[0].value == cur ? s->operands[1].value
                                                     : s->operands[0].value;
    if (o == cur || !raf_type_equal(s->results[0]->type, t))
      return false;
    if (!e->bias && o->type->rank == 1 && o->type->dtype == t->dtype &&
        o->type->dims[0] == t->dims[t->rank - 1]) {
      e->bias = o;
      return true;
    }
    if (!e->residual && raf_type_equal(o->type, t)) {
      e->residual = o;
      return true;
    }
    return false;
  }
  if (s->op == RAF_OP_GELU && is_tanh_gelu(s) && !e->residual) {
    e->gelu = true;
    e->aux = cur_escapes ? cur : NULL;
    return true;
  }
  if (s->op == RAF_OP_GELU_GRAD && is_tanh_gelu(s) &&
      s->operands[0].value == cur && cur == e->matmul->results[0] &&
      s->operands[1].value != cur &&
      raf_type_equal(s->operands[1].value->type, t)) {
    e->kind = RAF_EPILOGUE_DGELU;
    e->aux = s->operands[1].value;
    return true;
  }
  return false;
}

bool raf_epilogue_match(const raf_stmt *const *stmts, int n,
                        bool (*escapes)(const raf_value *v, void *arg),
                        void *arg, raf_epilogue *out) {
  if (n < 2 || n > MAX_MEMBERS)
    return false;
  raf_epilogue e = {0};
  bool used[MAX_MEMBERS] = {0};
  for (int i = 0; i < n; i++)
    if (plain_product(stmts[i])) {
      if (e.matmul)
        return false;
      e.matmul = stmts[i];
      used[i] = true;
    }
  if (!e.matmul)
    return false;
  if (n == 2) { /* the bias gradient's pair */
    const raf_stmt *other = stmts[used[0] ? 1 : 0];
    if (other->op == RAF_OP_SUM) {
      if (!bias_grad(e.matmul, other, &e))
        return false;
      if (out)
        *out = e;
      return true;
    }
  }
  e.kind = RAF_EPILOGUE_FORWARD;
  const raf_value *cur = e.matmul->results[0];
  for (int taken = 1; taken < n; taken++) {
    const raf_stmt *s = sole_reader(stmts, n, used, cur);
    if (!s || !chain_step(&e, s, cur, escapes(cur, arg)))
      return false;
    for (int i = 0; i < n; i++)
      used[i] |= stmts[i] == s;
    cur = s->results[0];
  }
  e.out = cur;
  if (out)
    *out = e;
  return true;
}

static bool returned(const raf_value *v, void *arg) {
  (void)arg;
  for (const raf_use *u = v->uses; u; u = u->next)
    if (u->user->op == RAF_OP_RETURN)
      return true;
  return false;
}

bool raf_epilogue_of_func(const raf_func *f, raf_epilogue *out) {
  const raf_stmt *m[MAX_MEMBERS];
  int n = 0;
  for (const raf_stmt *s = f->first; s; s = s->next) {
    if (s->op == RAF_OP_RETURN)
      continue;
    if (n == MAX_MEMBERS)
      return false;
    m[n++] = s;
  }
  return raf_epilogue_match(m, n, returned, NULL, out);
}
