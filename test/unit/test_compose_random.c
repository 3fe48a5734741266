/* test_compose_random.c: the properties of pass pipelines composed on
 * random training steps.
 *
 * Each program is a random forward model with a cross_entropy loss: a few
 * layers of matmul and bias add, then tanh, sigmoid or gelu, dropout keyed
 * by a {state} key, batch_norm in training mode (its running statistics
 * chained from one to the next), layer_norm, a residual add or a moving
 * average of a {state} argument (randprog.h's carried). The forward returns
 * its loss, then the state it carries out ({updates}: the advanced key, the
 * statistics, the average). autodiff and optimizer (SGD, momentum or AdamW)
 * make its training step @f_train_step, which is run twice with raf-run's
 * donation between the calls, and compared with the step the pipeline
 * without the passes under test makes ("reference": autodiff, optimizer,
 * inline on cpu-ref):
 *  - amp{dtype=bf16}, then fuse, remat (at half the peak or, when remat
 *    refuses that, at the least peak it names) and plan-memory:
 *    bit-identical to amp alone (remat,
 *    fuse and plan-memory promise the same bits), and amp alone within
 *    AMP_RTOL (relative to the largest magnitude of the tensor, per
 *    tensor) of the f32 reference, every result and every argument after
 *    the steps (params, optimizer moments, the running statistics, the
 *    key) included;
 *  - shard{world=1}: bit-identical to the reference (world=1 makes every
 *    collective the identity and rewrites nothing across ranks), then
 *    fuse and plan-memory: bit-identical to shard{world=1} alone; a forward that updates state may instead be
 *    refused, with a located error (never a silently different step);
 *  - shard{world=2}, then fuse and plan-memory: structurally (running it
 *    needs mpirun): the module verifies (the plan checker included), the
 *    step is marked world = 2, its data arguments hold half the batch, and
 *    it all-reduces.
 * Counts (programs recomputing something, dropouts, batch_norms, states
 * compared) make the test fail if the generator or the passes stop doing
 * what the properties need. Fixed seed: failures reproduce, and the
 * failing program is printed. */
#include "ir/ir.h"
#include "runtime/exec.h"

#include <math.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/randstep.h"

#define PROGRAMS 400
#define MAX_LAYERS 4

/* bf16 keeps 8 bits of mantissa: after two steps through a few layers of
 * bf16 matmuls, the loss, the params and the states the forward carries
 * stay within this of the f32 step's, relative to each tensor's largest
 * magnitude (the worst seen over this seed is printed). */
#define AMP_RTOL 0.1

/* The optimizers, AdamW last: it divides each gradient by its own root
 * mean square, so a gradient that is zero but for rounding (a bias before
 * batch_norm) moves its param by a full lr whose sign is the rounding's.
 * Steps with AdamW are held to the bit-identical properties alone. */
static const char *OPTIMIZERS[] = {"sgd lr=0.1", "momentum lr=0.1",
                                   "adamw lr=0.01"};
#define ADAMW 2

/* A random forward model (described above) in g->buf; nlayers, the number
 * of params %w<l>, %b<l>. */
static void forward_text(gen *g, carried *c, bool read_only, int *nlayers) {
  static const char *acts[] = {"tanh", "sigmoid", "gelu"};
  g->len = 0;
  g->n = 0;
  g->fdt = RAF_F32; /* what amp starts from */
  g->R = 2 * rand_int(2, 8); /* even: world=2 halves it; batch_norm over
                                fewer rows is ill-conditioned */
  g->C = rand_int(4, 24); /* layer_norm over fewer is ill-conditioned */
  carried_init(c);
  c->read_only = read_only;
  int h = new_val(g, 2, g->R, g->C); /* %v0: the data */
  *nlayers = (int)rand_int(1, MAX_LAYERS);
  for (int l = 0; l < *nlayers; l++) {
    int in = h, m = new_val(g, 2, g->R, g->C);
    emit(g, "  %%v%d = matmul(%%v%d, %%w%d)\n", m, h, l);
    h = new_val(g, 2, g->R, g->C);
    emit(g, "  %%v%d = add(%%v%d, %%b%d)\n", h, m, l);
    for (int k = (int)rand_int(1, 3); k > 0; k--) {
      switch ((int)rand_int(0, 5)) {
      case 0: {
        int r = new_val(g, 2, g->R, g->C);
        emit(g, "  %%v%d = %s(%%v%d)\n", r, acts[rand_int(0, 2)], h);
        h = r;
        break;
      }
      case 1:
        h = carry_dropout(g, c, h);
        break;
      case 2:
        h = carry_batch_norm(g, c, h);
        break;
      case 3: {
        int r = new_val(g, 2, g->R, g->C);
        emit(g, "  %%v%d = layer_norm(%%v%d, %%g, %%bt)\n", r, h);
        h = r;
        break;
      }
      case 4: {
        int r = new_val(g, 2, g->R, g->C);
        emit(g, "  %%v%d = add(%%v%d, %%v%d)\n", r, h, in);
        h = r;
        break;
      }
      default:
        if (!read_only) /* the average is state the forward updates */
          h = carry_ema(g, c, h);
        break;
      }
    }
  }
  /* %g and %bt are params: every forward reads them. */
  h = rand_int(0, 1) ? carry_batch_norm(g, c, h) : h;
  int r = new_val(g, 2, g->R, g->C);
  emit(g, "  %%v%d = layer_norm(%%v%d, %%g, %%bt)\n", r, h);
  emit(g, "  %%loss = cross_entropy(%%v%d, %%labels)\n", r);

  /* The function around the statements: the loss first, then the state. */
  char args[1024], results[512] = "f32[], ", returns[256] = "%loss, ";
  int n = snprintf(args, sizeof args, "%%v0: f32[%lld,%lld], %%labels: "
                   "i64[%lld]", (long long)g->R, (long long)g->C,
                   (long long)g->R);
  for (int l = 0; l < *nlayers; l++)
    n += snprintf(args + n, sizeof args - (size_t)n,
                  ", %%w%d: f32[%lld,%lld] {param}, %%b%d: f32[%lld] "
                  "{param}", l, (long long)g->C, (long long)g->C, l,
                  (long long)g->C);
  snprintf(args + n, sizeof args - (size_t)n,
           ", %%g: f32[%lld] {param}, %%bt: f32[%lld] {param}",
           (long long)g->C, (long long)g->C);
  carried_args(g, args, sizeof args);
  carried_results(g, c, results, sizeof results, returns, sizeof returns);
  results[strlen(results) - 2] = 0; /* the last ", " */
  returns[strlen(returns) - 2] = 0;
  size_t cap = g->len + 4096;
  char *text = malloc(cap);
  int k = snprintf(text, cap, "func @f(%s) -> (%s) {\n%.*s  return %s\n}\n",
                   args, results, (int)g->len, g->buf, returns);
  g->len = (size_t)k;
  memcpy(g->buf, text, g->len + 1);
  free(text);
}

/* The step's arguments as a training run starts them: the data and the
 * params uniform in [-1, 1), the labels classes of C, the key any i64,
 * the optimizer's states ({init}) and the running means zero, the running
 * variances one. */
static raf_tensor **step_args(program *p, const raf_func *f, int64_t classes) {
  raf_tensor **args = calloc((size_t)f->nargs + 1, sizeof *args);
  for (int i = 0; i < f->nargs; i++) {
    raf_tensor *t = args[i] = raf_exec_alloc(p->ex, f->args[i].value->type);
    const char *name = f->args[i].value->name;
    bool zero = raf_attrs_find(&f->args[i].attrs, "init") ||
                strcmp(name, "rm") == 0 || strcmp(name, "ema") == 0;
    for (int64_t e = 0; e < t->type->numel; e++) {
      if (strcmp(name, "labels") == 0)
        raf_elem_set_i64(t->type->dtype, t->data, e, rand_int(0, classes - 1));
      else if (strcmp(name, "key") == 0)
        raf_elem_set_i64(t->type->dtype, t->data, e, (int64_t)next_u64());
      else
        raf_elem_set_f64(t->type->dtype, t->data, e,
                         zero ? 0 : strcmp(name, "rv") == 0 ? 1
                                                             : rand_unit());
    }
  }
  return args;
}

/* Runs passes over text (they must dispatch), then two steps of
 * @f_train_step from args (copied); the results, and the arguments after
 * the steps in *after. NULL when the pipeline or a step fails (reported
 * unless quiet). */
typedef struct stepped {
  program p;
  raf_func *f;
  raf_tensor **res, **args;
} stepped;

static bool step_with(stepped *s, const char *text, const char *passes,
                      int64_t classes, bool quiet) {
  memset(s, 0, sizeof *s);
  bool ok = quiet ? program_try_open(&s->p, text, passes, 1)
                  : program_open_pipeline(&s->p, text, passes, 1);
  if (!ok)
    return false;
  s->f = raf_module_find_func(s->p.m, "f_train_step");
  uint64_t seed = rng_state; /* every pipeline starts from the same args */
  s->args = step_args(&s->p, s->f, classes);
  rng_state = seed;
  s->res = step_run_twice(&s->p, s->f, s->args);
  return s->res != NULL;
}

static void stepped_close(stepped *s) {
  for (int i = 0; s->res && i < s->f->nresults; i++)
    raf_exec_free(s->p.ex, s->res[i]);
  free(s->res);
  if (s->args)
    free_tensors(&s->p, s->args, s->f->nargs);
  program_close(&s->p);
}

/* The largest relative distance between two tensors of one type:
 * max |a - b| over max |b| (1 when b is all zeros); 0 when bit-identical,
 * INFINITY when their sizes differ or a value is not finite. */
static double distance(const raf_tensor *a, const raf_tensor *b) {
  if (a->nbytes != b->nbytes || a->type->dtype != b->type->dtype)
    return INFINITY;
  if (memcmp(a->data, b->data, a->nbytes) == 0)
    return 0;
  double diff = 0, scale = 0;
  for (int64_t e = 0; e < a->type->numel; e++) {
    double x = raf_elem_get_f64(a->type->dtype, a->data, e),
           y = raf_elem_get_f64(b->type->dtype, b->data, e);
    if (!isfinite(x) || !isfinite(y))
      return INFINITY;
    diff = fmax(diff, fabs(x - y));
    scale = fmax(scale, fabs(y));
  }
  return diff / (scale > 0 ? scale : 1);
}

/* The largest distance between two steps' results and arguments after
 * the steps, in order (the pipelines keep the step's signature); the
 * states compared added to *states. */
static double step_distance(const stepped *a, const stepped *b, int *states) {
  if (a->f->nresults != b->f->nresults || a->f->nargs != b->f->nargs)
    return INFINITY;
  double d = 0;
  for (int i = 0; i < a->f->nresults; i++) {
    d = fmax(d, distance(a->res[i], b->res[i]));
    const raf_arg *u = raf_result_updates(a->f, i);
    *states += u && raf_arg_flag(u, "state");
  }
  for (int i = 0; i < a->f->nargs; i++)
    d = fmax(d, distance(a->args[i], b->args[i]));
  return d;
}

/* step_distance for the properties held to a tolerance: the loss, and the
 * params and the states that are not the optimizer's (no {init}) after
 * the steps. The optimizer's moments are raw gradients, some of them zero
 * but for rounding (a bias before batch_norm): no relative bound holds
 * there. */
static double model_distance(const stepped *ref, const stepped *amp) {
  if (ref->f->nargs != amp->f->nargs)
    return INFINITY;
  double d = distance(ref->res[0], amp->res[0]);
  for (int i = 0; i < ref->f->nargs; i++) {
    const raf_arg *a = &ref->f->args[i];
    if (raf_arg_flag(a, "param") ||
        (raf_arg_flag(a, "state") && !raf_attrs_find(&a->attrs, "init")))
      d = fmax(d, distance(ref->args[i], amp->args[i]));
  }
  return d;
}

/* The least peak a refused remat names: the last "(N bytes)" of its
 * error; -1 when there is none. */
static long long least_peak(raf_ctx *ctx) {
  for (size_t i = 0; i < raf_diag_count(ctx); i++) {
    raf_loc loc;
    raf_severity sev;
    const char *msg, *at;
    raf_diag_get(ctx, i, &loc, &sev, &msg);
    long long bytes = -1, n;
    for (at = strchr(msg, '('); sev == RAF_SEV_ERROR && at;
         at = strchr(at + 1, '('))
      if (sscanf(at, "(%lld bytes)", &n) == 1)
        bytes = n;
    if (bytes >= 0)
      return bytes;
  }
  return -1;
}

/* Whether a diagnostic of ctx says `what`. */
static bool has_note(raf_ctx *ctx, const char *what) {
  for (size_t i = 0; i < raf_diag_count(ctx); i++) {
    raf_loc loc;
    raf_severity sev;
    const char *msg;
    raf_diag_get(ctx, i, &loc, &sev, &msg);
    if (strstr(msg, what))
      return true;
  }
  return false;
}

static int count_op(const raf_func *f, raf_opcode op) {
  int n = 0;
  for (raf_stmt *s = f->first; s; s = s->next)
    n += s->op == op;
  return n;
}

static void report(const char *what, const char *pipeline, double d,
                   const char *text) {
  fprintf(stderr, "%s: distance %g (%s), program:\n%s", what, d, pipeline,
          text);
}

/* What the properties counted, over all programs. */
static int recomputed, states, refused, sharded;
static double amp_worst, shard_worst;

/* shard{world=1} against the reference bit for bit, and then fuse
 * and plan-memory against shard{world=1} alone bit for bit. A forward
 * that updates state (may_refuse) may instead be refused, with a located
 * error, never a silently different step. */
static void check_shard_one(const stepped *ref, const char *text,
                            int opt_index, int64_t classes, bool may_refuse) {
  const char *opt = OPTIMIZERS[opt_index];
  char passes[512];
  snprintf(passes, sizeof passes,
           "autodiff,optimizer{kind=%s},shard{world=1},inline,"
           "dispatch{dialects=cpu-ref}", opt);
  stepped one, all;
  bool ok = step_with(&one, text, passes, classes, may_refuse);
  if (may_refuse && !one.f) { /* the pipeline refused it */
    bool located = raf_diag_count(one.p.ctx) > 0;
    CHECK(located);
    refused += located;
    stepped_close(&one);
    return;
  }
  CHECK(ok);
  if (ok) {
    int unused = 0;
    double d = step_distance(ref, &one, &unused);
    shard_worst = fmax(shard_worst, d);
    CHECK(d == 0);
    if (d != 0)
      report("shard{world=1} differs from the step", passes, d, text);
    snprintf(passes, sizeof passes,
             "autodiff,optimizer{kind=%s},shard{world=1},inline,"
             "dispatch{dialects=cpu-ref},fuse,plan-memory", opt);
    ok = step_with(&all, text, passes, classes, false);
    CHECK(ok);
    d = ok ? step_distance(&one, &all, &states) : 0;
    CHECK(d == 0);
    if (d != 0)
      report("shard{world=1} then fuse then plan differs from shard", passes,
             d, text);
    stepped_close(&all);
  }
  stepped_close(&one);
}

/* amp alone against the reference within AMP_RTOL, and amp then fuse,
 * remat and plan-memory against amp alone bit for bit; then, when the
 * forward updates state, check_shard_one, which may refuse it. */
static void check_amp(const stepped *ref, const char *text, int opt_index,
                      int64_t classes, bool updates_state) {
  const char *opt = OPTIMIZERS[opt_index];
  char passes[512];
  snprintf(passes, sizeof passes,
           "autodiff,amp{dtype=bf16},optimizer{kind=%s},inline,"
           "dispatch{dialects=cpu-ref}", opt);
  stepped amp, all;
  bool ok = step_with(&amp, text, passes, classes, false);
  CHECK(ok);
  /* Half the peak; when remat refuses it, the least peak it names (after
   * the params and states alone, when the budget is below them). */
  char budget[64] = "ratio=0.5";
  bool stepped_all = false;
  for (int tries = 0; ok && tries < 3 && !stepped_all; tries++) {
    snprintf(passes, sizeof passes,
             "autodiff,amp{dtype=bf16},optimizer{kind=%s},inline,"
             "dispatch{dialects=cpu-ref},fuse,remat{%s},plan-memory",
             opt, budget);
    stepped_all = step_with(&all, text, passes, classes, tries < 2);
    if (!stepped_all) {
      long long least = least_peak(all.p.ctx);
      snprintf(budget, sizeof budget, "budget=%lld", least);
      stepped_close(&all);
      if (least < 0) /* refused for another reason (reported) */
        break;
    }
  }
  CHECK(!ok || stepped_all);
  if (ok && stepped_all) {
    recomputed += !has_note(all.p.ctx, "nothing recomputed");
    double exact = step_distance(&amp, &all, &states);
    CHECK(exact == 0);
    if (exact != 0)
      report("amp then remat then plan differs from amp", passes, exact,
             text);
    double d = opt_index == ADAMW ? 0 : model_distance(ref, &amp);
    amp_worst = fmax(amp_worst, d);
    CHECK(d <= AMP_RTOL);
    if (d > AMP_RTOL)
      report("amp is too far from f32", passes, d, text);
    stepped_close(&all);
  }
  stepped_close(&amp);

  if (updates_state)
    check_shard_one(ref, text, opt_index, classes, true);
}

/* check_shard_one; then shard{world=2}, fuse and plan-memory
 * structurally: it verifies, planned, with half the batch on each rank and
 * its collectives. */
static void check_shard(const stepped *ref, const char *text, int opt_index,
                        int64_t batch, int64_t classes) {
  const char *opt = OPTIMIZERS[opt_index];
  char passes[512];
  bool ok;
  check_shard_one(ref, text, opt_index, classes, false);

  snprintf(passes, sizeof passes,
           "autodiff,optimizer{kind=%s},shard{world=2},inline,"
           "dispatch{dialects=cpu-ref},fuse,plan-memory", opt);
  program two;
  ok = program_open_pipeline(&two, text, passes, 1);
  CHECK(ok);
  raf_func *f = ok ? raf_module_find_func(two.m, "f_train_step") : NULL;
  if (f) {
    const raf_attr *w = raf_attrs_find(&f->attrs, "world");
    CHECK(w && w->val.u.i == 2);
    CHECK(f->args[0].value->type->dims[0] == batch / 2);
    CHECK(count_op(f, RAF_OP_ALL_REDUCE) > 0);
    sharded++;
  }
  program_close(&two);
}

int main(void) {
  gen g = {.buf = malloc(1 << 16), .cap = 1 << 16};
  int dropouts = 0, batch_norms = 0;
  for (int it = 0; it < PROGRAMS && failures == 0; it++) {
    carried c;
    int nlayers;
    bool read_only = it % 2; /* half the steps shard */
    forward_text(&g, &c, read_only, &nlayers);
    dropouts += c.dropouts;
    batch_norms += c.mean >= 0;
    int opt_index = (int)rand_int(0, 2);
    const char *opt = OPTIMIZERS[opt_index];
    char passes[256];
    snprintf(passes, sizeof passes,
             "autodiff,optimizer{kind=%s},inline,dispatch{dialects=cpu-ref}",
             opt);
    stepped ref;
    bool ok = step_with(&ref, g.buf, passes, g.C, false);
    CHECK(ok);
    if (ok && read_only)
      check_shard(&ref, g.buf, opt_index, g.R, g.C);
    else if (ok)
      check_amp(&ref, g.buf, opt_index, g.C,
                c.dropouts || c.mean >= 0 || c.ema >= 0);
    stepped_close(&ref);
  }
  CHECK(recomputed > PROGRAMS / 10);
  CHECK(sharded == PROGRAMS / 2);
  CHECK(states > PROGRAMS);
  CHECK(dropouts > PROGRAMS / 2);
  CHECK(batch_norms > PROGRAMS / 4);
  printf("test_compose_random: %d programs, %d recomputing after amp, amp "
         "within %g of f32 (at most %g), shard{world=1} %s, %d states "
         "compared, %d dropouts, %d with batch_norm, %d "
         "shards refused, %d sharded at world=2, %d failures\n",
         PROGRAMS, recomputed, AMP_RTOL, amp_worst,
         shard_worst == 0 ? "bit-identical" : "differs",
         states, dropouts, batch_norms, refused, sharded, failures);
  free(g.buf);
  return failures != 0;
}
