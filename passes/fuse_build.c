/* fuse_build.c: the fuse pass's second half. Once the walk of
 * passes/fuse.c has chosen the groups, each kept group is scheduled (its
 * call goes where its last member was, or up to just before the first
 * statement that reads one of its results, with what it needs) and built:
 * its inputs and outputs found, its members moved into a new function
 * `@fused_N(inputs) -> (results) {fused}` with copies of the constants
 * they use, and replaced by a call. fuse.c's essay states the rules.
 */
#include "passes/fuse_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Scheduling ---------------------------------------------------------- */

static int node_of(const fuser *F, const int *gid, int k) {
  return gid[k] >= 0 ? F->n + gid[k] : k;
}

/* The next node the node of frame fr reads from, or -1. */
static int next_pred(fuser *F, const int *gid, const group *G,
                     const int *mem, frame *fr) {
  for (;;) {
    const raf_stmt *s;
    if (fr->node < F->n) {
      if (fr->j > 0)
        return -1;
      s = F->nd[fr->node].s;
    } else {
      const group *g = &G[fr->node - F->n];
      if (fr->j >= g->nmem)
        return -1;
      s = F->nd[mem[g->first + fr->j]].s;
    }
    if (fr->i >= s->noperands) {
      fr->j++;
      fr->i = 0;
      continue;
    }
    int d = fuse_def_of(F, s->operands[fr->i++].value);
    if (d < 0)
      continue;
    int p = node_of(F, gid, d);
    if (p != fr->node)
      return p;
  }
}

/* The member of group g where the schedule places it: its last, or for a
 * group that reduces its input to much less (a bias gradient's sum, with
 * the optimizer's update of the bias that reads it), its anchor, so that
 * the reduced input dies there rather than at the group's last member. */
static int placed_at(fuser *F, const group *g, const int *mem) {
  int last = mem[g->first + g->nmem - 1];
  const node *root = &F->nd[fuse_find(F->nd, last)];
  if (root->anchor >= 0 && root->dom_in >= SHRINK * root->dom_out)
    return root->anchor;
  return last;
}

/* Orders the nodes (statements outside groups, and groups) topologically,
 * each group at its last member (or its anchor: placed_at) unless
 * something needs it earlier; false on a cycle, which the merge rules
 * exclude. */
bool fuse_schedule(fuser *F, const int *gid, const group *G, int ng,
                     const int *mem, int *order, int *norder) {
  int total = F->n + ng;
  unsigned char *state = calloc((size_t)total, 1);
  frame *stack = malloc(sizeof *stack * (size_t)total);
  bool ok = state && stack;
  int no = 0;
  if (!ok)
    fuse_oom(F);
  for (int k = 0; ok && k < F->n; k++) {
    int g = gid[k];
    if (g >= 0 && placed_at(F, &G[g], mem) != k)
      continue;
    int root = node_of(F, gid, k);
    if (state[root])
      continue;
    int sp = 0;
    stack[sp++] = (frame){root, 0, 0};
    state[root] = 1;
    while (sp && ok) {
      frame *fr = &stack[sp - 1];
      int p = next_pred(F, gid, G, mem, fr);
      if (p < 0) {
        state[fr->node] = 2;
        order[no++] = fr->node;
        sp--;
      } else if (state[p] == 1) {
        ok = false;
      } else if (state[p] == 0) {
        state[p] = 1;
        stack[sp++] = (frame){p, 0, 0};
      }
    }
  }
  free(state);
  free(stack);
  *norder = no;
  return ok;
}

/* ---- Building the fused functions ---------------------------------------- */

/* The inputs and results of group g; false when it cannot be a call. */
bool fuse_group_io(fuser *F, const int *gid, group *g, const int *mem,
                     int id) {
  g->nin = g->nout = 0;
  for (int j = 0; j < g->nmem; j++) {
    const raf_stmt *s = F->nd[mem[g->first + j]].s;
    for (int i = 0; i < s->noperands; i++) {
      raf_value *v = s->operands[i].value;
      int d = fuse_def_of(F, v);
      if (d >= 0 && (gid[d] == id || F->nd[d].cls == C_CONST))
        continue;
      int q = 0;
      while (q < g->nin && g->in[q] != v)
        q++;
      if (q < g->nin)
        continue;
      if (g->nin == MAX_IO)
        return false;
      g->in[g->nin++] = v;
    }
    for (int r = 0; r < s->nresults; r++) {
      bool outside = false;
      for (raf_use *u = s->results[r]->uses; u && !outside; u = u->next) {
        int k = fuse_index_of(F, u->user);
        outside = k < 0 || gid[k] != id;
      }
      if (!outside)
        continue;
      if (g->nout == MAX_IO)
        return false;
      g->out[g->nout++] = s->results[r];
    }
  }
  return g->nout > 0 && g->nin > 0;
}

/* Copies in fn: the value of the group's function for v. Constants are
 * copied when first met (stamp st marks this group's copies). */
static raf_value *map_value(fuser *F, raf_func *fn, const group *g,
                            raf_value *const *args, const int *gid, int id,
                            raf_stmt **copy, unsigned st, raf_value *v) {
  int d = fuse_def_of(F, v);
  if (d >= 0 && gid[d] == id)
    return copy[d] ? copy[d]->results[v->index] : NULL;
  if (d >= 0 && F->nd[d].cls == C_CONST) {
    node *c = &F->nd[d];
    if (c->seen != st) {
      const raf_stmt *s = c->s;
      raf_type *t = s->results[0]->type;
      raf_stmt *k = raf_stmt_create(F->m, RAF_OP_CONSTANT, 0, NULL, 1, &t,
                                    s->loc);
      if (!k)
        return NULL;
      raf_stmt_set_attrs(F->m, k, s->attrs.v, s->attrs.n);
      k->cdata = s->cdata; /* constant data is never written */
      k->results[0]->func = fn;
      raf_value_set_name(k->results[0], s->results[0]->name);
      raf_stmt_insert_before(fn, k, NULL);
      copy[d] = k;
      c->seen = st;
      c->copied = true;
    }
    return copy[d]->results[0];
  }
  for (int q = 0; q < g->nin; q++)
    if (g->in[q] == v)
      return args[q];
  return NULL;
}

/* Makes @fused_N for group g and replaces the members by its call, not
 * yet linked (the caller relinks the function in schedule order). */
bool fuse_build_group(fuser *F, const int *gid, group *g, const int *mem,
                        int id, raf_stmt **copy) {
  raf_module *m = F->m;
  raf_func *f = F->f;
  const raf_stmt *first = F->nd[mem[g->first]].s;
  char name[32];
  do
    snprintf(name, sizeof name, "fused_%d", F->counter++);
  while (raf_module_find_func(m, name));
  raf_func *fn = raf_func_create(m, name, first->loc);
  if (!fn)
    return false;
  raf_func_move_before(m, fn, f);
  raf_value *args[MAX_IO], *ops[MAX_IO];
  raf_type *types[MAX_IO];
  for (int q = 0; q < g->nin; q++) {
    raf_value *v = g->in[q];
    args[q] = raf_func_add_arg(fn, v->name, v->type, v->loc);
    if (!args[q])
      return false;
  }
  unsigned st = fuse_new_stamp(F);
  for (int j = 0; j < g->nmem; j++) {
    int k = mem[g->first + j];
    const raf_stmt *s = F->nd[k].s;
    raf_value *small[16], **opv = small;
    raf_type *tsmall[4], **tv = tsmall;
    if (s->noperands > 16)
      opv = malloc(sizeof *opv * (size_t)s->noperands);
    if (s->nresults > 4)
      tv = malloc(sizeof *tv * (size_t)s->nresults);
    bool ok = opv && tv;
    for (int i = 0; ok && i < s->noperands; i++)
      ok = (opv[i] = map_value(F, fn, g, args, gid, id, copy, st,
                               s->operands[i].value)) != NULL;
    for (int r = 0; ok && r < s->nresults; r++)
      tv[r] = s->results[r]->type;
    raf_stmt *c = ok ? raf_stmt_create(m, s->op, s->noperands, opv,
                                       s->nresults, tv, s->loc)
                     : NULL;
    if (opv != small)
      free(opv);
    if (tv != tsmall)
      free(tv);
    if (!c)
      return false;
    raf_stmt_set_attrs(m, c, s->attrs.v, s->attrs.n);
    for (int r = 0; r < c->nresults; r++) {
      c->results[r]->func = fn;
      raf_value_set_name(c->results[r], s->results[r]->name);
    }
    raf_stmt_insert_before(fn, c, NULL);
    copy[k] = c;
  }
  for (int q = 0; q < g->nout; q++) {
    raf_value *v = g->out[q];
    ops[q] = copy[fuse_def_of(F, v)]->results[v->index];
    types[q] = v->type;
  }
  const raf_stmt *last = F->nd[mem[g->first + g->nmem - 1]].s;
  raf_stmt *ret = raf_stmt_create(m, RAF_OP_RETURN, g->nout, ops, 0, NULL,
                                  last->loc);
  raf_attr fused = {.name = "fused", .kind = RAF_ATTR_BOOL, .val.u.b = true,
                    .loc = first->loc};
  fn->attrs.v = raf_arena_memdup(&m->arena, &fused, sizeof fused);
  fn->attrs.n = fn->attrs.v ? 1 : 0;
  raf_stmt *call = raf_stmt_create(m, RAF_OP_CALL, g->nin, g->in, g->nout,
                                   types, first->loc);
  if (!ret || !fn->attrs.v || !call)
    return false;
  raf_stmt_insert_before(fn, ret, NULL);
  raf_func_set_results(fn, g->nout, types);
  if (g->nout && !fn->results)
    return false;
  call->callee = fn;
  /* The members' results are read through the call from now on; then the
   * members go, and the call takes their results' names. */
  for (int q = 0; q < g->nout; q++)
    raf_value_replace_uses(g->out[q], call->results[q]);
  for (int j = g->nmem - 1; j >= 0; j--) {
    /* Backward, so each member's in-group users are gone first. */
    raf_stmt_erase(F->nd[mem[g->first + j]].s);
  }
  for (int q = 0; q < g->nout; q++) {
    call->results[q]->func = f;
    if (raf_value_set_name(call->results[q], g->out[q]->name) != RAF_OK)
      return false;
  }
  g->call = call;
  return true;
}
