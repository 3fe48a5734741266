/* checkpoint.c: --save and --load (see checkpoint.h), through the
 * safetensors module. */
#include "raf-run/checkpoint.h"

#include "runtime/safetensors.h"

#include <stdlib.h>
#include <string.h>

/* "f32[2,3]" for a tensor of the file, spelled as raf spells types. */
static void st_type_str(const raf_st_tensor *e, char *buf, size_t size) {
  int n = snprintf(buf, size, "%s[", raf_dtype_name(e->dtype));
  for (int d = 0; d < e->rank && n > 0 && (size_t)n < size; d++)
    n += snprintf(buf + n, size - (size_t)n, "%s%lld", d ? "," : "",
                  (long long)e->dims[d]);
  if (n > 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, "]");
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
  raf_status rc = RAF_OK;
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
  /* A checkpoint that gives none of the params is another model's (a
   * state such as AdamW's %step may share its name): going on would train
   * from `init` as if nothing had been loaded. */
  if (count > 0 && params > 0 && matched == 0) {
    char held[512] = "";
    size_t n = 0;
    for (int k = 0; k < count && k < 4 && n < sizeof held - 96; k++)
      n += (size_t)snprintf(held + n, sizeof held - n, "%s%%%s",
                            k ? ", " : "", raf_safetensors_get(st, k)->name);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--load: %s holds none of @%s's params (it holds %d "
                    "tensor%s: %s%s): a checkpoint of another model?",
                    path, f->name, count, count == 1 ? "" : "s", held,
                    count > 4 ? ", ..." : "");
    raf_safetensors_free(st);
    for (int i = 0; i < f->nargs; i++)
      given[i] = true; /* spare the "no value" errors */
    return RAF_ERROR;
  }
  for (int k = 0; k < count; k++) {
    const raf_st_tensor *e = raf_safetensors_get(st, k);
    int i = 0;
    while (i < f->nargs && strcmp(f->args[i].value->name, e->name) != 0)
      i++;
    if (i == f->nargs) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_WARNING,
                      "--load: %s: @%s has no argument %%%s; skipped", path,
                      f->name, e->name);
      continue;
    }
    const raf_type *t = args[i]->type;
    bool same = e->dtype == t->dtype && e->rank == t->rank;
    for (int d = 0; same && d < t->rank; d++)
      same = e->dims[d] == t->dims[d];
    if (!same) {
      char want[128], got[128];
      raf_type_str(t, want, sizeof want);
      st_type_str(e, got, sizeof got);
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "--load: %s: argument %%%s has type %s, but the "
                      "checkpoint holds %s",
                      path, e->name, want, got);
      rc = RAF_ERROR;
      given[i] = true; /* reported already */
      continue;
    }
    if (raf_exec_write(ex, args[i], 0, e->data, args[i]->nbytes) != RAF_OK)
      rc = RAF_ERROR;
    given[i] = true;
  }
  raf_safetensors_free(st);
  return rc;
}

raf_status rr_checkpoint_save(raf_ctx *ctx, raf_exec *ex, const char *path,
                              raf_func *f, raf_tensor *const *args) {
  raf_st_tensor *list = calloc((size_t)f->nargs + 1, sizeof *list);
  void **staged = calloc((size_t)f->nargs + 1, sizeof *staged);
  if (!list || !staged) {
    free(list);
    free(staged);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--save: %s: out of memory", path);
    return RAF_ERROR;
  }
  int n = 0;
  raf_status rc = RAF_OK;
  for (int i = 0; i < f->nargs && rc == RAF_OK; i++) {
    if (!raf_arg_flag(&f->args[i], "param") &&
        !raf_arg_flag(&f->args[i], "state"))
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
  const char *meta[] = {"producer", "raf-run " RAF_VERSION, NULL};
  if (rc == RAF_OK)
    rc = raf_safetensors_write(ctx, path, list, n, meta);
  for (int k = 0; k < n; k++)
    free(staged[k]);
  free(staged);
  free(list);
  return rc;
}
