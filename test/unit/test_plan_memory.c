/* test_plan_memory.c: the properties of plan-memory on random programs.
 *
 * Random straight-line programs (elementwise and broadcast ops, compares
 * and where, reductions, softmax, matmul, reshapes, split, scalar
 * constants, casts through another float dtype and back), in f32, bf16 or
 * f16 (half the programs f32), with params that results update (an optimizer-like step:
 * some params read again after their update is made, some not) run
 * through the executor unplanned and after a random pipeline ending in
 * plan-memory (with or without in place and donation, after fuse or not).
 * Two steps are run, with the donation of raf-run between them. Then:
 *  - every result and every argument after the steps is bit-identical;
 *  - the planned module verifies (the plan checker agrees with the pass);
 *  - the executor's measured peak equals raf-opt --stats' planned peak;
 *  - the plans do run in place and donate (counted, so that the test fails
 *    if they stop).
 * Fixed seed: failures reproduce, and the failing program is printed. */
#include "ir/ir.h"
#include "runtime/exec.h"

#include <string.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/randprog.h"

/* A float value, the later ones likelier (so chains form and values die). */
static int pick(gen *g) {
  for (int t = 0; t < 50; t++) {
    int lo = g->n > 8 && rand_int(0, 2) ? g->n - 8 : 0;
    int k = (int)rand_int(lo, g->n - 1);
    if (g->v[k].kind == K_F32)
      return k;
  }
  return 0;
}

static void statement(gen *g) {
  static const char *unary[] = {"neg", "abs", "tanh", "exp", "relu", "cos"};
  static const char *binary[] = {"add", "sub", "mul", "maximum"};
  int a = pick(g);
  const val *va = &g->v[a];
  int r;
  switch ((int)rand_int(0, 13)) {
  case 0: case 1: case 2:
    r = new_val(g, va->rank, va->d[0], va->d[1]);
    emit(g, "  %%v%d = %s(%%v%d)\n", r, unary[rand_int(0, 5)], a);
    return;
  case 3: case 4: case 5: {
    int b = pick(g);
    val out;
    for (int t = 0; t < 20 && !bcast(va, &g->v[b], &out); t++)
      b = pick(g);
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
  case 7: {
    int b = pick(g);
    val out;
    if (!bcast(va, &g->v[b], &out))
      b = a, out = *va;
    int p = new_val(g, out.rank, out.d[0], out.d[1]);
    g->v[p].kind = K_BOOL;
    emit(g, "  %%v%d = gt(%%v%d, %%v%d)\n", p, a, b);
    r = new_val(g, out.rank, out.d[0], out.d[1]);
    emit(g, "  %%v%d = where(%%v%d, %%v%d, %%v%d)\n", r, p, a, b);
    return;
  }
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

/* A random step: arguments %v0..%v3 (data), %w, then params %v4.. that
 * results update; results: the update of each param (an elementwise
 * function of it and some value), then a few values. */
static void program_text(gen *g) {
  g->len = 0;
  g->n = 0;
  choose_dtype(g);
  g->R = rand_int(1, 5);
  g->C = rand_int(1, 7);
  new_val(g, 2, g->R, g->C);
  new_val(g, 1, g->C, 0);
  new_val(g, 2, g->R, 1);
  new_val(g, 0, 0, 0);
  g->nparams = (int)rand_int(0, 3);
  for (int i = 0; i < g->nparams; i++)
    new_val(g, i % 2 ? 1 : 2, i % 2 ? g->C : g->R, g->C);
  int nstmt = (int)rand_int(6, 36), upd[3];
  for (int i = 0; i < nstmt && g->n < MAXV - 8; i++) {
    statement(g);
    /* Updates come anywhere, and the param may be read after them. */
    for (int k = 0; k < g->nparams; k++)
      if (i == nstmt * (k + 1) / (g->nparams + 1)) {
        int p = 4 + k, b = pick(g);
        val out;
        bool same = bcast(&g->v[p], &g->v[b], &out) &&
                    out.rank == g->v[p].rank;
        for (int d = 0; same && d < out.rank; d++)
          same = out.d[d] == g->v[p].d[d];
        if (!same)
          b = p;
        upd[k] = new_val(g, g->v[p].rank, g->v[p].d[0], g->v[p].d[1]);
        emit(g, "  %%v%d = sub(%%v%d, %%v%d)\n", upd[k], p, b);
      }
  }
  int res[4], nres = 0;
  res[nres++] = g->n - 1;
  for (int t = 0; t < 2 && g->n > 8; t++)
    res[nres++] = (int)rand_int(4, g->n - 1);
  char args[512], results[256] = "", returns[64] = "";
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
  wrap_function(g, args, results, returns, res, nres);
}

/* Dispatches text to cpu-ref, runs `passes` (may be NULL) and makes an
 * executor. */
static bool open_with(program *p, const char *text, const char *passes) {
  char pipeline[256];
  snprintf(pipeline, sizeof pipeline, "dispatch{dialects=cpu-ref}%s%s",
           passes ? "," : "", passes ? passes : "");
  return program_open_pipeline(p, text, pipeline, 1);
}

/* Two steps of f, with raf-run's donation between them and its freeing
 * of the results before the next call; the last step's results. */
static raf_tensor **two_steps(program *p, raf_func *f, raf_tensor **args) {
  raf_tensor **res = calloc((size_t)f->nresults + 1, sizeof *res);
  for (int step = 0; step < 2; step++) {
    for (int r = 0; step && r < f->nresults; r++) {
      raf_exec_free(p->ex, res[r]);
      res[r] = NULL;
    }
    if (raf_exec_call(p->ex, f, args, res) != RAF_OK) {
      raf_diag_render(p->ctx, stderr);
      free(res);
      return NULL;
    }
    raf_exec_donate(f, args, res);
  }
  return res;
}

static int count_attr(const raf_module *m, const char *name) {
  int n = 0;
  for (raf_func *f = m->first; f; f = f->next) {
    for (raf_stmt *s = f->first; s; s = s->next) {
      const raf_attr *a = raf_attrs_find(&s->attrs, name);
      for (int i = 0; a && i < a->val.u.ints.n; i++)
        n += a->val.u.ints.v[i] >= 0;
    }
    for (int q = 0; q < f->nresults; q++)
      n += raf_attrs_find(&f->results[q].attrs, name) != NULL;
  }
  return n;
}

/* Results of llvm calls computed in place over an operand: compiled
 * kernels that take the two buffers as one (runtime/llvm.c). */
static int count_compiled_inplace(const raf_module *m) {
  int n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next) {
      const char *d = raf_stmt_attr_str(s, "dialect");
      const raf_attr *a = raf_attrs_find(&s->attrs, "inplace");
      for (int i = 0; s->op == RAF_OP_CALL && d && strcmp(d, "llvm") == 0 &&
                      a && i < a->val.u.ints.n;
           i++)
        n += a->val.u.ints.v[i] >= 0;
    }
  return n;
}

int main(void) {
  gen g = {.buf = malloc(1 << 16), .cap = 1 << 16};
  static const char *pipelines[] = {
      "plan-memory", "plan-memory", "plan-memory{inplace=false}",
      "plan-memory{donate=false}", "fuse,plan-memory",
      "fuse{max-group-size=3},plan-memory",
      "fuse,dispatch{dialects=llvm,cpu-ref},plan-memory"};
  int programs = 1200, inplace = 0, donated = 0, compared = 0;
  int compiled_inplace = 0;
  /* Compiled kernels with scalar libm compute cpu-ref's bits; their
   * cache is a directory of this run's own. */
  char cache[] = "/tmp/raf-test-plan-XXXXXX";
  CHECK(kernel_cache_open(cache));
  setenv("RAF_JIT_MATH", "exact", 1);
  for (int it = 0; it < programs && failures == 0; it++) {
    program_text(&g);
    const char *passes = pipelines[rand_int(0, 6)];
    program a, b;
    bool ok = open_with(&a, g.buf, NULL);
    ok = open_with(&b, g.buf, passes) && ok;
    CHECK(ok);
    if (!ok)
      break;
    inplace += count_attr(b.m, "inplace");
    compiled_inplace += count_compiled_inplace(b.m);
    donated += count_attr(b.m, "donated");
    raf_func *fa = raf_module_find_func(a.m, "f");
    raf_func *fb = raf_module_find_func(b.m, "f");
    raf_memory_stats st[64];
    size_t nf = raf_module_memory_stats(b.m, st, 64);
    raf_tensor **args = random_args(&a);
    raf_tensor **args_b = calloc((size_t)fb->nargs + 1, sizeof *args_b);
    for (int i = 0; i < fb->nargs; i++) { /* fused functions come first */
      args_b[i] = raf_exec_alloc(b.ex, fb->args[i].value->type);
      memcpy(args_b[i]->data, args[i]->data, args[i]->nbytes);
    }
    raf_tensor **ra = two_steps(&a, fa, args), **rb = two_steps(&b, fb, args_b);
    CHECK(ra && rb);
    bool same = ra && rb;
    for (int i = 0; same && i < fa->nresults; i++) {
      same = ra[i]->nbytes == rb[i]->nbytes &&
             memcmp(ra[i]->data, rb[i]->data, ra[i]->nbytes) == 0;
      compared++;
    }
    for (int i = 0; same && i < fa->nargs; i++)
      same = memcmp(args[i]->data, args_b[i]->data, args[i]->nbytes) == 0;
    CHECK(same);
    /* The measured peak (the arguments, allocated above, included) is the
     * static one of @f, the module's last function. */
    CHECK(nf >= 1 && st[nf - 1].planned);
    bool peak = nf >= 1 && nf <= 64 &&
                (int64_t)raf_exec_peak_bytes(b.ex) == st[nf - 1].peak;
    CHECK(peak);
    if (!same || !peak) {
      fprintf(stderr, "%s (%s): measured peak %zu, static %lld; program:\n%s",
              !same ? "results differ" : "peaks differ", passes,
              raf_exec_peak_bytes(b.ex),
              nf ? (long long)st[nf - 1].peak : -1LL, g.buf);
      raf_print_module(b.m, stderr, 0);
    }
    for (int i = 0; i < fa->nresults; i++) {
      if (ra)
        raf_exec_free(a.ex, ra[i]);
      if (rb)
        raf_exec_free(b.ex, rb[i]);
    }
    free(ra);
    free(rb);
    free_tensors(&a, args, fa->nargs);
    free_tensors(&b, args_b, fb->nargs);
    program_close(&a);
    program_close(&b);
  }
  /* The plans must run in place and donate, or the property says little. */
  CHECK(inplace > programs);
  CHECK(donated > programs / 4);
  CHECK(compiled_inplace > programs / 40);
  printf("test_plan_memory: %d programs, %d results compared, %d results "
         "in place (%d of them by compiled kernels), %d donated, %d "
         "failures\n",
         programs, compared, inplace, compiled_inplace, donated, failures);
  kernel_cache_remove(cache);
  free(g.buf);
  return failures != 0;
}
