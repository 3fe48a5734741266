/* manager.c: the pass registry and the pass manager.
 *
 * The registry is passes/passes.def expanded; the manager runs a pipeline of
 * registered passes in order, with the instrumentation of LLVM's and MLIR's
 * pass managers: verification after each pass, timing, IR dumps before and
 * after a pass, and bisection (run only the first N passes). It also keeps
 * the order constraints of passes.def: a pipeline that runs a pass after
 * one it must precede is refused before anything runs, and a pass is
 * refused a module that such a pass has already marked, so that the error
 * names the order, not a symptom two passes later. A pass that requires
 * another (passes.def's `requires`: plan-memory, dispatch) gets it run
 * first when neither the pipeline nor the module's marks show it has run,
 * as LLVM's pass manager schedules a pass's requirements: pipelines
 * written before the requirement keep working, and a note names the pass
 * added and its options, for a pipeline that wants others to say so.
 */
#include "passes/pass.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOOPTS NULL, 0
#define OPTS(...)                                                              \
  (const raf_attr_spec[]){__VA_ARGS__},                                        \
      (int)(sizeof((raf_attr_spec[]){__VA_ARGS__}) / sizeof(raf_attr_spec))

/* Where a pass's mark lies: the mark column of passes.def. */
typedef enum mark_kind { MARK_NONE, MARK_FUNC, MARK_STMT } mark_kind;
#define NOMARK MARK_NONE, NULL
#define FUNC_ATTR(attr) MARK_FUNC, attr
#define STMT_ATTR(attr) MARK_STMT, attr

typedef struct pass_entry {
  raf_pass_info info;
  raf_pass_fn run;
  const raf_attr_spec *specs;
  int nspecs;
  mark_kind mark;
  const char *mark_attr;
} pass_entry;

static const pass_entry registry[] = {
#define PASS(id, name, summary, options, after, before, requires, mark)        \
  {{name, summary, after, before, requires}, raf_pass_##id, options, mark},
#include "passes/passes.def"
#undef PASS
};
#define NPASSES (sizeof registry / sizeof registry[0])

static const raf_pass_info infos[] = {
#define PASS(id, name, summary, options, after, before, requires, mark)        \
  {name, summary, after, before, requires},
#include "passes/passes.def"
#undef PASS
};

const raf_pass_info *raf_pass_list(size_t *count) {
  *count = NPASSES;
  return infos;
}

/* Whether the comma-separated list names pass `name`. */
static bool list_has(const char *list, const char *name) {
  size_t len = strlen(name);
  for (const char *s = list; *s;) {
    const char *end = strchr(s, ',');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    if (n == len && strncmp(s, name, len) == 0)
      return true;
    s += n + (end != NULL);
  }
  return false;
}

/* The registry entry of name, or NULL; then *near (when not NULL) gets the
 * pass that name most likely misspells, or NULL. */
static const pass_entry *lookup(const char *name, const char **near) {
  const char *names[NPASSES];
  for (size_t i = 0; i < NPASSES; i++) {
    if (strcmp(registry[i].info.name, name) == 0)
      return &registry[i];
    names[i] = registry[i].info.name;
  }
  if (near)
    *near = raf_suggest(name, strlen(name), names, NPASSES);
  return NULL;
}

bool raf_pass_lookup(const char *name, const char **near) {
  return lookup(name, near) != NULL;
}

/* ---- Options -------------------------------------------------------------- */

static const raf_attr *find_opt(const raf_pass_args *a, const char *name,
                                raf_attr_value *out) {
  const raf_attr *at = raf_attrs_find(&a->options, name);
  if (at) {
    *out = at->val;
    return at;
  }
  const raf_attr_spec *s = raf_spec_find(a->specs, a->nspecs, name);
  if (s)
    *out = s->def;
  return NULL;
}

int64_t raf_pass_opt_int(const raf_pass_args *a, const char *name) {
  raf_attr_value v = {{0}};
  find_opt(a, name, &v);
  return v.u.i;
}
double raf_pass_opt_float(const raf_pass_args *a, const char *name) {
  raf_attr_value v = {{0}};
  find_opt(a, name, &v);
  return v.u.f;
}
bool raf_pass_opt_bool(const raf_pass_args *a, const char *name) {
  raf_attr_value v = {{0}};
  find_opt(a, name, &v);
  return v.u.b;
}
const char *raf_pass_opt_str(const raf_pass_args *a, const char *name) {
  raf_attr_value v = {{0}};
  find_opt(a, name, &v);
  return v.u.s;
}

/* ---- Pipelines ------------------------------------------------------------ */

typedef struct stage {
  const pass_entry *pass;
  raf_attrs options;
} stage;

struct raf_pipeline {
  raf_ctx *ctx;
  raf_arena arena; /* option names and values */
  stage *stages;
  size_t n, cap;
};

void raf_pipeline_options_init(raf_pipeline_options *o) {
  memset(o, 0, sizeof *o);
  o->verify_each = true;
  o->bisect_limit = -1;
  o->report = stderr;
}

raf_pipeline *raf_pipeline_create(raf_ctx *ctx) {
  raf_pipeline *p = calloc(1, sizeof *p);
  if (p) {
    p->ctx = ctx;
    raf_arena_init(&p->arena);
  }
  return p;
}

void raf_pipeline_destroy(raf_pipeline *p) {
  if (!p)
    return;
  raf_arena_free(&p->arena);
  free(p->stages);
  free(p);
}

size_t raf_pipeline_length(const raf_pipeline *p) { return p->n; }

static raf_loc noloc(void) { return (raf_loc){NULL, 0, 0}; }

/* Parses one "key=value" (or bare "key") option of pass e into *out. */
static raf_status parse_option(raf_pipeline *p, const pass_entry *e,
                               const char *text, size_t len, raf_attr *out) {
  const char *eq = memchr(text, '=', len);
  size_t klen = eq ? (size_t)(eq - text) : len;
  char *key = raf_arena_strndup(&p->arena, text, klen);
  const char *vtext = eq ? eq + 1 : "true";
  size_t vlen = eq ? len - klen - 1 : 4;
  if (vlen >= 2 && vtext[0] == '"' && vtext[vlen - 1] == '"') {
    vtext++;
    vlen -= 2;
  }
  char *val = raf_arena_strndup(&p->arena, vtext, vlen);
  const raf_attr_spec *spec = raf_spec_find(e->specs, e->nspecs, key);
  const char *names[32];
  int nnames = 0;
  for (int i = 0; !spec && i < e->nspecs && nnames < 32; i++)
    names[nnames++] = e->specs[i].name;
  const char *near = spec ? NULL : raf_suggest(key, klen, names, (size_t)nnames);
  if (near) {
    raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                    "pass '%s' has no option '%s'; did you mean '%s'?",
                    e->info.name, key, near);
    return RAF_ERROR;
  }
  if (!spec) {
    char known[256] = "";
    size_t n = 0;
    for (int i = 0; i < e->nspecs && n < sizeof known; i++)
      n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
                            e->specs[i].name);
    raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                    "pass '%s' has no option '%s'%s%s%s", e->info.name, key,
                    e->nspecs ? " (options: " : " (it takes none)", known,
                    e->nspecs ? ")" : "");
    return RAF_ERROR;
  }
  out->name = spec->name;
  out->kind = spec->kind;
  char *end = NULL;
  errno = 0;
  switch (spec->kind) {
  case RAF_ATTR_INT:
    out->val.u.i = strtoll(val, &end, 10);
    break;
  case RAF_ATTR_FLOAT:
    out->val.u.f = strtod(val, &end);
    break;
  case RAF_ATTR_BOOL:
    if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0)
      out->val.u.b = true;
    else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0)
      out->val.u.b = false;
    else
      end = val; /* not a boolean */
    break;
  default:
    out->val.u.s = val;
    break;
  }
  if (spec->kind == RAF_ATTR_STRING && spec->choices &&
      !raf_choices_include(spec->choices, val)) {
    raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                    "pass '%s': option '%s' must be one of %s, got '%s'",
                    e->info.name, key, spec->choices, val);
    return RAF_ERROR;
  }
  if (errno || (end && (end == val || *end))) {
    raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                    "pass '%s': option '%s' must be %s, got '%s'",
                    e->info.name, key, raf_attr_kind_desc(spec->kind), val);
    return RAF_ERROR;
  }
  return RAF_OK;
}

raf_status raf_pipeline_add(raf_pipeline *p, const char *name,
                            const char *options) {
  const char *near;
  const pass_entry *e = lookup(name, &near);
  if (!e) {
    if (near)
      raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                      "unknown pass '%s'; did you mean '%s'?", name, near);
    else
      raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                      "unknown pass '%s' (see --list-passes)", name);
    return RAF_ERROR;
  }
  raf_attr opts[32];
  int n = 0;
  for (const char *s = options ? options : ""; *s;) {
    while (*s == ' ' || *s == '\t')
      s++;
    if (!*s)
      break;
    const char *start = s;
    bool quoted = false;
    while (*s && (quoted || (*s != ' ' && *s != '\t'))) {
      if (*s == '"')
        quoted = !quoted;
      s++;
    }
    if (n == (int)(sizeof opts / sizeof opts[0])) {
      raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                      "pass '%s': too many options", name);
      return RAF_ERROR;
    }
    memset(&opts[n], 0, sizeof opts[n]);
    if (parse_option(p, e, start, (size_t)(s - start), &opts[n]) != RAF_OK)
      return RAF_ERROR;
    n++;
  }
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    stage *st = realloc(p->stages, cap * sizeof *st);
    if (!st)
      return RAF_ERROR;
    p->stages = st;
    p->cap = cap;
  }
  p->stages[p->n].pass = e;
  p->stages[p->n].options.v =
      n ? raf_arena_memdup(&p->arena, opts, sizeof opts[0] * (size_t)n) : NULL;
  p->stages[p->n].options.n = n;
  p->n++;
  return RAF_OK;
}

raf_status raf_pipeline_parse(raf_pipeline *p, const char *text) {
  const char *s = text;
  for (;;) {
    while (*s == ' ' || *s == ',')
      s++;
    if (!*s)
      return RAF_OK;
    const char *name = s;
    while (*s && *s != ',' && *s != '{' && *s != ' ')
      s++;
    char nbuf[128];
    snprintf(nbuf, sizeof nbuf, "%.*s", (int)(s - name), name);
    while (*s == ' ')
      s++;
    char *opts = NULL;
    if (*s == '{') {
      const char *close = strchr(s, '}');
      if (!close) {
        raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                        "pipeline: missing '}' after the options of '%s'",
                        nbuf);
        return RAF_ERROR;
      }
      opts = raf_arena_strndup(&p->arena, s + 1, (size_t)(close - s - 1));
      s = close + 1;
    }
    if (*s && *s != ',' && *s != ' ') {
      raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                      "pipeline: expected ',' after '%s'", nbuf);
      return RAF_ERROR;
    }
    if (raf_pipeline_add(p, nbuf, opts) != RAF_OK)
      return RAF_ERROR;
  }
}

/* Checks the order of n stages against `after` and `before`. */
static raf_status check_order(raf_ctx *ctx, const stage *stages, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      const raf_pass_info *a = &stages[i].pass->info,
                          *b = &stages[j].pass->info;
      const char *must = NULL, *other = NULL, *how = NULL;
      if (list_has(a->after, b->name))
        must = a->name, other = b->name, how = "after";
      else if (list_has(b->before, a->name))
        must = b->name, other = a->name, how = "before";
      if (must) {
        raf_diag_report(ctx, noloc(), RAF_SEV_ERROR,
                        "pipeline: pass '%s' must run %s '%s' (passes %zu "
                        "and %zu of the pipeline are the other way round)",
                        must, how, other, i + 1, j + 1);
        return RAF_ERROR;
      }
    }
  return RAF_OK;
}

raf_status raf_pipeline_check(raf_pipeline *p) {
  return check_order(p->ctx, p->stages, p->n);
}

/* Whether m carries q's mark; then *func gets the function that does and,
 * for a statement's mark, *stmt the statement. */
static bool find_mark(const pass_entry *q, const raf_module *m,
                      const raf_func **func, const raf_stmt **stmt) {
  for (const raf_func *f = m->first; q->mark != MARK_NONE && f; f = f->next) {
    const raf_stmt *s = NULL;
    if (q->mark == MARK_STMT)
      for (s = f->first; s && !raf_attrs_find(&s->attrs, q->mark_attr);)
        s = s->next;
    if (q->mark == MARK_STMT ? s != NULL
                             : raf_attrs_find(&f->attrs, q->mark_attr) != NULL) {
      *func = f;
      *stmt = s;
      return true;
    }
  }
  return false;
}

/* Refuses to run pass e on m when a pass that e must precede has left its
 * mark there (a module planned by an earlier raf-opt, say). */
static raf_status check_marks(raf_ctx *ctx, const pass_entry *e,
                              const raf_module *m) {
  for (size_t k = 0; k < NPASSES; k++) {
    const pass_entry *q = &registry[k];
    const raf_func *f;
    const raf_stmt *s;
    if (!list_has(e->info.before, q->info.name) || !find_mark(q, m, &f, &s))
      continue;
    raf_diag_report(ctx, s ? s->loc : f->loc, RAF_SEV_ERROR,
                    "pass '%s' must run before '%s', but @%s has been "
                    "through it (it has {%s})",
                    e->info.name, q->info.name, f->name, q->mark_attr);
    return RAF_ERROR;
  }
  return RAF_OK;
}

/* ---- Requirements --------------------------------------------------------- */

/* The options a stage of e runs with when given none, as "key=value"
 * separated by spaces (an optional option, which has no default, is left
 * out), into buf. */
static void default_options(const pass_entry *e, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < e->nspecs && n < size; i++) {
    const raf_attr_spec *s = &e->specs[i];
    if (s->flags)
      continue;
    const char *sep = n ? " " : "";
    switch (s->kind) {
    case RAF_ATTR_INT:
      n += (size_t)snprintf(buf + n, size - n, "%s%s=%lld", sep, s->name,
                            (long long)s->def.u.i);
      break;
    case RAF_ATTR_FLOAT:
      n += (size_t)snprintf(buf + n, size - n, "%s%s=%g", sep, s->name,
                            s->def.u.f);
      break;
    case RAF_ATTR_BOOL:
      n += (size_t)snprintf(buf + n, size - n, "%s%s=%s", sep, s->name,
                            s->def.u.b ? "true" : "false");
      break;
    default:
      n += (size_t)snprintf(buf + n, size - n, "%s%s=%s", sep, s->name,
                            s->def.u.s ? s->def.u.s : "");
      break;
    }
  }
}

/* The stages a run makes on m, being built: p's, with what they require. */
typedef struct schedule {
  stage *stages;
  size_t n;
} schedule;

/* Whether q has run before the stages scheduled so far end: one of them
 * is q, or m came with q's mark. */
static bool has_run(const schedule *sc, const pass_entry *q,
                    const raf_module *m) {
  const raf_func *f;
  const raf_stmt *s;
  for (size_t i = 0; i < sc->n; i++)
    if (sc->stages[i].pass == q)
      return true;
  return find_mark(q, m, &f, &s);
}

/* Appends stage sg to sc, preceded by each pass it requires that has not
 * run, itself with its own requirements, with its default options and a
 * note. The registry puts a required pass before the passes that require
 * it (test_registry checks it), so the recursion ends. */
static void schedule_stage(raf_ctx *ctx, schedule *sc, const stage *sg,
                           const raf_module *m) {
  const char *list = sg->pass->info.required;
  for (size_t k = 0; k < NPASSES && *list; k++) {
    const pass_entry *q = &registry[k];
    if (!list_has(list, q->info.name) || has_run(sc, q, m))
      continue;
    char opts[256];
    default_options(q, opts, sizeof opts);
    raf_diag_report(ctx, noloc(), RAF_SEV_NOTE,
                    "%s requires %s; running %s%s%s%s first",
                    sg->pass->info.name, q->info.name, q->info.name,
                    *opts ? " (" : "", opts, *opts ? ")" : "");
    stage added = {q, {NULL, 0}};
    schedule_stage(ctx, sc, &added, m);
  }
  sc->stages[sc->n++] = *sg;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void dump(const raf_pipeline_options *o, const char *when,
                 const char *name, const raf_module *m) {
  fprintf(o->report, "// -----// IR Dump %s %s //----- //\n", when, name);
  raf_print_module(m, o->report, o->print_flags);
  fputc('\n', o->report);
}

static void report_times(const raf_pipeline_options *opt, const schedule *sc,
                         const double *times, double verify_time) {
  double total = verify_time;
  for (size_t i = 0; i < sc->n; i++)
    total += times[i];
  fprintf(opt->report,
          "===-------------------------------------------------------===\n"
          "                   ... Pass execution timing report ...\n"
          "===-------------------------------------------------------===\n"
          "  Total Execution Time: %.4f seconds\n\n"
          "  ----Wall Time----  ----Name----\n",
          total);
  for (size_t i = 0; i < sc->n; i++)
    fprintf(opt->report, "  %8.4f (%5.1f%%)  %s\n", times[i],
            total > 0 ? 100 * times[i] / total : 0.0,
            sc->stages[i].pass->info.name);
  if (opt->verify_each)
    fprintf(opt->report, "  %8.4f (%5.1f%%)  (verifier)\n", verify_time,
            total > 0 ? 100 * verify_time / total : 0.0);
  fprintf(opt->report, "  %8.4f (100.0%%)  Total\n", total);
}

raf_status raf_pipeline_run(raf_pipeline *p, raf_module *m,
                            const raf_pipeline_options *opt) {
  raf_pipeline_options defaults;
  if (!opt) {
    raf_pipeline_options_init(&defaults);
    opt = &defaults;
  }
  if (raf_pipeline_check(p) != RAF_OK)
    return RAF_ERROR;
  /* Each pass is added for a requirement at most once: it has run after. */
  schedule sc = {calloc(p->n + NPASSES, sizeof *sc.stages), 0};
  double *times = calloc(p->n + NPASSES, sizeof *times);
  if (!sc.stages || !times) {
    free(sc.stages);
    free(times);
    return RAF_ERROR;
  }
  for (size_t i = 0; i < p->n; i++)
    schedule_stage(p->ctx, &sc, &p->stages[i], m);
  double verify_time = 0;
  raf_status st = check_order(p->ctx, sc.stages, sc.n);
  for (size_t i = 0; i < sc.n && st == RAF_OK; i++) {
    const stage *sg = &sc.stages[i];
    const char *name = sg->pass->info.name;
    if (opt->bisect_limit >= 0) {
      bool run = (int)i + 1 <= opt->bisect_limit;
      fprintf(opt->report, "BISECT: %srunning pass (%zu) %s\n",
              run ? "" : "NOT ", i + 1, name);
      if (!run)
        continue;
    }
    if (opt->print_before && strcmp(opt->print_before, name) == 0)
      dump(opt, "Before", name, m);
    raf_pass_args args = {p->ctx, sg->options, sg->pass->specs,
                          sg->pass->nspecs};
    double t0 = now_seconds();
    st = check_marks(p->ctx, sg->pass, m);
    if (st == RAF_OK)
      st = sg->pass->run(m, &args);
    times[i] = now_seconds() - t0;
    if (st != RAF_OK)
      break;
    if (opt->print_after_all ||
        (opt->print_after && strcmp(opt->print_after, name) == 0))
      dump(opt, "After", name, m);
    if (opt->verify_each) {
      t0 = now_seconds();
      if (raf_verify_module(p->ctx, m) != RAF_OK) {
        raf_diag_report(p->ctx, noloc(), RAF_SEV_ERROR,
                        "the IR is invalid after pass '%s'", name);
        st = RAF_ERROR;
      }
      verify_time += now_seconds() - t0;
    }
  }
  if (opt->time_passes)
    report_times(opt, &sc, times, verify_time);
  free(times);
  free(sc.stages);
  return st;
}

/* SIZE: a number of bytes, with an optional K, M or G (powers of 1024). */
bool raf_pass_parse_size(const char *s, int64_t *out) {
  char *end;
  double v = strtod(s, &end);
  double scale = 1;
  switch (*end) {
  case 'K': case 'k': scale = 1024.0; end++; break;
  case 'M': case 'm': scale = 1024.0 * 1024; end++; break;
  case 'G': case 'g': scale = 1024.0 * 1024 * 1024; end++; break;
  default: break;
  }
  if (end == s || *end || !(v >= 0) || v * scale > 9e18)
    return false;
  *out = (int64_t)(v * scale);
  return true;
}
