/* fuse.c: group statements into fused functions, in the manner of TVM's
 * FuseOps and XLA's loop and input fusion.
 *
 * Each group becomes `func @fused_N(inputs) -> (results) {fused} { ... }`
 * and is replaced in its function by `%r... = call @fused_N(%inputs...)`.
 * Forward, backward and optimizer code are alike to the pass: they are all
 * ordinary ops, so it is meant to run after `inline`, on a training step
 * that is one function. The executor runs a fused function statement by
 * statement; codegen lowers it to one kernel, which is why every rule below
 * keeps a group to one iteration space.
 *
 * What may join a group (the op table's fusion column):
 *  - ELEMWISE and BROADCAST ops (broadcast_to included), and reshape,
 *    which keeps the row-major order of the elements and so is
 *    elementwise over their linear index;
 *  - transpose and slice, only as index maps over an input: the group
 *    must not compute their operand (a group is one pass over one index
 *    space, and a transpose of a value computed in that pass would need
 *    another);
 *  - REDUCE ops (sum, mean, max, min, argmax, softmax, log_softmax,
 *    layer_norm, cross_entropy, mse_loss, and the backward ops marked
 *    REDUCE), at most one per group: its anchor;
 *  - scalar and splat constants are not members: each group that uses one
 *    gets its own copy, at the top of the fused function, and the original
 *    goes when nothing else uses it. Dense constants are inputs.
 * Nothing else joins: matmul and conv2d (OUT_FUSABLE), OPAQUE ops, calls,
 * concat, split, take and slice_grad stay as they are, and so does a
 * statement with several results or an attribute naming a value. What a
 * library kernel could absorb around a matmul is a dialect's business: see
 * the patterns below.
 *
 * Iteration spaces. Every member has a number of elements (its result's).
 * A group without a reduction (a loop group) has one: all its members have
 * the same element count D (broadcasting operands come from outside, or
 * are constants). A group with a reduction anchor R has two: I, the
 * largest element count among R's operands, and O, R's result's. Relative
 * to R a member is PRE (R depends on it), POST (it depends on R) or SIDE
 * (neither), and:
 *  - when I == O (softmax, log_softmax, layer_norm, their gradients,
 *    cross_entropy_grad: row ops) every member has I elements;
 *  - else PRE members have I elements (input fusion: the producers of the
 *    reduced operand), POST members O (the epilogue: elementwise consumers
 *    of the reduction's output), SIDE members I or O, and no member of O
 *    elements feeds one of I (no broadcast back over the reduced data in
 *    the same pass: `x - mean(x)` is a second kernel).
 *
 * The walk. Statements are visited in order; each fusable statement starts
 * as a group of its own and is merged with the group of each operand's
 * defining statement in turn, when the rules above allow it, the merged
 * group has at most max-group-size statements (option, default 1024, at
 * least 2), and the merge keeps the program acyclic. So groups grow from
 * producers to consumers: an elementwise chain becomes one group, a
 * reduction absorbs the group of its producers, and its consumers join it
 * after. The optimizer's per-parameter update (an elementwise chain over
 * the parameter's shape, with scalar operands computed once outside or
 * copied in as constants) becomes one group with several results: the new
 * param and its new states.
 *
 * Acyclicity. Contracting each group to one node must leave a DAG. Two
 * groups may merge only when no path leads from one to the other through
 * anything outside both, where "through" is taken in the contracted graph
 * (a path entering a third group may leave it from any of its members).
 * So statement positions do not bound such a path: a group with members
 * on both sides of another group's statements can be entered at its last
 * member and left from its first, and a path through it goes back in
 * program order. The pass keeps instead a topological order of the
 * contracted graph, a rank per group (at first each statement's
 * position), and a path between groups of ranks lo < hi only passes
 * through groups ranked between them. A merge walks forward from the two
 * groups and backward to them over that range: a walk that comes back
 * into the pair means a cycle, and the merge is refused; otherwise the
 * groups reached backward and forward take, in their own order, the
 * lowest and the highest of the ranks involved, and the merged group one
 * in between (Pearce and Kelly's reordering of a dynamic topological
 * order, local to the range). A walk that visits more than 65536
 * statements gives up and the merge is refused: refusing is always safe.
 *
 * What becomes a fused function. A group is kept when it has at least two
 * members that are not reshapes (a group of one statement, or one
 * statement and a free reshape, is left alone), or when its one such
 * member is elementwise over at least 2^16 elements: a compiled loop runs
 * it tens of times faster than the reference kernel would (ResNet's relu
 * gradient, a `where` between a pooling gradient and a batch_norm
 * gradient, took 10% of its step on cpu-ref); at most 64 inputs and 64
 * results (the executor's limit on a call), at least one result used
 * outside it, and at least one input (a group that reads only constants
 * computes a constant: canonicalize's business). A reshape at the end of a
 * group, read only outside it, is left out of it: it would only be a
 * second copy of a result. The function's arguments are the values the
 * group reads from outside, in order of first use, named as those values;
 * its results are the members' results used outside the group or
 * returned, in statement order. It keeps the members' names, attributes
 * (a `dialect` included) and locations. The call takes the results' names
 * and the location of the group's first statement. Fused functions are
 * named @fused_0, @fused_1, ... (skipping names taken), in order of their
 * groups' first statements, and placed just before the function they came
 * from, so the entry stays the module's last function.
 *
 * Order. A group's call goes where its last member was, unless a statement
 * before that reads one of its results; then the call moves up to just
 * before that statement, with what it needs. Statements keep their order
 * otherwise (a stable topological sort of the contracted graph).
 *
 * The forward and {remat}. A statement marked {remat} (a cast that amp
 * makes again in the backward rather than keep it from the forward, a
 * value the remat pass computes again) is not grouped with a statement of
 * the forward, the statements the function's loss is computed from
 * (raf_func_forward): the group would compute it in the forward and keep
 * it, which is what it was made to avoid.
 *
 * Patterns (option patterns=NAME,..., default none): dialect-specific
 * groups from the dialects' patterns (their traits, ir/dialect.h;
 * passes/fuse.h), claimed before the walk and sealed against it. An unknown
 * name is an error that lists the known ones.
 *
 * Requires: a verified module. Functions marked {fused} are left alone,
 * so a second run only groups what the first left.
 * Preserves: the values each function returns, signatures, names and
 * locations of every statement (members move into the fused functions).
 */
#include "passes/fuse_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fuse_oom(fuser *F) {
  if (!F->failed)
    raf_diag_report(F->ctx, (raf_loc){NULL, 0, 0}, RAF_SEV_ERROR,
                    "fuse: out of memory");
  F->failed = true;
}

/* ---- Statements by position ---------------------------------------------- */

int fuse_index_of(const fuser *F, const raf_stmt *s) {
  if (!s)
    return -1;
  int64_t k = s->order - F->base;
  if (k < 0 || k >= F->n || F->nd[k].s != s)
    return -1;
  return (int)k;
}

int fuse_def_of(const fuser *F, const raf_value *v) {
  return v ? fuse_index_of(F, v->def) : -1;
}

int fuse_find(node *nd, int k) {
  while (nd[k].parent != k) {
    nd[k].parent = nd[nd[k].parent].parent;
    k = nd[k].parent;
  }
  return k;
}

unsigned fuse_new_stamp(fuser *F) {
  if (++F->stamp == 0) { /* wrapped: clear the old stamps */
    for (int k = 0; k < F->n; k++)
      F->nd[k].seen = 0;
    F->stamp = 1;
  }
  return F->stamp;
}

static bool fusable(const node *x) { return x->cls >= C_ELEM; }

/* An elementwise statement over at least this many elements becomes a
 * fused function even alone (see the header). */
#define ALONE_MIN_ELEMS ((int64_t)1 << 16)

static bool worth_alone(const node *x) {
  return x->cls == C_ELEM && !x->pruned && x->numel >= ALONE_MIN_ELEMS;
}

static bool has_ref_attr(const raf_stmt *s) {
  for (int i = 0; i < s->attrs.n; i++)
    if (s->attrs.v[i].kind == RAF_ATTR_VALUE ||
        s->attrs.v[i].kind == RAF_ATTR_FUNC)
      return true;
  return false;
}

/* A constant cheap enough to copy into every group that uses it. */
static bool copyable_const(const raf_stmt *s) {
  return s->cdata && s->nresults == 1 &&
         (s->cdata->splat || s->results[0]->type->numel <= 1);
}

static int classify(const raf_stmt *s) {
  if (s->op == RAF_OP_CONSTANT)
    return copyable_const(s) ? C_CONST : C_NONE;
  if (s->nresults != 1 || has_ref_attr(s))
    return C_NONE;
  switch (raf_op_table[s->op].fusion) {
  case RAF_FUSE_ELEMWISE:
  case RAF_FUSE_BROADCAST: return C_ELEM;
  case RAF_FUSE_INJECTIVE:
    if (s->op == RAF_OP_RESHAPE)
      return C_RESHAPE;
    if (s->op == RAF_OP_TRANSPOSE || s->op == RAF_OP_SLICE)
      return C_IMAP;
    return C_NONE;
  case RAF_FUSE_REDUCE: return C_RED;
  case RAF_FUSE_OUT_FUSABLE:
  case RAF_FUSE_OPAQUE: break;
  }
  return C_NONE;
}

/* ---- Acyclicity ---------------------------------------------------------- */

static bool in_list(const int *v, int n, int k) {
  for (int i = 0; i < n; i++)
    if (v[i] == k)
      return true;
  return false;
}

/* One step of walk() to statement k (-1: outside the function). False
 * when the step comes back into the set from a group outside it. */
static bool walk_step(fuser *F, int k, const int *set, int c, bool from_set,
                      int lo, int hi, unsigned st, int *out, int *n) {
  if (k < 0)
    return true;
  int r = fuse_find(F->nd, k);
  if (in_list(set, c, r))
    return from_set; /* an edge inside the set is no path around it */
  node *g = &F->nd[r];
  if (g->rank <= lo || g->rank >= hi || g->seen == st)
    return true; /* outside the range no path between the set's groups */
  g->seen = st;
  out[(*n)++] = r;
  return true;
}

/* Walks from the groups set[0..c) (roots, of ranks lo to hi) forward along
 * uses (fwd) or backward along operands, through the groups ranked
 * strictly between lo and hi, and lists those it reaches in out. Returns
 * how many, or -1 when a path leaves the set and comes back into it (the
 * set as one group would be on a cycle) or the walk is over budget. */
static int walk(fuser *F, const int *set, int c, bool fwd, int lo, int hi,
                int *out) {
  node *nd = F->nd;
  unsigned st = fuse_new_stamp(F);
  long budget = WALK_BUDGET;
  int n = 0;
  for (int w = 0; w < c + n; w++) {
    bool from_set = w < c;
    int g = from_set ? set[w] : out[w - c];
    /* Nothing in the range follows the last group or precedes the first. */
    if (from_set && nd[g].rank == (fwd ? hi : lo))
      continue;
    for (int t = nd[g].head; t >= 0; t = nd[t].next) {
      if (!from_set && --budget < 0)
        return -1;
      const raf_stmt *s = nd[t].s;
      if (fwd) {
        for (int r = 0; r < s->nresults; r++)
          for (raf_use *u = s->results[r]->uses; u; u = u->next)
            if (!walk_step(F, fuse_index_of(F, u->user), set, c, from_set, lo,
                           hi, st, out, &n))
              return -1;
      } else {
        for (int i = 0; i < s->noperands; i++)
          if (!walk_step(F, fuse_def_of(F, s->operands[i].value), set, c,
                         from_set, lo, hi, st, out, &n))
            return -1;
      }
    }
  }
  return n;
}

/* The walks for contracting the groups set[0..c) (roots): the groups in
 * their rank range that reach the set (into bwd) and that it reaches (into
 * fwd). False when the set cannot be one group: contracted, it would be
 * on a cycle, or a walk went over budget. */
static bool can_contract(fuser *F, const int *set, int c, int *nb, int *nf) {
  int lo = F->nd[set[0]].rank, hi = lo;
  for (int j = 1; j < c; j++) {
    int r = F->nd[set[j]].rank;
    lo = r < lo ? r : lo;
    hi = r > hi ? r : hi;
  }
  *nf = walk(F, set, c, true, lo, hi, F->fwd);
  *nb = *nf < 0 ? -1 : walk(F, set, c, false, lo, hi, F->bwd);
  return *nb >= 0;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sorts the groups v[0..n) by rank (in F->keys) and gives them the ranks
 * slots[0..n), in that order. */
static void rerank(fuser *F, const int *v, int n, const int *slots) {
  for (int i = 0; i < n; i++)
    F->keys[i] = (int64_t)F->nd[v[i]].rank << 32 | v[i];
  qsort(F->keys, (size_t)n, sizeof *F->keys, cmp_i64);
  for (int i = 0; i < n; i++)
    F->nd[(int)(F->keys[i] & 0xffffffff)].rank = slots[i];
}

/* Links groups a and b (roots), the bigger one staying the root. */
static int join(fuser *F, int a, int b) {
  node *nd = F->nd;
  int r = nd[a].size >= nd[b].size ? a : b, o = r == a ? b : a;
  nd[o].parent = r;
  nd[nd[r].tail].next = nd[o].head;
  nd[r].tail = nd[o].tail;
  nd[r].size += nd[o].size;
  if (nd[o].anchor >= 0) {
    nd[r].anchor = nd[o].anchor;
    nd[r].dom_in = nd[o].dom_in;
    nd[r].dom_out = nd[o].dom_out;
  }
  nd[r].sealed = nd[r].sealed || nd[o].sealed;
  nd[r].remat = nd[r].remat || nd[o].remat;
  nd[r].forward = nd[r].forward || nd[o].forward;
  return r;
}

/* Makes the groups set[0..c) one group, after can_contract found the
 * groups that reach it (F->bwd, nb) and those it reaches (F->fwd, nf) in
 * its rank range; returns the new root. The topological order stays one:
 * of the ranks the set and those groups held, the groups reaching the set
 * take the lowest and those it reaches the highest, each in their old
 * order (so none moves against an edge to a group outside the range), and
 * the merged group the one after the lowest. The other groups in the
 * range neither reach the set nor are reached from it: they keep theirs. */
static int contract(fuser *F, const int *set, int c, int nb, int nf) {
  int *pool = F->tmp, np = 0;
  for (int j = 0; j < c; j++)
    pool[np++] = F->nd[set[j]].rank;
  for (int i = 0; i < nb; i++)
    pool[np++] = F->nd[F->bwd[i]].rank;
  for (int i = 0; i < nf; i++)
    pool[np++] = F->nd[F->fwd[i]].rank;
  qsort(pool, (size_t)np, sizeof *pool, cmp_int);
  rerank(F, F->bwd, nb, pool);
  rerank(F, F->fwd, nf, pool + np - nf);
  int r = set[0];
  for (int j = 1; j < c; j++)
    r = join(F, r, set[j]);
  F->nd[r].rank = pool[nb];
  return r;
}

/* ---- Merging ------------------------------------------------------------- */

/* A transpose or slice may not read a value of its own group. */
static bool imap_ok(fuser *F, int S, int L) {
  node *nd = F->nd;
  for (int x = nd[S].head; x >= 0; x = nd[x].next) {
    const raf_stmt *s = nd[x].s;
    if (nd[x].cls == C_IMAP) {
      int d = fuse_def_of(F, s->operands[0].value);
      if (d >= 0 && fuse_find(nd, d) == L)
        return false;
    }
    for (int r = 0; r < s->nresults; r++)
      for (raf_use *u = s->results[r]->uses; u; u = u->next) {
        int k = fuse_index_of(F, u->user);
        if (k >= 0 && nd[k].cls == C_IMAP && fuse_find(nd, k) == L)
          return false;
      }
  }
  return true;
}

static bool phase_is(const node *nd, int k, int g, int x, int want) {
  int r = fuse_find((node *)nd, k);
  int p = nd[k].phase;
  if (r == g)
    return p == want || p == P_ANCHOR;
  return r == x && p == want;
}

/* Gives the members of loop group X their phases relative to the anchor of
 * group G and checks the element counts (see the header). The merged group
 * is known to be acyclic, so every path between two of its members stays
 * inside it, and direct edges decide. On failure X is left as it was. */
static bool place_phases(fuser *F, int X, int G) {
  node *nd = F->nd;
  int cnt = 0;
  for (int x = nd[X].head; x >= 0; x = nd[x].next)
    F->tmp[cnt++] = x;
  qsort(F->tmp, (size_t)cnt, sizeof *F->tmp, cmp_int);
  int64_t I = nd[G].dom_in, O = nd[G].dom_out;
  int anchor = nd[G].anchor;
  bool ok = true;
  for (int j = 0; j < cnt; j++) { /* POST: fed by the anchor */
    int a = F->tmp[j];
    const raf_stmt *s = nd[a].s;
    bool post = false;
    for (int i = 0; i < s->noperands && !post; i++) {
      int d = fuse_def_of(F, s->operands[i].value);
      post = d >= 0 && phase_is(nd, d, G, X, P_POST);
    }
    nd[a].phase = post ? P_POST : P_NONE;
  }
  for (int j = cnt - 1; j >= 0; j--) { /* PRE: feeds the anchor */
    int a = F->tmp[j];
    const raf_stmt *s = nd[a].s;
    bool pre = false;
    for (raf_use *u = s->results[0]->uses; u && !pre; u = u->next) {
      int k = fuse_index_of(F, u->user);
      pre = k >= 0 && phase_is(nd, k, G, X, P_PRE);
    }
    if (pre && nd[a].phase == P_POST)
      ok = false; /* a cycle through the anchor; cannot happen */
    nd[a].phase = pre ? P_PRE : nd[a].phase == P_POST ? P_POST : P_SIDE;
  }
  for (int j = 0; j < cnt && ok; j++) {
    int a = F->tmp[j];
    int64_t e = nd[a].numel;
    int p = nd[a].phase;
    if (I == O)
      ok = e == I;
    else if (p == P_PRE)
      ok = e == I;
    else if (p == P_POST)
      ok = e == O;
    else
      ok = e == I || e == O;
    if (!ok || I == O)
      continue;
    /* No member of O elements feeds one of I. */
    const raf_stmt *s = nd[a].s;
    if (e == I)
      for (int i = 0; i < s->noperands && ok; i++) {
        int d = fuse_def_of(F, s->operands[i].value);
        int r = d >= 0 ? fuse_find(nd, d) : -1;
        ok = !((r == G || r == X) && d != anchor && nd[d].numel == O);
      }
    if (e == O)
      for (raf_use *u = s->results[0]->uses; u && ok; u = u->next) {
        int k = fuse_index_of(F, u->user);
        ok = !(k >= 0 && k != anchor && fuse_find(nd, k) == G &&
               nd[k].numel == I);
      }
  }
  if (!ok)
    for (int j = 0; j < cnt; j++)
      nd[F->tmp[j]].phase = P_NONE;
  return ok;
}

/* Merges groups a and b (roots) when the rules allow it. */
static bool try_merge(fuser *F, int a, int b) {
  node *nd = F->nd;
  if (nd[a].sealed || nd[b].sealed ||
      nd[a].size + nd[b].size > F->max_size)
    return false;
  /* A {remat} statement computes its value in the backward so that the
   * forward need not keep it: a forward group would compute it early. */
  if ((nd[a].remat || nd[b].remat) && (nd[a].forward || nd[b].forward))
    return false;
  int G = -1, X = -1; /* the group with the anchor, the loop group */
  if (nd[a].anchor >= 0 && nd[b].anchor >= 0)
    return false;
  if (nd[a].anchor < 0 && nd[b].anchor < 0) {
    if (nd[a].dom_in != nd[b].dom_in)
      return false;
  } else {
    G = nd[a].anchor >= 0 ? a : b;
    X = G == a ? b : a;
    if (nd[X].dom_in != nd[G].dom_in && nd[X].dom_in != nd[G].dom_out)
      return false;
  }
  int S = nd[a].size <= nd[b].size ? a : b, L = S == a ? b : a;
  int pair[2] = {a, b}, nb, nf;
  if (!imap_ok(F, S, L) || !can_contract(F, pair, 2, &nb, &nf))
    return false;
  if (G >= 0 && !place_phases(F, X, G))
    return false;
  contract(F, pair, 2, nb, nf);
  return true;
}

/* ---- Patterns ------------------------------------------------------------ */

static void run_patterns(fuser *F) {
  node *nd = F->nd;
  raf_stmt *buf[MAX_PATTERN_SIZE];
  int idx[MAX_PATTERN_SIZE];
  for (int p = 0; p < F->npats; p++)
    for (int k = 0; k < F->n; k++) {
      raf_stmt *s = nd[k].s;
      if (nd[k].claimed || s->op == RAF_OP_CONSTANT ||
          s->op == RAF_OP_CALL || s->op == RAF_OP_RETURN)
        continue;
      int c = F->pats[p]->match(s, buf, MAX_PATTERN_SIZE);
      bool ok = c >= 2 && c <= MAX_PATTERN_SIZE;
      for (int j = 0; ok && j < c; j++) {
        idx[j] = fuse_index_of(F, buf[j]);
        const raf_stmt *t = buf[j];
        ok = idx[j] >= 0 && !nd[idx[j]].claimed && !in_list(idx, j, idx[j]) &&
             t->op != RAF_OP_CONSTANT && t->op != RAF_OP_CALL &&
             t->op != RAF_OP_RETURN && t->nresults == 1 && !has_ref_attr(t);
      }
      /* Unclaimed statements are groups of their own: idx are roots. */
      int nb, nf;
      if (!ok || !can_contract(F, idx, c, &nb, &nf))
        continue;
      int r = contract(F, idx, c, nb, nf);
      for (int j = 0; j < c; j++)
        nd[idx[j]].claimed = true;
      nd[r].sealed = true;
      nd[r].anchor = -1;
    }
}

/* ---- One function -------------------------------------------------------- */

/* fwd: the forward's flags of raf_func_forward (nfwd of them), or NULL. */
static void init_nodes(fuser *F, const bool *fwd, int nfwd) {
  int k = 0;
  for (raf_stmt *s = F->f->first; s; s = s->next, k++) {
    node *x = &F->nd[k];
    x->s = s;
    x->remat = raf_attrs_find(&s->attrs, "remat") != NULL;
    x->forward = fwd && k < nfwd && fwd[k];
    x->numel = s->nresults ? s->results[0]->type->numel : 0;
    x->parent = x->head = x->tail = x->rank = k;
    x->next = -1;
    x->size = 1;
    x->anchor = -1;
    x->cls = (unsigned char)classify(s);
    x->dom_in = x->dom_out = x->numel;
    if (x->cls == C_RED) {
      x->anchor = k;
      x->phase = P_ANCHOR;
      x->dom_in = 0;
      for (int i = 0; i < s->noperands; i++)
        if (s->operands[i].value->type->numel > x->dom_in)
          x->dom_in = s->operands[i].value->type->numel;
    }
  }
}

/* The walk of the header: each fusable statement tries the groups of its
 * operands' definitions, in operand order. */
static void grow_groups(fuser *F) {
  node *nd = F->nd;
  for (int k = 0; k < F->n; k++) {
    if (!fusable(&nd[k]) || nd[k].claimed)
      continue;
    const raf_stmt *s = nd[k].s;
    for (int i = 0; i < s->noperands; i++) {
      int d = fuse_def_of(F, s->operands[i].value);
      if (d < 0 || !fusable(&nd[d]) || nd[d].claimed)
        continue;
      int a = fuse_find(nd, k), b = fuse_find(nd, d);
      if (a != b)
        try_merge(F, a, b);
    }
  }
}

/* Numbers the groups worth a function by first member (gid, -1 for
 * none) and lists their members in order; returns how many. */
static int number_groups(fuser *F, int *gid, int *mem, group **out) {
  node *nd = F->nd;
  int n = F->n, ng = 0;
  int *weight = F->tmp, *id_of = F->fwd;
  /* A reshape at the end of a group would only be a second copy of a
   * result: it stays out (and then the one before it may be last). Taking
   * a member with no user in its group out keeps the group acyclic. */
  for (int k = n - 1; k >= 0; k--) {
    if (nd[k].cls != C_RESHAPE || nd[k].claimed)
      continue;
    int r = fuse_find(nd, k);
    bool inner = false;
    for (raf_use *u = nd[k].s->results[0]->uses; u && !inner; u = u->next) {
      int q = fuse_index_of(F, u->user);
      inner = q >= 0 && !nd[q].pruned && fuse_find(nd, q) == r;
    }
    nd[k].pruned = !inner;
  }
  for (int k = 0; k < n; k++)
    weight[k] = 0, id_of[k] = -1;
  for (int k = 0; k < n; k++)
    if ((fusable(&nd[k]) || nd[k].claimed) && !nd[k].pruned)
      weight[fuse_find(nd, k)] += nd[k].cls != C_RESHAPE || nd[k].claimed;
  /* A large elementwise statement alone counts as two (see the header);
   * id_of is free until the groups are numbered below. */
  for (int k = 0; k < n; k++)
    if (worth_alone(&nd[k]) && weight[fuse_find(nd, k)] == 1)
      id_of[fuse_find(nd, k)] = -2;
  for (int k = 0; k < n; k++) {
    int r = fuse_find(nd, k);
    if (id_of[r] == -2)
      weight[r] = 2, id_of[r] = -1;
  }
  for (int k = 0; k < n; k++) {
    gid[k] = -1;
    if ((!fusable(&nd[k]) && !nd[k].claimed) || nd[k].pruned)
      continue;
    int r = fuse_find(nd, k);
    if (weight[r] < 2)
      continue;
    if (id_of[r] < 0)
      id_of[r] = ng++;
    gid[k] = id_of[r];
  }
  group *G = ng ? calloc((size_t)ng, sizeof *G) : NULL;
  if (ng && !G) {
    fuse_oom(F);
    return 0;
  }
  for (int k = 0; k < n; k++)
    if (gid[k] >= 0)
      G[gid[k]].nmem++;
  for (int g = 0, at = 0; g < ng; g++) {
    G[g].first = at;
    at += G[g].nmem;
    G[g].nmem = 0;
  }
  for (int k = 0; k < n; k++)
    if (gid[k] >= 0) {
      group *g = &G[gid[k]];
      mem[g->first + g->nmem++] = k;
    }
  *out = G;
  return ng;
}

static void fuse_func(fuser *F, raf_func *f) {
  int n = 0;
  for (raf_stmt *s = f->first; s; s = s->next)
    n++;
  if (n < 3) /* two statements and the return, at least */
    return;
  bool *fwd = NULL;
  int nfwd = 0;
  if (raf_func_forward(f, &fwd, &nfwd) != RAF_OK) {
    fuse_oom(F);
    return;
  }
  raf_func_number(f);
  F->f = f;
  F->n = n;
  F->base = f->first->order;
  F->stamp = 0;
  F->nd = calloc((size_t)n, sizeof *F->nd);
  F->tmp = malloc(sizeof *F->tmp * (size_t)n);
  F->fwd = malloc(sizeof *F->fwd * (size_t)n);
  F->bwd = malloc(sizeof *F->bwd * (size_t)n);
  F->keys = malloc(sizeof *F->keys * (size_t)n);
  int *gid = malloc(sizeof *gid * (size_t)n);
  int *mem = malloc(sizeof *mem * (size_t)n);
  int *order = malloc(sizeof *order * 2 * (size_t)n);
  raf_stmt **copy = calloc((size_t)n, sizeof *copy);
  group *G = NULL;
  int ng = 0, norder = 0, built = 0;
  if (!F->nd || !F->tmp || !F->fwd || !F->bwd || !F->keys || !gid || !mem ||
      !order || !copy) {
    fuse_oom(F);
    goto done;
  }
  init_nodes(F, fwd, nfwd);
  run_patterns(F);
  grow_groups(F);
  ng = number_groups(F, gid, mem, &G);
  for (int g = 0; g < ng; g++)
    if (!fuse_group_io(F, gid, &G[g], mem, g)) { /* left as it is */
      for (int j = 0; j < G[g].nmem; j++)
        gid[mem[G[g].first + j]] = -1;
      G[g].nmem = 0;
    } else {
      built++;
    }
  if (F->failed || !built)
    goto done;
  if (!fuse_schedule(F, gid, G, ng, mem, order, &norder)) {
    if (!F->failed)
      raf_diag_report(F->ctx, f->loc, RAF_SEV_ERROR,
                      "fuse: internal error: the groups of @%s form a cycle",
                      f->name);
    F->failed = true;
    goto done;
  }
  for (int g = 0; g < ng; g++) {
    if (!G[g].nmem)
      continue;
    /* Groups built earlier changed some inputs into their calls' results. */
    if (!fuse_group_io(F, gid, &G[g], mem, g) ||
        !fuse_build_group(F, gid, &G[g], mem, g, copy)) {
      fuse_oom(F);
      goto done;
    }
  }
  /* Relink in schedule order: every statement stays, each group's call
   * stands where its group was scheduled. */
  f->first = f->last = NULL;
  for (int i = 0; i < norder; i++) {
    int x = order[i];
    raf_stmt *s = x < n ? F->nd[x].s : G[x - n].call;
    raf_stmt_insert_before(f, s, NULL);
  }
  for (int k = 0; k < n; k++)
    if (F->nd[k].copied && !raf_value_has_uses(F->nd[k].s->results[0]))
      raf_stmt_erase(F->nd[k].s);
done:
  free(fwd);
  free(F->nd);
  free(F->tmp);
  free(F->fwd);
  free(F->bwd);
  free(F->keys);
  F->nd = NULL;
  F->tmp = F->fwd = F->bwd = NULL;
  F->keys = NULL;
  free(gid);
  free(mem);
  free(order);
  free(copy);
  free(G);
}

/* ---- The pass ------------------------------------------------------------ */

/* The names of every dialect's patterns, for an error. */
static void known_patterns(char *known, size_t size) {
  known[0] = 0;
  for (int d = 0; d < RAF_DIALECT_COUNT; d++) {
    const raf_dialect_traits *t = raf_dialect_traits_of((raf_dialect)d);
    for (int i = 0; i < t->npatterns; i++)
      snprintf(known + strlen(known), size - strlen(known), "%s%s",
               known[0] ? ", " : "", t->patterns[i].name);
  }
}

/* Reads patterns=a,b into F->pats, highest priority first. */
static bool read_patterns(fuser *F, const char *list) {
  F->npats = 0;
  if (!list || !*list)
    return true;
  F->pats = calloc(strlen(list) + 1, sizeof *F->pats); /* a name a byte */
  if (!F->pats) {
    fuse_oom(F);
    return false;
  }
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, ",");
    const raf_fuse_pattern *pat;
    if (raf_dialect_find_pattern(s, len, &pat) == RAF_DIALECT_COUNT) {
      char known[512];
      known_patterns(known, sizeof known);
      raf_diag_report(F->ctx, (raf_loc){NULL, 0, 0}, RAF_SEV_ERROR,
                      "fuse: unknown pattern '%.*s' (known: %s)", (int)len, s,
                      known);
      return false;
    }
    bool dup = false; /* each pattern once */
    for (int i = 0; i < F->npats; i++)
      dup = dup || F->pats[i] == pat;
    if (!dup) { /* insertion by priority, stable */
      int i = F->npats++;
      for (; i > 0 && F->pats[i - 1]->priority < pat->priority; i--)
        F->pats[i] = F->pats[i - 1];
      F->pats[i] = pat;
    }
    s += len;
    if (*s == ',')
      s++;
  }
  return true;
}

static bool is_fused(const raf_func *f) {
  const raf_attr *a = raf_attrs_find(&f->attrs, "fused");
  return a && a->kind == RAF_ATTR_BOOL && a->val.u.b;
}

raf_status raf_pass_fuse(raf_module *m, const raf_pass_args *args) {
  fuser F = {0};
  F.ctx = args->ctx;
  F.m = m;
  F.max_size = raf_pass_opt_int(args, "max-group-size");
  if (F.max_size < 2) {
    raf_diag_report(args->ctx, (raf_loc){NULL, 0, 0}, RAF_SEV_ERROR,
                    "fuse: max-group-size must be at least 2, got %lld",
                    (long long)F.max_size);
    return RAF_ERROR;
  }
  if (!read_patterns(&F, raf_pass_opt_str(args, "patterns"))) {
    free(F.pats);
    return RAF_ERROR;
  }
  /* Collect first: the pass adds functions while it walks. */
  int nf = 0;
  for (raf_func *f = m->first; f; f = f->next)
    nf++;
  raf_func **funcs = malloc(sizeof *funcs * ((size_t)nf + 1));
  if (!funcs) {
    fuse_oom(&F);
  } else {
    nf = 0;
    for (raf_func *f = m->first; f; f = f->next)
      if (!is_fused(f))
        funcs[nf++] = f;
    for (int i = 0; i < nf && !F.failed; i++)
      fuse_func(&F, funcs[i]);
  }
  free(funcs);
  free(F.pats);
  return F.failed ? RAF_ERROR : RAF_OK;
}
