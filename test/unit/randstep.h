/* randstep.h: random training steps, the programs of the property tests
 * of the passes that plan memory (test_plan_memory, test_remat): data
 * arguments %v0..%v3 and %w, params %v4.. that results update (an
 * optimizer-like step: some params read again after their update is made,
 * some not), statements over randprog.h's values, and the harness that
 * runs a step twice with raf-run's donation between the calls; a test may
 * add statements that carry state (step_carried_statement, ending with
 * step_finish_carried), which the others' streams never see. Each test
 * chooses its shapes and the order of its statements; the statements and
 * the function around them are these. Header-only (static inline), as
 * program.h. */
#ifndef RAF_TEST_RANDSTEP_H
#define RAF_TEST_RANDSTEP_H

#include "test/unit/randprog.h"

/* A float value, the later ones likelier (so chains form and values die). */
static inline int step_pick(gen *g) {
  for (int t = 0; t < 50; t++) {
    int lo = g->n > 8 && rand_int(0, 2) ? g->n - 8 : 0;
    int k = (int)rand_int(lo, g->n - 1);
    if (g->v[k].kind == K_F32)
      return k;
  }
  return 0;
}

/* One random statement (or two: a constant and its use, a compare and its
 * where, reshapes there and back, casts there and back) over step_pick's
 * operands; sometimes none, when the operand does not fit the op. */
static inline void step_statement(gen *g) {
  static const char *unary[] = {"neg", "abs", "tanh", "exp", "relu", "cos"};
  static const char *binary[] = {"add", "sub", "mul", "maximum"};
  int a = step_pick(g);
  const val *va = &g->v[a];
  int r;
  switch ((int)rand_int(0, 13)) {
  case 0: case 1: case 2:
    r = new_val(g, va->rank, va->d[0], va->d[1]);
    emit(g, "  %%v%d = %s(%%v%d)\n", r, unary[rand_int(0, 5)], a);
    return;
  case 3: case 4: case 5: {
    int b = step_pick(g);
    val out;
    for (int t = 0; t < 20 && !bcast(va, &g->v[b], &out); t++)
      b = step_pick(g);
    if (!bcast(va, &g->v[b], &out))
      b = a, out = *va;
    r = new_val(g, out.rank, out.d[0], out.d[1]);
    emit(g, "  %%v%d = %s(%%v%d, %%v%d)\n", r, binary[rand_int(0, 3)], a, b);
    return;
  }
  case 6: {
    int c = new_val(g, 0, 0, 0);
    emit(g, "  %%v%d = constant %g : %s[]\n", c, (double)rand_int(1, 9) / 4,
         fname(g));
    r = new_val(g, va->rank, va->d[0], va->d[1]);
    emit(g, "  %%v%d = mul(%%v%d, %%v%d)\n", r, c, a);
    return;
  }
  case 7:
    compare_where(g, a, step_pick(g));
    return;
  case 8:
    if (va->rank == 2) {
      r = new_val(g, 1, va->d[1], 0);
      emit(g, "  %%v%d = sum(%%v%d) {axes = [0]}\n", r, a);
    } else {
      r = new_val(g, 0, 0, 0);
      emit(g, "  %%v%d = mean(%%v%d)\n", r, a);
    }
    return;
  case 9:
    if (va->rank == 0)
      return;
    r = new_val(g, va->rank, va->d[0], va->d[1]);
    emit(g, "  %%v%d = softmax(%%v%d)\n", r, a);
    return;
  case 10:
    if (!is_rc(g, a))
      return;
    r = new_val(g, 2, g->R, g->C);
    emit(g, "  %%v%d = matmul(%%v%d, %%w)\n", r, a);
    return;
  case 11:
    if (!is_rc(g, a))
      return;
    r = new_val(g, 1, g->R * g->C, 0);
    emit(g, "  %%v%d = reshape(%%v%d) {shape = [%lld]}\n", r, a,
         (long long)(g->R * g->C));
    r = new_val(g, 2, g->R, g->C);
    emit(g, "  %%v%d = reshape(%%v%d) {shape = [%lld, %lld]}\n", r, r - 1,
         (long long)g->R, (long long)g->C);
    return;
  case 12: /* through another float dtype and back */
    cast_round_trip(g, a);
    return;
  default:
    if (!is_rc(g, a) || g->C < 2)
      return;
    r = new_val(g, 2, g->R, 1);
    new_val(g, 2, g->R, g->C - 1);
    emit(g, "  %%v%d, %%v%d = split(%%v%d) {axis = 1, sizes = [1, %lld]}\n",
         r, r + 1, a, (long long)(g->C - 1));
    return;
  }
}

/* Starts a step: its float dtype, R in [rmin, rmax] and C in [cmin, cmax],
 * the data arguments %v0: [R,C], %v1: [C], %v2: [R,1], %v3: [] (and %w:
 * [C,C], which is no value of g), then [pmin, pmax] params %v4..: [R,C],
 * [C], [R,C]. */
static inline void step_begin(gen *g, int64_t rmin, int64_t rmax,
                              int64_t cmin, int64_t cmax, int pmin,
                              int pmax) {
  g->len = 0;
  g->n = 0;
  choose_dtype(g);
  g->R = rand_int(rmin, rmax);
  g->C = rand_int(cmin, cmax);
  new_val(g, 2, g->R, g->C);
  new_val(g, 1, g->C, 0);
  new_val(g, 2, g->R, 1);
  new_val(g, 0, 0, 0);
  g->nparams = (int)rand_int(pmin, pmax);
  for (int i = 0; i < g->nparams; i++)
    new_val(g, i % 2 ? 1 : 2, i % 2 ? g->C : g->R, g->C);
}

/* The update of param k (%v<4+k>): itself less a value of its shape (or
 * less itself, when step_pick finds none); the update's value. */
static inline int step_update(gen *g, int k) {
  int p = 4 + k, b = step_pick(g);
  val out;
  bool same = bcast(&g->v[p], &g->v[b], &out) && out.rank == g->v[p].rank;
  for (int d = 0; same && d < out.rank; d++)
    same = out.d[d] == g->v[p].d[d];
  if (!same)
    b = p;
  int u = new_val(g, g->v[p].rank, g->v[p].d[0], g->v[p].d[1]);
  emit(g, "  %%v%d = sub(%%v%d, %%v%d)\n", u, p, b);
  return u;
}

/* step_finish, with the state c carries (may be NULL: none): its
 * arguments (%g and %bt: [C] too, batch_norm's) after the params, and its
 * {updates} results after the params' updates. */
static inline void step_finish_carried(gen *g, const int *upd,
                                       carried *c) {
  int res[4], nres = 0;
  res[nres++] = g->n - 1;
  for (int t = 0; t < 2 && g->n > 8; t++)
    res[nres++] = (int)rand_int(4, g->n - 1);
  char args[1024], results[512] = "", returns[256] = "";
  const char *f = fname(g);
  size_t na = (size_t)snprintf(
      args, sizeof args,
      "%%v0: %s[%lld,%lld], %%v1: %s[%lld], %%v2: %s[%lld,1], "
      "%%v3: %s[], %%w: %s[%lld,%lld]",
      f, (long long)g->R, (long long)g->C, f, (long long)g->C, f,
      (long long)g->R, f, f, (long long)g->C, (long long)g->C);
  size_t nr = 0, nt = 0;
  for (int k = 0; k < g->nparams; k++) {
    char t[64];
    type_of(g, &g->v[4 + k], t, sizeof t);
    na += (size_t)snprintf(args + na, sizeof args - na, ", %%v%d: %s {param}",
                           4 + k, t);
    type_of(g, &g->v[upd[k]], t, sizeof t);
    nr += (size_t)snprintf(results + nr, sizeof results - nr,
                           "%s {updates = %%v%d}, ", t, 4 + k);
    nt += (size_t)snprintf(returns + nt, sizeof returns - nt, "%%v%d, ",
                           upd[k]);
  }
  if (c) {
    size_t n = strlen(args);
    snprintf(args + n, sizeof args - n, ", %%g: %s[%lld], %%bt: %s[%lld]", f,
             (long long)g->C, f, (long long)g->C);
    carried_args(g, args, sizeof args);
    carried_results(g, c, results, sizeof results, returns, sizeof returns);
  }
  wrap_function(g, args, results, returns, res, nres);
}

/* One random statement that reads or carries state (randprog.h's
 * carried): a dropout, a batch_norm or a moving average over step_pick's
 * operand; none when the operand does not fit. A test that wants them
 * calls this besides step_statement, whose stream it leaves alone. */
static inline void step_carried_statement(gen *g, carried *c) {
  int a = step_pick(g);
  switch ((int)rand_int(0, 2)) {
  case 0:
    carry_dropout(g, c, a);
    return;
  case 1:
    carry_batch_norm(g, c, a);
    return;
  default:
    carry_ema(g, c, a);
    return;
  }
}

/* Ends the step: results are the update upd[k] of each param ({updates}),
 * the last value and two values picked at random. */
static inline void step_finish(gen *g, const int *upd) {
  step_finish_carried(g, upd, NULL);
}

/* Dispatches text to cpu-ref, runs `passes` (may be NULL) and makes an
 * executor. */
static inline bool step_open(program *p, const char *text,
                             const char *passes) {
  char pipeline[512];
  snprintf(pipeline, sizeof pipeline, "dispatch{dialects=cpu-ref}%s%s",
           passes ? "," : "", passes ? passes : "");
  return program_open_pipeline(p, text, pipeline, 1);
}

/* Two steps of f, with raf-run's donation between them and its freeing
 * of the results before the next call; the last step's results (free each
 * with raf_exec_free, then the array), or NULL (reported). */
static inline raf_tensor **step_run_twice(program *p, raf_func *f,
                                          raf_tensor **args) {
  raf_tensor **res = calloc((size_t)f->nresults + 1, sizeof *res);
  for (int step = 0; step < 2; step++) {
    for (int r = 0; step && r < f->nresults; r++) {
      raf_exec_free(p->ex, res[r]);
      res[r] = NULL;
    }
    if (raf_exec_call(p->ex, f, args, res) != RAF_OK ||
        raf_exec_donate(p->ex, f, args, res) != RAF_OK) {
      raf_diag_render(p->ctx, stderr);
      for (int r = 0; r < f->nresults; r++)
        raf_exec_free(p->ex, res[r]);
      free(res);
      return NULL;
    }
  }
  return res;
}

#endif
