/* run.c: the public executor API (include/raf/run.h) over the runtime's
 * executor (runtime/exec.h).
 *
 * Its one decision of its own is the dialect choice. The dispatch pass
 * already keeps a statement's mark when its dialect is enabled, so the
 * choice is to enable the right dialects: the ones asked for, or else
 * every dialect of the device this build can run. The device, when not
 * asked for, is the one the module's marks name, so that a module
 * dispatched once (raf-opt -p ...,dispatch{device=cuda},plan-memory) runs
 * where it was dispatched for, as it was planned. The marks are read
 * before dispatch and compared after it, and the replaced ones counted,
 * for the tool to say so.
 */
#include "runtime/run_internal.h"

#include "runtime/dialects.h"

#include <stdlib.h>
#include <string.h>

struct raf_executor {
  raf_module *m;
  raf_exec *ex;
  raf_device_kind device;
  char dialects[256]; /* the enabled dialects, as dispatch's option */
  int replaced;
};

void raf_executor_options_init(raf_executor_options *o) {
  memset(o, 0, sizeof *o);
}

/* An error without a location, in m's context. */
#define report(m, ...)                                                         \
  raf_diag_report(raf_module_ctx(m), (raf_loc){0}, RAF_SEV_ERROR, __VA_ARGS__)

bool raf_module_marked_device(const raf_module *m, raf_device_kind *kind) {
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next) {
      raf_dialect d = raf_stmt_dialect(s);
      if (d != RAF_DIALECT_COUNT &&
          raf_device_kind_from_name(raf_dialect_get(d)->device, kind))
        return true;
    }
  return false;
}

/* Every dialect of device this build can run, highest priority first
 * (ties keep the table's order), into buf. */
static void default_dialects(const char *device, char *buf, size_t size) {
  raf_dialect order[RAF_DIALECT_COUNT];
  int n = 0;
  for (int i = 0; i < RAF_DIALECT_COUNT; i++) {
    raf_dialect d = (raf_dialect)i;
    if (strcmp(raf_dialect_get(d)->device, device) != 0 ||
        raf_dialect_unavailable(d))
      continue;
    int j = n++;
    for (; j > 0 && raf_dialect_get(order[j - 1])->priority <
                        raf_dialect_get(d)->priority;
         j--)
      order[j] = order[j - 1];
    order[j] = d;
  }
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : "",
                            raf_dialect_get(order[i])->name);
}

/* The statements of m in order, each's mark (or NULL) into marks[] when
 * marks is not NULL; returns their number. */
static size_t read_marks(const raf_module *m, const char **marks) {
  size_t n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next, n++)
      if (marks)
        marks[n] = raf_stmt_dialect_name(s);
  return n;
}

/* Runs dispatch on m with ex's device and dialects, counting the marks it
 * replaced into ex->replaced. */
static raf_status dispatch(raf_executor *ex) {
  raf_ctx *ctx = raf_module_ctx(ex->m);
  size_t n = read_marks(ex->m, NULL);
  const char **before = calloc(n + 1, sizeof *before);
  raf_pipeline *pl = before ? raf_pipeline_create(ctx) : NULL;
  char opts[320];
  snprintf(opts, sizeof opts, "device=%s dialects=%s",
           raf_device_kind_name(ex->device), ex->dialects);
  raf_status rc = RAF_ERROR;
  if (!pl)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
  else {
    read_marks(ex->m, before);
    if (raf_pipeline_add(pl, "dispatch", opts) == RAF_OK)
      rc = raf_pipeline_run(pl, ex->m, NULL);
  }
  size_t i = 0;
  for (raf_func *f = ex->m->first; rc == RAF_OK && f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next, i++) {
      const char *now = raf_stmt_dialect_name(s);
      if (before[i] && (!now || strcmp(now, before[i]) != 0))
        ex->replaced++;
    }
  raf_pipeline_destroy(pl);
  free(before);
  return rc;
}

raf_status raf_executor_create_on(raf_module *m, const raf_executor_options *o,
                                  raf_device *dev, raf_executor **out) {
  raf_executor_options defaults;
  if (!o) {
    raf_executor_options_init(&defaults);
    o = &defaults;
  }
  *out = NULL;
  raf_executor *ex = calloc(1, sizeof *ex);
  if (!ex) {
    report(m, "out of memory");
    raf_device_destroy(dev);
    return RAF_ERROR;
  }
  ex->m = m;
  ex->device = dev ? raf_device_kind_of(dev) : RAF_DEVICE_HOST;
  const char *device = raf_device_kind_name(ex->device);
  if (o->dialects)
    snprintf(ex->dialects, sizeof ex->dialects, "%s", o->dialects);
  else
    default_dialects(device, ex->dialects, sizeof ex->dialects);
  raf_exec_options eo = {.device = dev,
                         .threads = o->threads,
                         .check_numerics = o->check_numerics,
                         .profile = o->profile,
                         .sync_each = o->sync_each,
                         .dialects = ex->dialects};
  if (dispatch(ex) != RAF_OK) {
    raf_device_destroy(dev);
    free(ex);
    return RAF_ERROR;
  }
  ex->ex = raf_exec_create(raf_module_ctx(m), m, &eo); /* dev is its now */
  if (!ex->ex) {
    free(ex);
    return RAF_ERROR;
  }
  *out = ex;
  return RAF_OK;
}

raf_status raf_executor_create(raf_module *m, const raf_executor_options *o,
                               raf_executor **out) {
  *out = NULL;
  raf_device_kind kind = RAF_DEVICE_HOST;
  if (o && o->device && !raf_device_kind_from_name(o->device, &kind)) {
    report(m, "device '%s' is not cpu or cuda", o->device);
    return RAF_ERROR;
  }
  if (!(o && o->device))
    raf_module_marked_device(m, &kind);
  const char *why = raf_device_kind_unavailable(kind);
  if (why) {
    report(m, "device %s: this build was %s", raf_device_kind_name(kind),
           why);
    return RAF_ERROR;
  }
  raf_device *dev = NULL;
  if (raf_device_open(raf_module_ctx(m), kind, o ? o->device_ordinal : 0,
                      &dev) != RAF_OK)
    return RAF_ERROR;
  return raf_executor_create_on(m, o, dev, out);
}

void raf_executor_destroy(raf_executor *ex) {
  if (!ex)
    return;
  raf_exec_destroy(ex->ex);
  free(ex);
}

raf_exec *raf_executor_exec(const raf_executor *ex) { return ex->ex; }

const char *raf_executor_device(const raf_executor *ex) {
  return raf_device_kind_name(ex->device);
}

const char *raf_executor_dialects(const raf_executor *ex) {
  return ex->dialects;
}

int raf_executor_replaced_marks(const raf_executor *ex) {
  return ex->replaced;
}

size_t raf_executor_peak_bytes(const raf_executor *ex) {
  return raf_exec_peak_bytes(ex->ex);
}

raf_func *raf_executor_find(raf_executor *ex, const char *name) {
  raf_func *f = name ? raf_module_find_func(ex->m, name) : ex->m->last;
  if (f)
    return f;
  char known[1024] = "";
  size_t k = 0;
  for (raf_func *g = ex->m->first; g && k < sizeof known - 64; g = g->next)
    k += (size_t)snprintf(known + k, sizeof known - k, "%s@%s",
                          k ? ", " : "", g->name);
  if (name)
    report(ex->m, "no function @%s (the module has %s)", name,
           known[0] ? known : "none");
  else
    report(ex->m, "the module has no function");
  return NULL;
}

const char *raf_func_name(const raf_func *f) { return f->name; }
int raf_func_arg_count(const raf_func *f) { return f->nargs; }
int raf_func_result_count(const raf_func *f) { return f->nresults; }

/* A new zeroed tensor of type t on ex's device, or NULL (reported). */
static raf_tensor *zeroed(raf_executor *ex, raf_type *t) {
  raf_tensor *x = t ? raf_exec_alloc(ex->ex, t) : NULL;
  if (!t)
    report(ex->m, "out of memory");
  if (x && raf_exec_zero(ex->ex, x, 0, x->nbytes) != RAF_OK) {
    raf_exec_free(ex->ex, x);
    x = NULL;
  }
  return x;
}

raf_tensor *raf_tensor_create(raf_executor *ex, const char *dtype, int rank,
                              const int64_t *dims) {
  raf_dtype dt;
  if (!raf_dtype_from_name(dtype, strlen(dtype), &dt)) {
    report(ex->m, "no dtype '%s'", dtype);
    return NULL;
  }
  bool ok = rank >= 0 && rank <= 16;
  for (int i = 0; ok && i < rank; i++)
    ok = dims[i] >= 0;
  if (!ok) {
    report(ex->m, "a tensor of %s needs 0 to 16 dimensions, none "
                  "negative", dtype);
    return NULL;
  }
  return zeroed(ex, raf_type_get(ex->m, dt, rank, dims));
}

raf_tensor *raf_tensor_create_arg(raf_executor *ex, const raf_func *f,
                                  int i) {
  if (i < 0 || i >= f->nargs) {
    report(ex->m, "@%s has no argument %d", f->name, i);
    return NULL;
  }
  return zeroed(ex, f->args[i].value->type);
}

void raf_tensor_destroy(raf_executor *ex, raf_tensor *t) {
  if (t)
    raf_exec_free(ex->ex, t);
}

const char *raf_tensor_dtype(const raf_tensor *t) {
  return raf_dtype_name(t->type->dtype);
}
int raf_tensor_rank(const raf_tensor *t) { return t->type->rank; }
int64_t raf_tensor_dim(const raf_tensor *t, int axis) {
  return axis >= 0 && axis < t->type->rank ? t->type->dims[axis] : 0;
}
size_t raf_tensor_bytes(const raf_tensor *t) { return t->nbytes; }

/* Whether bytes is t's size; reports it otherwise. */
static bool size_ok(raf_executor *ex, const raf_tensor *t, size_t bytes,
                    const char *verb) {
  if (bytes == t->nbytes)
    return true;
  char type[64];
  raf_type_str(t->type, type, sizeof type);
  report(ex->m, "cannot %s %zu bytes: a tensor of %s holds %zu", verb, bytes,
         type, t->nbytes);
  return false;
}

raf_status raf_tensor_write(raf_executor *ex, raf_tensor *t,
                            const void *data, size_t bytes) {
  if (!size_ok(ex, t, bytes, "write"))
    return RAF_ERROR;
  return raf_exec_write(ex->ex, t, 0, data, bytes);
}

raf_status raf_tensor_read(raf_executor *ex, const raf_tensor *t, void *data,
                           size_t bytes) {
  if (!size_ok(ex, t, bytes, "read"))
    return RAF_ERROR;
  return raf_exec_read(ex->ex, t, 0, data, bytes);
}

raf_status raf_executor_call(raf_executor *ex, raf_func *f,
                             raf_tensor *const *args, int nargs,
                             raf_tensor **results, int nresults) {
  raf_ctx *ctx = raf_module_ctx(ex->m);
  for (int r = 0; r < nresults; r++)
    results[r] = NULL;
  if (nargs != f->nargs || nresults != f->nresults) {
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "@%s takes %d arguments and returns %d results, not %d "
                    "and %d", f->name, f->nargs, f->nresults, nargs,
                    nresults);
    return RAF_ERROR;
  }
  for (int i = 0; i < nargs; i++) {
    const raf_type *want = f->args[i].value->type;
    if (args[i] && raf_type_equal(args[i]->type, want))
      continue;
    char got[64] = "nothing", exp[64];
    if (args[i])
      raf_type_str(args[i]->type, got, sizeof got);
    raf_type_str(want, exp, sizeof exp);
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "@%s: argument %%%s is %s, not %s", f->name,
                    f->args[i].value->name, exp, got);
    return RAF_ERROR;
  }
  return raf_exec_call(ex->ex, f, args, results);
}
