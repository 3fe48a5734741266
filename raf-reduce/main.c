/* raf-reduce: an automatic test-case reducer for .raf modules, in the
 * spirit of llvm-reduce and C-Reduce.
 *
 *   raf-reduce --test=./interesting.sh in.raf -o small.raf
 *
 * The test is a program that gets a candidate module's path as its last
 * argument and exits 0 when the candidate still shows what it looks for (a
 * crash of raf-opt, a pass that changes a result, two dialects that
 * disagree). raf-reduce applies the reductions of reductions.c in rounds
 * until a round keeps nothing, and writes the smallest interesting module.
 *
 * The driver is delta debugging over each reduction's items: try removing
 * all of them, then halves, quarters, ... down to single items; a chunk
 * whose removal keeps the module interesting is kept, and the search goes
 * on from the same position. Every candidate is parsed from the current
 * best text, edited, cleaned of dead statements, verified, and printed; it
 * is tested only when it verifies and is smaller than the current best in
 * the order of module_size below, so the test only sees valid modules and
 * the rounds always end. The output is the last interesting candidate, a
 * module as raf-opt prints it.
 *
 * Exit status: 0 when the output was written; 1 on bad usage, an input
 * that does not parse or verify, or one that is not interesting.
 */
#include "include/raf/raf.h"
#include "passes/pass.h"
#include "raf-reduce/reduce.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct options {
  const char *input, *output, *test, *only;
  const char **test_args;
  int ntest_args;
  double timeout;
  int verbose;
} options;

/* The order in which candidates must get smaller, most important first:
 * functions, calls (inlining trades calls for statements), statements
 * other than constants (a zero constant stands in for a value inside a
 * called function), constants, signature entries, tensor elements, then
 * bytes of text. Each kept candidate is smaller in this order, so the
 * reduction terminates. stmts is the total, for reports. */
typedef struct module_size {
  int64_t funcs, calls, ops, consts, sig, elems, bytes, stmts;
} module_size;

typedef struct reducer {
  const options *opt;
  reduce_oracle oracle;
  char *text; /* the current best, canonically printed; owned */
  size_t len;
  module_size size;
  size_t kept, invalid, larger;
  bool failed; /* the test could not be run: stop */
} reducer;

static void usage(FILE *f) {
  fprintf(f,
          "usage: raf-reduce --test=PROGRAM [options] input.raf [-o output]\n\n"
          "Shrinks a module while PROGRAM, given a candidate's path as its "
          "last\nargument, exits 0.\n\n"
          "Options:\n"
          "  --test=PROGRAM          the interestingness test (required)\n"
          "  --test-arg=ARG          an argument for PROGRAM before the file "
          "(repeatable)\n"
          "  -o FILE                 where the result goes (reduced.raf; "
          "'-': stdout)\n"
          "  --timeout=SECONDS       a test running longer counts as not "
          "interesting\n"
          "  --reductions=a,b,...    run only these reductions (see "
          "--list-reductions)\n"
          "  --list-reductions       list the reductions and exit\n"
          "  -v, --verbose           report each kept candidate (twice, "
          "-vv: also\n"
          "                          invalid ones, and let the test's "
          "output through)\n"
          "  -h, --help              this help\n");
}

static bool parse_args(int argc, char **argv, options *o, int *exit_code) {
  *exit_code = -1;
  o->test_args = calloc((size_t)argc + 1, sizeof *o->test_args);
  o->output = "reduced.raf";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--test=", 7) == 0) {
      o->test = a + 7;
    } else if (strncmp(a, "--test-arg=", 11) == 0) {
      o->test_args[o->ntest_args++] = a + 11;
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      o->output = argv[++i];
    } else if (strncmp(a, "--output=", 9) == 0) {
      o->output = a + 9;
    } else if (strncmp(a, "--timeout=", 10) == 0) {
      char *end;
      o->timeout = strtod(a + 10, &end);
      if (*end || o->timeout < 0) {
        fprintf(stderr, "raf-reduce: bad --timeout '%s'\n", a + 10);
        *exit_code = 1;
        return false;
      }
    } else if (strncmp(a, "--reductions=", 13) == 0) {
      o->only = a + 13;
    } else if (strcmp(a, "--list-reductions") == 0) {
      for (size_t k = 0; k < reduce_npasses; k++)
        printf("%-14s %s\n", reduce_passes[k].name, reduce_passes[k].summary);
      *exit_code = 0;
      return false;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      o->verbose++;
    } else if (strcmp(a, "-vv") == 0) {
      o->verbose += 2;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      *exit_code = 0;
      return false;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "raf-reduce: unknown option '%s'\n", a);
      usage(stderr);
      *exit_code = 1;
      return false;
    } else if (o->input) {
      fprintf(stderr, "raf-reduce: more than one input ('%s', '%s')\n",
              o->input, a);
      *exit_code = 1;
      return false;
    } else {
      o->input = a;
    }
  }
  if (!o->test || !o->input) {
    fprintf(stderr, "raf-reduce: %s\n",
            !o->test ? "--test=PROGRAM is required" : "no input file");
    usage(stderr);
    *exit_code = 1;
    return false;
  }
  return true;
}

/* Whether reduction name is selected by --reductions. */
static bool selected(const options *o, const char *name) {
  if (!o->only)
    return true;
  size_t n = strlen(name);
  for (const char *p = o->only; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0)
      return true;
    p += len + (comma != NULL);
  }
  return false;
}

static bool known_reductions(const char *list) {
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    bool found = false;
    for (size_t k = 0; k < reduce_npasses; k++)
      found |= strlen(reduce_passes[k].name) == len &&
               strncmp(reduce_passes[k].name, p, len) == 0;
    if (!found) {
      fprintf(stderr, "raf-reduce: unknown reduction '%.*s' (see "
                      "--list-reductions)\n", (int)len, p);
      return false;
    }
    p += len + (comma != NULL);
  }
  return true;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static module_size measure(const raf_module *m, size_t bytes) {
  module_size z = {0};
  z.bytes = (int64_t)bytes;
  for (raf_func *f = m->first; f; f = f->next) {
    z.funcs++;
    z.sig += f->nargs + f->nresults;
    for (int i = 0; i < f->nargs; i++)
      z.elems += f->args[i].value->type->numel;
    for (raf_stmt *s = f->first; s; s = s->next) {
      z.stmts++;
      z.calls += s->op == RAF_OP_CALL;
      z.consts += s->op == RAF_OP_CONSTANT;
      z.ops += s->op != RAF_OP_CONSTANT;
      for (int i = 0; i < s->nresults; i++)
        z.elems += s->results[i]->type->numel;
    }
  }
  return z;
}

static bool smaller(const module_size *a, const module_size *b) {
  const int64_t x[] = {a->funcs, a->calls,  a->ops,  a->consts,
                       a->sig,   a->elems, a->bytes};
  const int64_t y[] = {b->funcs, b->calls,  b->ops,  b->consts,
                       b->sig,   b->elems, b->bytes};
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    if (x[i] != y[i])
      return x[i] < y[i];
  return false;
}

/* Prints m canonically into a new buffer (the caller frees it). */
static char *print_text(const raf_module *m, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f)
    return NULL;
  raf_print_module(m, f, 0);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* The first error of ctx, for -vv. */
static const char *first_error(const raf_ctx *ctx) {
  for (size_t i = 0; i < raf_diag_count(ctx); i++) {
    raf_loc loc;
    raf_severity sev;
    const char *msg;
    raf_diag_get(ctx, i, &loc, &sev, &msg);
    if (sev == RAF_SEV_ERROR)
      return msg;
  }
  return "(no message)";
}

/* Tries reduction p on items [lo, hi) of the current best; keeps the
 * candidate when it verifies, is smaller and is interesting. */
static bool try_candidate(reducer *r, const reduce_pass *p, size_t lo,
                          size_t hi) {
  raf_ctx *ctx = raf_ctx_create();
  if (!ctx) {
    r->failed = true;
    return false;
  }
  raf_module *m = raf_parse_module(ctx, "candidate.raf", r->text, r->len, 1);
  bool ok = m && p->apply(m, lo, hi);
  if (ok) {
    for (raf_func *f = m->first; f; f = f->next)
      raf_erase_dead(f);
    ok = raf_verify_module(ctx, m) == RAF_OK;
  }
  char *text = NULL;
  size_t len = 0;
  module_size size = {0};
  if (ok) {
    text = print_text(m, &len);
    size = measure(m, len);
  } else {
    r->invalid++;
    if (r->opt->verbose > 1)
      fprintf(stderr, "raf-reduce: %s [%zu, %zu): invalid: %s\n", p->name, lo,
              hi, first_error(ctx));
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  if (!text)
    return false;
  if (!smaller(&size, &r->size)) {
    r->larger++;
    free(text);
    return false;
  }
  int status = 0;
  reduce_verdict v = reduce_oracle_run(&r->oracle, text, len, true, &status);
  if (v == REDUCE_FAILED) {
    fprintf(stderr, "raf-reduce: cannot run the test '%s' on %s\n",
            r->opt->test, r->oracle.path);
    r->failed = true;
  }
  if (v != REDUCE_INTERESTING) {
    free(text);
    return false;
  }
  if (r->opt->verbose)
    fprintf(stderr, "raf-reduce: %s [%zu, %zu): kept, %lld statements\n",
            p->name, lo, hi, (long long)size.stmts);
  free(r->text);
  r->text = text;
  r->len = len;
  r->size = size;
  r->kept++;
  return true;
}

static size_t count_items(reducer *r, const reduce_pass *p) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m =
      ctx ? raf_parse_module(ctx, "candidate.raf", r->text, r->len, 1) : NULL;
  size_t n = m ? p->count(m) : 0;
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  return n;
}

/* Delta debugging over p's items: chunks of n, n/2, ..., 1. Returns whether
 * a candidate was kept. */
static bool run_reduction(reducer *r, const reduce_pass *p) {
  bool any = false;
  size_t n = count_items(r, p);
  for (size_t chunk = n; n > 0 && !r->failed;) {
    for (size_t lo = 0; lo < n && !r->failed;) {
      size_t hi = lo + chunk < n ? lo + chunk : n;
      if (try_candidate(r, p, lo, hi)) {
        any = true;
        n = count_items(r, p); /* the items from lo on moved down */
      } else {
        lo = hi;
      }
    }
    if (chunk <= 1)
      break;
    chunk = (chunk + 1) / 2;
  }
  return any;
}

static bool write_output(const options *o, const char *text, size_t len) {
  bool to_stdout = strcmp(o->output, "-") == 0;
  FILE *f = to_stdout ? stdout : fopen(o->output, "wb");
  if (!f) {
    fprintf(stderr, "raf-reduce: cannot write '%s'\n", o->output);
    return false;
  }
  bool ok = fwrite(text, 1, len, f) == len;
  ok = (to_stdout ? fflush(f) == 0 : fclose(f) == 0) && ok;
  if (!ok)
    fprintf(stderr, "raf-reduce: error writing '%s'\n", o->output);
  return ok;
}

/* Reads, parses and verifies the input; sets r->text to its canonical
 * print. Reports what goes wrong. */
static bool load_input(reducer *r) {
  const options *o = r->opt;
  bool from_stdin = strcmp(o->input, "-") == 0;
  FILE *in = from_stdin ? stdin : fopen(o->input, "rb");
  size_t len = 0;
  char *src = in ? raf_read_stream(in, &len) : NULL;
  if (in && !from_stdin)
    fclose(in);
  if (!src) {
    fprintf(stderr, "raf-reduce: cannot read '%s'\n", o->input);
    return false;
  }
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m =
      ctx ? raf_parse_module(ctx, from_stdin ? "<stdin>" : o->input, src, len,
                             1)
          : NULL;
  bool ok = m && raf_verify_module(ctx, m) == RAF_OK;
  if (ok) {
    r->text = print_text(m, &r->len);
    ok = r->text != NULL;
    if (ok)
      r->size = measure(m, r->len);
  } else if (ctx) {
    raf_diag_render(ctx, stderr);
    fprintf(stderr, "raf-reduce: the input must be a valid module\n");
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  free(src);
  return ok;
}

int main(int argc, char **argv) {
  options o = {0};
  int code;
  if (!parse_args(argc, argv, &o, &code) ||
      (o.only && !known_reductions(o.only))) {
    free(o.test_args);
    return code < 0 ? 1 : code;
  }
  reducer r = {.opt = &o};
  r.oracle.test = o.test;
  r.oracle.args = o.test_args;
  r.oracle.nargs = o.ntest_args;
  r.oracle.timeout = o.timeout;
  r.oracle.verbose = o.verbose > 1;
  char err[256];
  int status = 1;
  double t0 = now();
  if (access(o.test, X_OK) != 0) {
    fprintf(stderr, "raf-reduce: cannot run the test '%s': %s\n", o.test,
            strerror(errno));
    goto done;
  }
  if (!load_input(&r))
    goto done;
  if (!reduce_oracle_init(&r.oracle, err, sizeof err)) {
    fprintf(stderr, "raf-reduce: %s\n", err);
    goto done;
  }
  int test_status = 0;
  reduce_verdict v =
      reduce_oracle_run(&r.oracle, r.text, r.len, true, &test_status);
  if (v != REDUCE_INTERESTING) {
    if (v == REDUCE_FAILED)
      fprintf(stderr, "raf-reduce: cannot run the test '%s'\n", o.test);
    else
      fprintf(stderr,
              "raf-reduce: the input is not interesting: '%s' exits %d on it "
              "(it is tested as raf-opt prints it)\n", o.test, test_status);
    goto done;
  }
  module_size start = r.size;
  for (int round = 1; !r.failed; round++) {
    bool changed = false;
    size_t runs = r.oracle.runs;
    for (size_t k = 0; k < reduce_npasses && !r.failed; k++)
      if (selected(&o, reduce_passes[k].name))
        changed |= run_reduction(&r, &reduce_passes[k]);
    fprintf(stderr, "raf-reduce: round %d: %lld statements, %zu tests\n",
            round, (long long)r.size.stmts, r.oracle.runs - runs);
    if (!changed)
      break;
  }
  if (r.failed || !write_output(&o, r.text, r.len))
    goto done;
  fprintf(stderr,
          "raf-reduce: %lld -> %lld statements, %lld -> %lld functions in "
          "%.2f s: %zu tests (%zu kept, %zu timed out), %zu invalid "
          "candidates, %zu repeats\n",
          (long long)start.stmts, (long long)r.size.stmts,
          (long long)start.funcs, (long long)r.size.funcs, now() - t0,
          r.oracle.runs, r.kept, r.oracle.timeouts, r.invalid,
          r.oracle.cache_hits);
  status = 0;
done:
  reduce_oracle_free(&r.oracle);
  free(r.text);
  free(o.test_args);
  return status;
}
