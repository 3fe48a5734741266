/* test_plan_memory.c: the properties of plan-memory on random programs.
 *
 * Random straight-line programs (randstep.h: elementwise and broadcast
 * ops, compares and where, reductions, softmax, matmul, reshapes, split,
 * scalar constants, casts through another float dtype and back), in f32,
 * bf16 or f16 (half the programs f32), with params that results update
 * (an optimizer-like step: some params read again after their update is
 * made, some not), and state carried from step to step (randprog.h's
 * carried: dropouts keyed by a {state} key the step advances, batch_norm
 * in training mode updating its running statistics, chained from one
 * batch_norm to the next, a moving average of activations), run through
 * the executor unplanned and after a random
 * pipeline ending in plan-memory (with or without in place and donation,
 * after fuse or not).
 * Two steps are run, with the donation of raf-run between them. Then:
 *  - every result and every argument after the steps is bit-identical
 *    (the states included: the second step draws its dropout masks from
 *    the key the first advanced, and normalises with the statistics it
 *    left);
 *  - the planned module verifies (the plan checker agrees with the pass);
 *  - the executor's measured peak equals raf-opt --stats' planned peak;
 *  - the plans do run in place and donate, and the programs do carry state
 *    and drop out inside fused kernels (counted, so that the test fails if
 *    they stop). (The llvm dialect compiles no dropout: a fused function
 *    with one runs statement by statement on cpu-ref.)
 * Fixed seed: failures reproduce, and the failing program is printed. */
#include "ir/ir.h"
#include "runtime/exec.h"

#include <string.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/randstep.h"

/* A random step (randstep.h): small shapes, 6 to 36 statements, one in
 * five followed by one that carries state, the params' updates anywhere
 * among them (the param may be read after its update). */
static void program_text(gen *g) {
  carried c;
  carried_init(&c);
  step_begin(g, 1, 5, 1, 7, 0, 3);
  int nstmt = (int)rand_int(6, 36), upd[3];
  for (int i = 0; i < nstmt && g->n < MAXV - 12; i++) {
    step_statement(g);
    if (rand_int(0, 4) == 0)
      step_carried_statement(g, &c);
    for (int k = 0; k < g->nparams; k++)
      if (i == nstmt * (k + 1) / (g->nparams + 1))
        upd[k] = step_update(g, k);
  }
  step_finish_carried(g, upd, &c);
}

/* The statements of op in m's functions; with in_calls, only those in the
 * functions called (fused kernels). */
static int count_op(const raf_module *m, raf_opcode op, bool in_calls) {
  int n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next) {
      n += s->op == op && !in_calls;
      for (raf_stmt *t = s->op == RAF_OP_CALL && in_calls ? s->callee->first
                                                           : NULL;
           t; t = t->next)
        n += t->op == op;
    }
  return n;
}

/* The {updates} results of f that carry a {state} argument. */
static int count_state_updates(const raf_func *f) {
  int n = 0;
  for (int q = 0; q < f->nresults; q++) {
    const raf_arg *a = raf_result_updates(f, q);
    n += a && raf_arg_flag(a, "state");
  }
  return n;
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
      const char *d = raf_stmt_dialect_name(s);
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
  int compiled_inplace = 0, states = 0, batch_norms = 0, fused_dropouts = 0;
  /* Compiled kernels with scalar libm compute cpu-ref's bits; their
   * cache is a directory of this run's own. */
  char cache[] = "/tmp/raf-test-plan-XXXXXX";
  CHECK(kernel_cache_open(cache));
  setenv("RAF_JIT_MATH", "exact", 1);
  for (int it = 0; it < programs && failures == 0; it++) {
    program_text(&g);
    const char *passes = pipelines[rand_int(0, 6)];
    program a, b;
    bool ok = step_open(&a, g.buf, NULL);
    ok = step_open(&b, g.buf, passes) && ok;
    CHECK(ok);
    if (!ok)
      break;
    inplace += count_attr(b.m, "inplace");
    compiled_inplace += count_compiled_inplace(b.m);
    donated += count_attr(b.m, "donated");
    batch_norms += count_op(b.m, RAF_OP_BATCH_NORM, false);
    fused_dropouts += count_op(b.m, RAF_OP_DROPOUT, true);
    raf_func *fa = raf_module_find_func(a.m, "f");
    raf_func *fb = raf_module_find_func(b.m, "f");
    states += count_state_updates(fb);
    raf_memory_stats st[64];
    size_t nf = raf_module_memory_stats(b.m, st, 64);
    raf_tensor **args = random_args(&a);
    raf_tensor **args_b = calloc((size_t)fb->nargs + 1, sizeof *args_b);
    for (int i = 0; i < fb->nargs; i++) { /* fused functions come first */
      args_b[i] = raf_exec_alloc(b.ex, fb->args[i].value->type);
      memcpy(args_b[i]->data, args[i]->data, args[i]->nbytes);
    }
    raf_tensor **ra = step_run_twice(&a, fa, args),
               **rb = step_run_twice(&b, fb, args_b);
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
  CHECK(states > programs);
  CHECK(batch_norms > programs / 4);
  CHECK(fused_dropouts > programs / 20);
  printf("test_plan_memory: %d programs, %d results compared, %d results "
         "in place (%d of them by compiled kernels), %d donated, %d states "
         "carried, %d batch_norms, %d dropouts in fused kernels, %d "
         "failures\n",
         programs, compared, inplace, compiled_inplace, donated, states,
         batch_norms, fused_dropouts, failures);
  kernel_cache_remove(cache);
  free(g.buf);
  return failures != 0;
}
