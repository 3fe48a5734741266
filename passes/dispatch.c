/* dispatch.c: the operator-dialect choice of the RAF paper.
 *
 * Each statement gets `{dialect = "NAME"}`: among the enabled dialects, in
 * priority order, the first that implements the statement's op for the
 * dtype of its first operand (lang/dialects.def). The runtime then binds
 * the annotation to that dialect's kernel.
 *
 * Options:
 *   device=cpu|cuda     the device whose dialects are enabled (default cpu)
 *   dialects=a,b,...    the enabled dialects, highest priority first; by
 *                       default every dialect of the device, ordered by the
 *                       priorities of lang/dialects.def
 * A statement already annotated with an enabled dialect keeps it (a user's
 * or an earlier pass's choice); one annotated with a dialect that is not
 * enabled is chosen again. A statement no enabled dialect implements is a
 * located error. When no dialect of the device implements it at all (a
 * device whose dialects are not built yet: `matmul: no cuda
 * implementation`), only the first such statement is an error, and a note
 * names the other ops the device lacks, rather than an error per
 * statement of the module. `return` is the executor's and gets nothing.
 *
 * Calls. A `call` of a fused function (`{fused}`) gets the first enabled
 * dialect, in the same order, that compiles the callee as a whole: one
 * with a FUSED row of lang/dialects.def for every statement inside it
 * and whatever else its traits ask (raf_dialect_runs, ir/dialect.h). Other calls, and fused calls no enabled
 * dialect compiles, are the executor's: they get no annotation (one they
 * carry is dropped unless its dialect is enabled and compiles the callee),
 * and the executor runs the callee's statements, which this pass
 * dispatches like any others.
 *
 * Requires: a verified module.
 * Preserves: everything but the `dialect` attributes.
 */
#include "ir/dialect.h"
#include "passes/pass.h"

#include <stdio.h>
#include <string.h>

typedef struct order {
  raf_dialect d[RAF_DIALECT_COUNT];
  int n;
} order;

static raf_status parse_order(raf_ctx *ctx, const char *device,
                              const char *list, order *o) {
  o->n = 0;
  if (!list) {
    for (int i = 0; i < RAF_DIALECT_COUNT; i++)
      if (strcmp(raf_dialect_get((raf_dialect)i)->device, device) == 0)
        o->d[o->n++] = (raf_dialect)i;
    for (int i = 1; i < o->n; i++) /* insertion sort, highest first */
      for (int j = i; j > 0 && raf_dialect_get(o->d[j])->priority >
                                   raf_dialect_get(o->d[j - 1])->priority;
           j--) {
        raf_dialect t = o->d[j];
        o->d[j] = o->d[j - 1];
        o->d[j - 1] = t;
      }
    return RAF_OK;
  }
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, ",");
    raf_dialect d;
    if (!raf_dialect_from_name(s, len, &d)) {
      char known[256] = "";
      for (int i = 0; i < RAF_DIALECT_COUNT; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                 i ? ", " : "", raf_dialect_get((raf_dialect)i)->name);
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "dispatch: unknown dialect '%.*s' (known: %s)", (int)len,
                      s, known);
      return RAF_ERROR;
    }
    if (strcmp(raf_dialect_get(d)->device, device) != 0) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "dispatch: dialect '%.*s' runs on %s, not %s", (int)len,
                      s, raf_dialect_get(d)->device, device);
      return RAF_ERROR;
    }
    bool seen = false;
    for (int i = 0; i < o->n; i++)
      seen |= o->d[i] == d;
    if (!seen)
      o->d[o->n++] = d;
    s += len;
    if (*s == ',')
      s++;
  }
  return RAF_OK;
}

/* The dialect of `device` of highest priority, enabled or not, that runs
 * s; RAF_DIALECT_COUNT when none does. */
static raf_dialect device_implementer(const char *device, const raf_stmt *s) {
  raf_dialect best = RAF_DIALECT_COUNT;
  for (int i = 0; i < RAF_DIALECT_COUNT; i++) {
    const raf_dialect_info *d = raf_dialect_get((raf_dialect)i);
    if (strcmp(d->device, device) == 0 &&
        raf_dialect_runs((raf_dialect)i, s) &&
        (best == RAF_DIALECT_COUNT ||
         d->priority > raf_dialect_get(best)->priority))
      best = (raf_dialect)i;
  }
  return best;
}

/* Whether any dialect runs on `device`. */
static bool device_has_dialects(const char *device) {
  for (int i = 0; i < RAF_DIALECT_COUNT; i++)
    if (strcmp(raf_dialect_get((raf_dialect)i)->device, device) == 0)
      return true;
  return false;
}

/* Why no dialect of `device` implements op, for its error, as its
 * dialects' traits tell (a dialect to come); "" when none does. */
static void missing_why(const char *device, raf_opcode op, char *why,
                        size_t size) {
  why[0] = 0;
  if (!device_has_dialects(device)) {
    snprintf(why, size, " (no dialect runs on it yet)");
    return;
  }
  for (int i = 0; i < RAF_DIALECT_COUNT && !why[0]; i++) {
    const char *lacks =
        strcmp(raf_dialect_get((raf_dialect)i)->device, device) == 0
            ? raf_dialect_traits_of((raf_dialect)i)->lacks(op)
            : NULL;
    if (lacks)
      snprintf(why, size, " (%s)", lacks);
  }
}

static bool enabled(const order *o, raf_dialect d) {
  for (int i = 0; i < o->n; i++)
    if (o->d[i] == d)
      return true;
  return false;
}

/* Sets s's dialect attribute to d, replacing any other; d ==
 * RAF_DIALECT_COUNT removes it. */
static void annotate(raf_module *m, raf_stmt *s, raf_dialect d) {
  raf_attr attrs[64];
  int n = 0;
  for (int i = 0; i < s->attrs.n && n < 63; i++)
    if (strcmp(s->attrs.v[i].name, "dialect") != 0)
      attrs[n++] = s->attrs.v[i];
  if (d != RAF_DIALECT_COUNT)
    attrs[n++] = (raf_attr){
        .name = "dialect", .kind = RAF_ATTR_DIALECT, .val.u.dialect = d};
  raf_stmt_set_attrs(m, s, attrs, n);
}

/* The call rule (see the header comment). */
static void dispatch_call(raf_module *m, const order *o, raf_stmt *s) {
  raf_dialect now = raf_stmt_dialect(s);
  if (now != RAF_DIALECT_COUNT && enabled(o, now) && raf_dialect_runs(now, s))
    return;
  int i = 0;
  while (i < o->n && !raf_dialect_runs(o->d[i], s))
    i++;
  if (i < o->n || now != RAF_DIALECT_COUNT)
    annotate(m, s, i < o->n ? o->d[i] : RAF_DIALECT_COUNT);
}

raf_status raf_pass_dispatch(raf_module *m, const raf_pass_args *args) {
  order o;
  if (parse_order(args->ctx, raf_pass_opt_str(args, "device"),
                  raf_pass_opt_str(args, "dialects"), &o) != RAF_OK)
    return RAF_ERROR;
  const char *device = raf_pass_opt_str(args, "device");
  raf_status rc = RAF_OK;
  /* The ops no dialect of the device implements, after the first. */
  bool lacking[RAF_OP_COUNT] = {false};
  int nlacking = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next) {
      if (s->op == RAF_OP_CALL)
        dispatch_call(m, &o, s);
      if (s->op == RAF_OP_CALL || s->op == RAF_OP_RETURN)
        continue;
      raf_dtype dt = raf_stmt_key_dtype(s);
      raf_dialect now = raf_stmt_dialect(s);
      if (now != RAF_DIALECT_COUNT && enabled(&o, now) &&
          raf_dialect_runs(now, s))
        continue;
      int i = 0;
      while (i < o.n && !raf_dialect_runs(o.d[i], s))
        i++;
      raf_dialect would =
          i == o.n ? device_implementer(device, s) : o.d[i];
      if (would == RAF_DIALECT_COUNT) {
        if (nlacking == 0) {
          char why[128];
          missing_why(device, s->op, why, sizeof why);
          raf_diag_report(args->ctx, s->loc, RAF_SEV_ERROR,
                          "dispatch: %s: no %s implementation for %s%s",
                          raf_op_table[s->op].name, device,
                          raf_dtype_name(dt), why);
        } else
          lacking[s->op] = true;
        nlacking++;
        rc = RAF_ERROR;
        continue;
      }
      if (i == o.n) {
        raf_diag_report(args->ctx, s->loc, RAF_SEV_ERROR,
                        "dispatch: no enabled dialect implements %s for %s "
                        "(the %s dialect does)",
                        raf_op_table[s->op].name, raf_dtype_name(dt),
                        raf_dialect_get(would)->name);
        rc = RAF_ERROR;
        continue;
      }
      annotate(m, s, o.d[i]);
    }
  if (nlacking > 1) {
    char ops[512] = "";
    size_t n = 0;
    for (int op = 0; op < RAF_OP_COUNT && n < sizeof ops - 32; op++)
      if (lacking[op])
        n += (size_t)snprintf(ops + n, sizeof ops - n, "%s%s", n ? ", " : "",
                              raf_op_table[op].name);
    raf_diag_report(args->ctx, (raf_loc){0}, RAF_SEV_NOTE,
                    "%d more statement%s ha%s no %s implementation (%s)",
                    nlacking - 1, nlacking == 2 ? "" : "s",
                    nlacking == 2 ? "s" : "ve", device, ops);
  }
  return rc;
}
