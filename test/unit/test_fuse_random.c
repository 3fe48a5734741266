/* test_fuse_random.c: the property that fusion never changes what a
 * program computes. Random straight-line programs over a few broadcastable
 * shapes (elementwise and broadcast ops, compares and where, reductions
 * over some or all axes with and without keepdims, softmax, log_softmax,
 * layer_norm, cross_entropy, reshape, transpose, slice, scalar constants,
 * and matmul and split as ops that stay outside groups and so make cycles
 * possible), in f32, bf16 or f16 (half the programs f32) with casts
 * through the other two and back, and with state (randprog.h's carried:
 * dropouts keyed by a {state} key, which fuse puts into groups, so a mask
 * must not depend on the kernel it is drawn in; batch_norm in training
 * mode, which stays out, its new running statistics {updates} results; a
 * moving average, elementwise over a {state} argument), run through the
 * executor as written and after the fuse pass (with a random
 * max-group-size; one program in eight with the fused functions compiled
 * by the llvm dialect); every result, state updates included, must be
 * bit-identical, the fused module must verify, and the fused functions
 * must be called (the test counts them, and the dropouts fused, the
 * batch_norms and the states compared, so that it fails if fusion stops
 * happening or the generator stops making them). Fixed seed: failures
 * reproduce, and the failing program is printed.
 *
 * Programs are up to 80 statements long and operands are mostly recent
 * values, so that chains are long and groups interleave: a cycle in the
 * contracted graph can need a group with members on both sides of
 * another group, reached through a statement that joins neither (a
 * matmul, a split, a group that is full or of another shape). Programs
 * of at most 40 statements with uniformly picked operands made that rare
 * (the first at program 2775 of the seed then, after the 1500 run, so a
 * fuse pass bounding its acyclicity walks by statement positions passed);
 * now about one program in a hundred has such a shape. */
#include "ir/ir.h"
#include "runtime/exec.h"

#include <string.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/randprog.h"

/* A value, three times in four one of the last eight. */
static int pick(gen *g, bool want_float) {
  int lo = rand_int(0, 3) && g->n > 8 ? g->n - 8 : 0;
  for (int t = 0; t < 50; t++) {
    int k = (int)rand_int(lo, g->n - 1);
    if (!want_float || g->v[k].kind == K_F32)
      return k;
  }
  return 0; /* %v0 is a float argument */
}

/* One random statement (or a few), appended to the program; c, the state
 * the program carries (randprog.h). */
static void statement(gen *g, carried *c) {
  static const char *unary[] = {"neg", "abs", "tanh", "sigmoid", "relu",
                                "exp", "erf", "cos"};
  static const char *binary[] = {"add", "sub", "mul", "maximum", "minimum"};
  static const char *reduce[] = {"sum", "max", "mean", "min"};
  int a = pick(g, true);
  const val *va = &g->v[a];
  int kind = (int)rand_int(0, 19);
  int r;
  switch (kind) {
  case 0: case 1: case 2: { /* unary */
    r = new_val(g, va->rank, va->d[0], va->d[1]);
    emit(g, "  %%v%d = %s(%%v%d)\n", r, unary[rand_int(0, 7)], a);
    return;
  }
  case 3: case 4: case 5: case 6: { /* binary, broadcasting */
    int b = pick(g, true);
    val out;
    for (int t = 0; t < 20 && !bcast(va, &g->v[b], &out); t++)
      b = pick(g, true);
    if (!bcast(va, &g->v[b], &out))
      b = a, out = *va;
    r = new_val(g, out.rank, out.d[0], out.d[1]);
    emit(g, "  %%v%d = %s(%%v%d, %%v%d)\n", r, binary[rand_int(0, 4)], a, b);
    return;
  }
  case 7: { /* a scalar constant */
    int c = new_val(g, 0, 0, 0);
    emit(g, "  %%v%d = constant %g : %s[]\n", c, (double)rand_int(1, 9) / 4,
         fname(g));
    r = new_val(g, va->rank, va->d[0], va->d[1]);
    emit(g, "  %%v%d = mul(%%v%d, %%v%d)\n", r, a, c);
    return;
  }
  case 8: /* compare and where */
    compare_where(g, a, pick(g, true));
    return;
  case 9: { /* a reduction */
    if (va->rank == 0)
      return;
    bool keep = rand_int(0, 1);
    int which = (int)rand_int(0, va->rank); /* va->rank: all axes */
    const char *op = reduce[rand_int(0, 3)];
    if (which == va->rank) {
      r = keep ? new_val(g, va->rank, 1, 1) : new_val(g, 0, 0, 0);
      emit(g, "  %%v%d = %s(%%v%d)%s\n", r, op, a, keep ? " {keepdims}" : "");
    } else {
      int64_t d[2] = {va->d[0], va->d[1]};
      if (keep) {
        d[which] = 1;
        r = new_val(g, va->rank, d[0], d[1]);
      } else if (va->rank == 2) {
        r = new_val(g, 1, d[1 - which], 0);
      } else {
        r = new_val(g, 0, 0, 0);
      }
      emit(g, "  %%v%d = %s(%%v%d) {axes = [%d]%s}\n", r, op, a, which,
           keep ? ", keepdims" : "");
    }
    return;
  }
  case 10: { /* row ops */
    if (va->rank == 0)
      return;
    r = new_val(g, va->rank, va->d[0], va->d[1]);
    if (is_rc(g, a) && rand_int(0, 1))
      emit(g, "  %%v%d = layer_norm(%%v%d, %%g, %%bt)\n", r, a);
    else
      emit(g, "  %%v%d = %s(%%v%d)\n", r,
           rand_int(0, 1) ? "softmax" : "log_softmax", a);
    return;
  }
  case 11: { /* cross_entropy with labels made in the program */
    if (!is_rc(g, a))
      return;
    int lab = new_val(g, 1, g->R, 0);
    g->v[lab].kind = K_I64;
    emit(g, "  %%v%d = argmax(%%v%d) {axis = 1}\n", lab, a);
    int b = pick(g, true);
    if (!is_rc(g, b))
      b = a;
    r = new_val(g, 1, g->R, 0);
    emit(g, "  %%v%d = cross_entropy(%%v%d, %%v%d) {reduction = \"none\"}\n",
         r, b, lab);
    return;
  }
  case 12: { /* reshape, transpose, slice of [R,C] */
    if (!is_rc(g, a))
      return;
    int how = (int)rand_int(0, 2);
    if (how == 0) {
      r = new_val(g, 1, g->R * g->C, 0);
      emit(g, "  %%v%d = reshape(%%v%d) {shape = [%lld]}\n", r, a,
           (long long)(g->R * g->C));
      int back = new_val(g, 2, g->R, g->C);
      emit(g, "  %%v%d = reshape(%%v%d) {shape = [%lld, %lld]}\n", back, r,
           (long long)g->R, (long long)g->C);
    } else if (how == 1) {
      r = new_val(g, 2, g->C, g->R);
      emit(g, "  %%v%d = transpose(%%v%d)\n", r, a);
    } else if (g->C > 1) {
      r = new_val(g, 2, g->R, g->C - 1);
      emit(g, "  %%v%d = slice(%%v%d) {begin = [0, 1], end = [%lld, %lld]}\n",
           r, a, (long long)g->R, (long long)g->C);
    }
    return;
  }
  case 14: /* through another float dtype and back */
    cast_round_trip(g, a);
    return;
  case 17: /* a member of groups: the mask must not depend on the group */
    carry_dropout(g, c, a);
    return;
  case 18: /* stays out of every group; its statistics are state */
    carry_batch_norm(g, c, a);
    return;
  case 19: /* elementwise over a {state} argument and an update of it */
    carry_ema(g, c, a);
    return;
  case 13: { /* split in two along an axis: stays out of every group */
    if (va->rank == 0)
      return;
    int axis = (int)rand_int(0, va->rank - 1);
    if (va->d[axis] < 2)
      return;
    int64_t d[2] = {va->d[0], va->d[1]};
    d[axis] = 1;
    r = new_val(g, va->rank, d[0], d[1]);
    d[axis] = va->d[axis] - 1;
    int r2 = new_val(g, va->rank, d[0], d[1]);
    emit(g, "  %%v%d, %%v%d = split(%%v%d) {axis = %d, sizes = [1, %lld]}\n",
         r, r2, a, axis, (long long)(va->d[axis] - 1));
    return;
  }
  default: { /* matmul: stays out of every group */
    if (!is_rc(g, a))
      return;
    r = new_val(g, 2, g->R, g->C);
    emit(g, "  %%v%d = matmul(%%v%d, %%w)\n", r, a);
    return;
  }
  }
}

/* A random program, as text in g->buf: the statements are generated
 * first, then the signature (which names the results) goes before them. */
static void program_text(gen *g) {
  carried c;
  carried_init(&c);
  g->len = 0;
  g->n = 0;
  choose_dtype(g);
  g->R = rand_int(1, 5);
  g->C = rand_int(1, 7);
  new_val(g, 2, g->R, g->C); /* %v0 .. %v3: the broadcastable arguments */
  new_val(g, 1, g->C, 0);
  new_val(g, 2, g->R, 1);
  new_val(g, 0, 0, 0);
  int nstmt = (int)rand_int(6, 80);
  for (int i = 0; i < nstmt && g->n < MAXV - 6; i++)
    statement(g, &c);
  /* Results: the last value and up to three others. */
  int res[4], nres = 0;
  res[nres++] = g->n - 1;
  for (int t = 0; t < 3 && g->n > 4; t++) {
    int k = (int)rand_int(4, g->n - 1);
    bool dup = false;
    for (int j = 0; j < nres; j++)
      dup = dup || res[j] == k;
    if (!dup)
      res[nres++] = k;
  }
  char args[512], results[256] = "", returns[128] = "";
  const char *f = fname(g);
  snprintf(args, sizeof args,
           "%%v0: %s[%lld,%lld], %%v1: %s[%lld], %%v2: %s[%lld,1], "
           "%%v3: %s[], %%w: %s[%lld,%lld], %%g: %s[%lld], %%bt: %s[%lld]",
           f, (long long)g->R, (long long)g->C, f, (long long)g->C, f,
           (long long)g->R, f, f, (long long)g->C, (long long)g->C, f,
           (long long)g->C, f, (long long)g->C);
  carried_args(g, args, sizeof args);
  carried_results(g, &c, results, sizeof results, returns, sizeof returns);
  wrap_function(g, args, results, returns, res, nres);
}

/* Runs `passes` (may be NULL) over text, dispatches it to `dialects` and
 * makes an executor. */
static bool open_with(program *p, const char *text, const char *passes,
                      const char *dialects) {
  char pipeline[256];
  snprintf(pipeline, sizeof pipeline, "%s%sdispatch{dialects=%s}",
           passes ? passes : "", passes ? "," : "", dialects);
  return program_open_pipeline(p, text, pipeline, 1);
}

/* The statements of op in the functions f calls (its fused kernels). */
static int count_fused_op(const raf_func *f, raf_opcode op) {
  int n = 0;
  for (const raf_stmt *s = f->first; s; s = s->next)
    for (const raf_stmt *t = s->op == RAF_OP_CALL ? s->callee->first : NULL;
         t; t = t->next)
      n += t->op == op;
  return n;
}

/* The statements of op in f. */
static int count_op(const raf_func *f, raf_opcode op) {
  int n = 0;
  for (const raf_stmt *s = f->first; s; s = s->next)
    n += s->op == op;
  return n;
}

static int count_fused_calls(const raf_func *f) {
  int n = 0;
  for (const raf_stmt *s = f->first; s; s = s->next)
    n += s->op == RAF_OP_CALL;
  return n;
}

int main(void) {
  gen g = {.buf = malloc(1 << 16), .cap = 1 << 16};
  int programs = 1500, fused = 0, compared = 0, compiled = 0;
  int fused_dropouts = 0, batch_norms = 0, states = 0;
  static const char *sizes[] = {"2", "3", "5", "1024"};
  /* One program in eight has its fused functions compiled by the llvm
   * dialect, whose kernels with scalar libm compute cpu-ref's bits; their
   * cache is a directory of this run's own. */
  char cache[] = "/tmp/raf-test-fuse-XXXXXX";
  CHECK(kernel_cache_open(cache));
  setenv("RAF_JIT_MATH", "exact", 1);
  for (int it = 0; it < programs && failures == 0; it++) {
    program_text(&g);
    char passes[64];
    snprintf(passes, sizeof passes, "fuse{max-group-size=%s}",
             sizes[rand_int(0, 3)]);
    const char *dialects = rand_int(0, 7) ? "cpu-ref" : "llvm,cpu-ref";
    program a, b;
    bool ok = open_with(&a, g.buf, NULL, "cpu-ref");
    ok = open_with(&b, g.buf, passes, dialects) && ok;
    CHECK(ok);
    if (ok) {
      raf_func *fa = raf_module_find_func(a.m, "f");
      raf_func *fb = raf_module_find_func(b.m, "f");
      CHECK(fb == b.m->last); /* fused functions go before it */
      fused += count_fused_calls(fb);
      fused_dropouts += count_fused_op(fb, RAF_OP_DROPOUT);
      batch_norms += count_op(fb, RAF_OP_BATCH_NORM);
      for (const raf_stmt *s = fb->first; s; s = s->next) {
        const char *d = raf_stmt_dialect_name(s);
        compiled += s->op == RAF_OP_CALL && d && strcmp(d, "llvm") == 0;
      }
      raf_tensor **args = random_args(&a); /* a's first function is @f */
      raf_tensor **args_b = calloc((size_t)fb->nargs, sizeof *args_b);
      for (int i = 0; i < fb->nargs; i++) {
        args_b[i] = raf_exec_alloc(b.ex, fb->args[i].value->type);
        memcpy(args_b[i]->data, args[i]->data, args[i]->nbytes);
      }
      raf_tensor **ra = calloc((size_t)fa->nresults, sizeof *ra);
      raf_tensor **rb = calloc((size_t)fb->nresults, sizeof *rb);
      bool ran = raf_exec_call(a.ex, fa, args, ra) == RAF_OK &&
                 raf_exec_call(b.ex, fb, args_b, rb) == RAF_OK;
      if (!ran) {
        raf_diag_render(a.ctx, stderr);
        raf_diag_render(b.ctx, stderr);
      }
      CHECK(ran);
      for (int i = 0; ran && i < fa->nresults; i++) {
        bool same = ra[i]->nbytes == rb[i]->nbytes &&
                    memcmp(ra[i]->data, rb[i]->data, ra[i]->nbytes) == 0;
        CHECK(same);
        if (!same) {
          fprintf(stderr, "result %d differs (%s, %s), program:\n%s", i,
                  passes, dialects, g.buf);
          raf_print_module(b.m, stderr, 0);
        }
        compared++;
        const raf_arg *u = raf_result_updates(fb, i);
        states += u && raf_arg_flag(u, "state");
      }
      for (int i = 0; i < fa->nresults; i++) {
        if (ra[i])
          raf_exec_free(a.ex, ra[i]);
        if (rb[i])
          raf_exec_free(b.ex, rb[i]);
      }
      free(ra);
      free(rb);
      free_tensors(&a, args, fa->nargs);
      free_tensors(&b, args_b, fb->nargs);
    }
    program_close(&a);
    program_close(&b);
  }
  /* The programs must exercise fusion, or the property says nothing. */
  CHECK(fused > programs);
  CHECK(compiled > programs / 4); /* calls: several per program */
  CHECK(fused_dropouts > programs / 8);
  CHECK(batch_norms > programs / 8);
  CHECK(states > programs / 2);
  printf("test_fuse_random: %d programs, %d results compared (%d of them "
         "states), %d fused calls (%d compiled), %d dropouts fused, %d "
         "batch_norms, %d failures\n",
         programs, compared, states, fused, compiled, fused_dropouts,
         batch_norms, failures);
  kernel_cache_remove(cache);
  free(g.buf);
  return failures != 0;
}
