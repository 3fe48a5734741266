/* checkpoint.c: --save, --load and --resume (see checkpoint.h), through
 * the safetensors module. raf-run's counters are metadata strings, so the
 * file's tensors stay exactly the function's params and states, and any
 * safetensors reader sees nothing else. */
#include "raf-run/checkpoint.h"

#include "raf-run/values.h"
#include "runtime/safetensors.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The reserved prefix of raf-run's metadata keys. */
#define KEY_STEP "raf-run.step"
#define KEY_DATASET "raf-run.dataset."

/* "f32[2,3]" for a tensor of the file, spelled as raf spells types. */
static void st_type_str(const raf_st_tensor *e, char *buf, size_t size) {
  int n = snprintf(buf, size, "%s[", raf_dtype_name(e->dtype));
  for (int d = 0; d < e->rank && n > 0 && (size_t)n < size; d++)
    n += snprintf(buf + n, size - (size_t)n, "%s%lld", d ? "," : "",
                  (long long)e->dims[d]);
  if (n > 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, "]");
}

static bool saved_kind(const raf_arg *a) {
  return raf_arg_flag(a, "param") || raf_arg_flag(a, "state");
}

/* Fills the arguments st names. flag ("--load", "--resume") starts the
 * messages; strict: a name that is not a param or state of f is an error
 * (a checkpoint of another model), and so is a param or state the file
 * lacks; else such names are warnings. */
static raf_status fill_from(raf_ctx *ctx, raf_exec *ex, const char *flag,
                            const char *path, const raf_safetensors *st,
                            raf_func *f, raf_tensor *const *args, bool *given,
                            bool strict) {
  raf_status rc = RAF_OK;
  bool *seen = calloc((size_t)f->nargs + 1, sizeof *seen);
  if (!seen) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "%s: %s: out of memory",
                    flag, path);
    return RAF_ERROR;
  }
  for (int k = 0; k < raf_safetensors_count(st); k++) {
    const raf_st_tensor *e = raf_safetensors_get(st, k);
    int i = 0;
    while (i < f->nargs && strcmp(f->args[i].value->name, e->name) != 0)
      i++;
    if (i == f->nargs || (strict && !saved_kind(&f->args[i]))) {
      raf_diag_report(ctx, (raf_loc){0},
                      strict ? RAF_SEV_ERROR : RAF_SEV_WARNING,
                      "%s: %s: @%s has no %s %%%s%s", flag, path, f->name,
                      i == f->nargs ? "argument" : "param or state", e->name,
                      strict ? ": the checkpoint is not of this function"
                             : "; skipped");
      if (strict)
        rc = RAF_ERROR;
      continue;
    }
    seen[i] = true;
    const raf_type *t = args[i]->type;
    bool same = e->dtype == t->dtype && e->rank == t->rank;
    for (int d = 0; same && d < t->rank; d++)
      same = e->dims[d] == t->dims[d];
    if (!same) {
      char want[128], got[128];
      raf_type_str(t, want, sizeof want);
      st_type_str(e, got, sizeof got);
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "%s: %s: argument %%%s has type %s, but the "
                      "checkpoint holds %s",
                      flag, path, e->name, want, got);
      rc = RAF_ERROR;
      given[i] = true; /* reported already */
      continue;
    }
    if (raf_exec_write(ex, args[i], 0, e->data, args[i]->nbytes) != RAF_OK)
      rc = RAF_ERROR;
    given[i] = true;
  }
  for (int i = 0; strict && i < f->nargs; i++)
    if (!seen[i] && saved_kind(&f->args[i])) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "%s: %s holds no %%%s, a %s of @%s: the checkpoint is "
                      "not of this function",
                      flag, path, f->args[i].value->name,
                      raf_arg_flag(&f->args[i], "param") ? "param" : "state",
                      f->name);
      given[i] = true; /* reported already */
      rc = RAF_ERROR;
    }
  free(seen);
  return rc;
}

/* Whether st holds none of f's params while f has some: another model's
 * checkpoint (a state such as AdamW's %step may share its name), which
 * --load, lenient about names, would otherwise skip whole and train from
 * `init` as if nothing had been loaded. Reports it. */
static bool another_model(raf_ctx *ctx, const char *path,
                          const raf_safetensors *st, const raf_func *f) {
  int count = raf_safetensors_count(st), params = 0, matched = 0;
  for (int i = 0; i < f->nargs; i++) {
    if (!raf_arg_flag(&f->args[i], "param"))
      continue;
    params++;
    for (int k = 0; k < count; k++)
      if (strcmp(f->args[i].value->name, raf_safetensors_get(st, k)->name) ==
          0) {
        matched++;
        break;
      }
  }
  if (count == 0 || params == 0 || matched > 0)
    return false;
  char held[512] = "";
  size_t n = 0;
  for (int k = 0; k < count && k < 4 && n < sizeof held - 96; k++)
    n += (size_t)snprintf(held + n, sizeof held - n, "%s%%%s", k ? ", " : "",
                          raf_safetensors_get(st, k)->name);
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                  "--load: %s holds none of @%s's params (it holds %d "
                  "tensor%s: %s%s): a checkpoint of another model?",
                  path, f->name, count, count == 1 ? "" : "s", held,
                  count > 4 ? ", ..." : "");
  return true;
}

raf_status rr_checkpoint_load(raf_ctx *ctx, raf_exec *ex, const char *path,
                              raf_func *f, raf_tensor *const *args,
                              bool *given) {
  raf_safetensors *st;
  if (raf_safetensors_read(ctx, path, &st) != RAF_OK) {
    /* Reported; spare the "no value" errors of the arguments the file may
     * have held, as for an argument whose type does not match below. */
    for (int i = 0; i < f->nargs; i++)
      given[i] = true;
    return RAF_ERROR;
  }
  if (another_model(ctx, path, st, f)) {
    raf_safetensors_free(st);
    for (int i = 0; i < f->nargs; i++)
      given[i] = true; /* spare the "no value" errors */
    return RAF_ERROR;
  }
  raf_status rc = fill_from(ctx, ex, "--load", path, st, f, args, given, false);
  raf_safetensors_free(st);
  return rc;
}

/* A counter of the metadata: a decimal integer >= 0, else -1. */
static long long counter(const raf_safetensors *st, const char *key) {
  const char *v = raf_safetensors_metadata(st, key);
  if (!v || *v < '0' || *v > '9')
    return -1;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  return *end || errno ? -1 : n;
}

raf_status rr_checkpoint_resume(raf_ctx *ctx, raf_exec *ex, const char *path,
                                raf_func *f, raf_tensor *const *args,
                                bool *given, rr_progress *p) {
  raf_safetensors *st;
  if (raf_safetensors_read(ctx, path, &st) != RAF_OK) {
    for (int i = 0; i < f->nargs; i++)
      given[i] = true;
    return RAF_ERROR;
  }
  raf_status rc = fill_from(ctx, ex, "--resume", path, st, f, args, given,
                            true);
  long long step = counter(st, KEY_STEP);
  if (step < 0) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--resume: %s has no step count (\"" KEY_STEP "\" in its "
                    "__metadata__): it was not written by raf-run --save "
                    "(--load reads it as initial values)",
                    path);
    rc = RAF_ERROR;
  }
  p->step = step < 0 ? 0 : (long)step;
  for (int k = 0; k < p->ndatasets; k++) {
    char *key = malloc(sizeof KEY_DATASET + strlen(p->datasets[k].name));
    if (key)
      sprintf(key, KEY_DATASET "%s", p->datasets[k].name);
    p->next[k] = key ? counter(st, key) : -1; /* -1: from the step */
    free(key);
  }
  raf_safetensors_free(st);
  return rc;
}

raf_status rr_checkpoint_save(raf_ctx *ctx, raf_exec *ex, const char *path,
                              raf_func *f, raf_tensor *const *args,
                              const rr_progress *p) {
  int nd = p ? p->ndatasets : 0;
  raf_st_tensor *list = calloc((size_t)f->nargs + 1, sizeof *list);
  void **staged = calloc((size_t)f->nargs + 1, sizeof *staged);
  /* The metadata: producer, step, a position per dataset; each key and
   * value, then the NULL. Keys and values live in text: a key is the
   * prefix and the name, a value at most 20 digits. */
  size_t room = 32;
  for (int k = 0; k < nd; k++)
    room += sizeof KEY_DATASET + strlen(p->datasets[k].name) + 32;
  const char **meta = calloc(2 * (size_t)nd + 7, sizeof *meta);
  char *text = malloc(room);
  if (!list || !staged || !meta || !text) {
    free(list);
    free(staged);
    free(meta);
    free(text);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--save: %s: out of memory", path);
    return RAF_ERROR;
  }
  int nm = 0;
  meta[nm++] = "producer";
  meta[nm++] = "raf-run " RAF_VERSION;
  if (p) {
    meta[nm++] = KEY_STEP;
    meta[nm++] = text;
    char *at = text + snprintf(text, 32, "%ld", p->step) + 1;
    for (int k = 0; k < nd; k++) {
      int same = 0; /* a key once (two --dataset flags for one argument) */
      while (same < k && strcmp(p->datasets[same].name, p->datasets[k].name))
        same++;
      if (same < k)
        continue;
      meta[nm++] = at;
      at += sprintf(at, KEY_DATASET "%s", p->datasets[k].name) + 1;
      meta[nm++] = at;
      at += sprintf(at, "%lld", (long long)p->next[k]) + 1;
    }
  }
  meta[nm] = NULL;
  int n = 0;
  raf_status rc = RAF_OK;
  for (int i = 0; i < f->nargs && rc == RAF_OK; i++) {
    if (!saved_kind(&f->args[i]))
      continue;
    raf_st_tensor *e = &list[n];
    const raf_type *t = args[i]->type;
    e->name = f->args[i].value->name;
    e->dtype = t->dtype;
    e->rank = t->rank;
    for (int d = 0; d < t->rank; d++)
      e->dims[d] = t->dims[d];
    /* Device memory is staged through the host (all of it at once: the
     * writer takes the list whole). */
    if (!(e->data = raf_exec_host_data(ex, args[i], &staged[n])))
      rc = RAF_ERROR;
    e->nbytes = args[i]->nbytes;
    n++;
  }
  if (rc == RAF_OK && n == 0)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_WARNING,
                    "--save: @%s has no param or state argument; the "
                    "checkpoint is empty",
                    f->name);
  if (rc == RAF_OK)
    rc = raf_safetensors_write(ctx, path, list, n, meta);
  for (int k = 0; k < n; k++)
    free(staged[k]);
  free(staged);
  free(list);
  free(meta);
  free(text);
  return rc;
}

raf_status rr_checkpoint_save_dist(raf_ctx *ctx, raf_exec *ex, raf_module *m,
                                   raf_func *f, const rr_dist *d,
                                   const char *path, raf_tensor **args,
                                   const rr_progress *p) {
  if (d->world <= 1)
    return rr_checkpoint_save(ctx, ex, path, f, args, p);
  raf_tensor **whole = calloc((size_t)f->nargs + 1, sizeof *whole);
  raf_status rc = whole ? RAF_OK : RAF_ERROR;
  for (int i = 0; rc == RAF_OK && i < f->nargs; i++) {
    raf_type *t = rr_dist_whole_type(m, f, i, d);
    bool part = raf_attrs_find(&f->args[i].attrs, "sharded") != NULL;
    whole[i] = !part ? args[i] : d->rank == 0 ? rr_host_tensor(t) : NULL;
    if (d->rank == 0 && !whole[i])
      rc = RAF_ERROR;
    else if (part)
      rc = rr_dist_gather(ctx, ex, d, args[i], whole[i]);
  }
  if (rc == RAF_OK && d->rank == 0)
    rc = rr_checkpoint_save(ctx, ex, path, f, whole, p);
  for (int i = 0; whole && i < f->nargs; i++)
    if (whole[i] != args[i])
      rr_host_tensor_free(whole[i]);
  free(whole);
  return rc;
}
