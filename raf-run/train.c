/* train.c: raf-run's arguments and steps (raf-run/train.h).
 *
 * The arguments are made whole on the host, as one process would, in the
 * order checkpoint (--load), inputs (--input), datasets (--dataset), then
 * each argument's `init`; a rank of a sharded run takes its part, and the
 * host copy goes to the executor's device once. The steps then run with
 * the results marked {updates = %arg} donated back into their arguments,
 * a dataset's next batch fed before each, the loss logged (--log, JSON
 * lines) and a progress line shown on a terminal.
 */
#include "raf-run/train.h"
#include "raf-run/checkpoint.h"
#include "raf-run/values.h"
#include "runtime/device.h"
#include "runtime/init.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int arg_index(const raf_func *f, const char *name) {
  for (int i = 0; i < f->nargs; i++)
    if (strcmp(f->args[i].value->name, name) == 0)
      return i;
  return -1;
}

static void unknown_arg(raf_ctx *ctx, const raf_func *f, const char *flag,
                        const char *name) {
  char known[1024] = "";
  size_t k = 0;
  for (int i = 0; i < f->nargs && k < sizeof known - 64; i++)
    k += (size_t)snprintf(known + k, sizeof known - k, "%s%%%s", i ? ", " : "",
                          f->args[i].value->name);
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                  "%s: @%s has no argument %%%s (its arguments: %s)", flag,
                  f->name, name, f->nargs ? known : "none");
}

/* whole[i]: argument i as the command line gives it (the global batch;
 * rr_dist_whole_type), args[i] as this rank takes it. */
static raf_status open_dataset(raf_ctx *ctx, const raf_func *f,
                               raf_tensor *const *whole,
                               raf_tensor *const *args, int rank,
                               const rr_named *n, rr_dataset *ds) {
  ds->arg = arg_index(f, n->name);
  if (ds->arg < 0) {
    unknown_arg(ctx, f, "--dataset", n->name);
    return RAF_ERROR;
  }
  const raf_type *t = whole[ds->arg]->type;
  ds->slice_bytes = whole[ds->arg]->nbytes;
  ds->rank_offset = (size_t)rank * args[ds->arg]->nbytes;
  if (n->spec[0] != '@') {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--dataset=%s needs @FILE.npy", n->name);
    return RAF_ERROR;
  }
  char what[160];
  snprintf(what, sizeof what, "--dataset=%s", n->name);
  if (rr_read_npy(ctx, what, n->spec + 1, &ds->all) != RAF_OK)
    return RAF_ERROR;
  /* Either [M, d1, ...] cut into slices of the argument's first dimension
   * d0 (M / d0 of them), or [M, d0, d1, ...] with one slice per index. */
  const raf_npy *a = &ds->all;
  bool stacked = a->rank == t->rank + 1, ok = a->dtype == t->dtype;
  if (!stacked)
    ok = ok && t->rank >= 1 && a->rank == t->rank && t->dims[0] > 0;
  for (int d = stacked ? 0 : 1; ok && d < t->rank; d++)
    ok = a->dims[d + stacked] == t->dims[d];
  ds->batches = !ok ? 0 : stacked ? a->dims[0] : a->dims[0] / t->dims[0];
  /* In a sharded run the batch the file is cut into is the global one,
   * every rank's rows together: say so, with the sizes, since a file cut
   * for one rank's batch is the likely mistake. */
  char global[160] = "";
  int64_t local = args[ds->arg]->type->rank ? args[ds->arg]->type->dims[0] : 0;
  if (t->rank && local > 0 && t->dims[0] != local)
    snprintf(global, sizeof global,
             " (the global batch: %lld rows, %lld per rank x %lld ranks)",
             (long long)t->dims[0], (long long)local,
             (long long)(t->dims[0] / local));
  if (!ok || ds->batches == 0) {
    char want[128];
    raf_type_str(t, want, sizeof want);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--dataset=%s: %s must hold slices of argument %%%s "
                    "(%s) along axis 0: an array of %s shaped [K*%lld, ...] "
                    "or [K, %s...]%s",
                    n->name, n->spec + 1, n->name, want,
                    raf_dtype_name(t->dtype),
                    t->rank ? (long long)t->dims[0] : 1LL,
                    t->rank ? "d0, " : "", global);
    raf_npy_free(&ds->all);
    return RAF_ERROR;
  }
  if (!stacked && a->dims[0] % t->dims[0] != 0 && rank == 0)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_WARNING,
                    "--dataset=%s: %s has %lld rows, %lld batches of %lld%s; "
                    "its last %lld rows are never fed",
                    n->name, n->spec + 1, (long long)a->dims[0],
                    (long long)ds->batches, (long long)t->dims[0], global,
                    (long long)(a->dims[0] % t->dims[0]));
  return RAF_OK;
}

/* The batch of the step `step` after the first into t, on the executor's
 * device. */
raf_status rr_feed(raf_exec *ex, const rr_dataset *ds, long step,
                       raf_tensor *t) {
  int64_t b = (ds->start + step) % ds->batches;
  return raf_exec_write(ex, t, 0,
                        (const char *)ds->all.data +
                            (size_t)b * ds->slice_bytes + ds->rank_offset,
                        t->nbytes);
}

/* Fills whole[i] (argument i as the command line gives it) from the
 * flags, in the order checkpoint, inputs, datasets, `init`. */
static raf_status fill_args(raf_ctx *ctx, raf_exec *ex, raf_func *f,
                            const rr_options *o, int rank,
                            raf_tensor *const *whole,
                            raf_tensor *const *args, bool *given,
                            rr_dataset *ds, rr_progress *resume) {
  raf_status rc = RAF_OK;
  if (o->load &&
      rr_checkpoint_load(ctx, ex, o->load, f, whole, given) != RAF_OK)
    rc = RAF_ERROR;
  /* After --load, over which it goes on (--load may give initial values
   * to a first run that --resume then continues). */
  if (resume && rr_checkpoint_resume(ctx, ex, o->save, f, whole, given,
                                     resume) != RAF_OK)
    rc = RAF_ERROR;
  for (int k = 0; k < o->ninputs; k++) {
    int i = arg_index(f, o->inputs[k].name);
    if (i < 0) {
      unknown_arg(ctx, f, "--input", o->inputs[k].name);
      rc = RAF_ERROR;
      continue;
    }
    char what[160];
    snprintf(what, sizeof what, "--input=%s: argument %%%s", o->inputs[k].name,
             o->inputs[k].name);
    if (given[i] && !o->load && !resume) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "--input: argument %%%s is given twice",
                      o->inputs[k].name);
      rc = RAF_ERROR;
    }
    if (rr_read_value(ctx, what, o->inputs[k].spec, whole[i]) != RAF_OK)
      rc = RAF_ERROR;
    given[i] = true;
  }
  for (int k = 0; k < o->ndatasets; k++) {
    if (open_dataset(ctx, f, whole, args, rank, &o->datasets[k], &ds[k]) !=
        RAF_OK) {
      rc = RAF_ERROR;
      if (ds[k].arg >= 0)
        given[ds[k].arg] = true; /* reported already */
      ds[k].arg = -1;
      continue;
    }
    given[ds[k].arg] = true;
    /* Where the interrupted run was: its saved batch, else the one its
     * step reads (a dataset it did not have). */
    if (resume)
      ds[k].start = (resume->next[k] >= 0 ? resume->next[k] : resume->step) %
                    ds[k].batches;
  }
  char missing[1024] = "";
  size_t nm = 0;
  for (int i = 0; i < f->nargs; i++) {
    if (given[i])
      continue;
    const raf_attr *init = raf_attrs_find(&f->args[i].attrs, "init");
    raf_init_spec spec;
    if (init && init->kind == RAF_ATTR_STRING &&
        raf_init_parse(init->val.u.s, &spec)) {
      raf_init_fill(whole[i], &spec, o->seed, (uint32_t)i);
    } else if (nm < sizeof missing - 64) {
      nm += (size_t)snprintf(missing + nm, sizeof missing - nm, "%s%%%s",
                             nm ? ", " : "", f->args[i].value->name);
    }
  }
  if (nm) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "@%s: no value for %s (give --input=NAME=..., or an "
                    "`init` attribute)",
                    f->name, missing);
    rc = RAF_ERROR;
  }
  return rc;
}

/* The arguments of f: inputs, checkpoint, datasets, then `init`. In a
 * sharded run each is made whole, as one process would (whole[i]), and
 * this rank takes its part. Each is made on the host: in args[i] itself
 * when the device's memory is the host's and the types are the same, else
 * in a host tensor copied to the device once made. */
raf_status rr_make_args(raf_ctx *ctx, raf_exec *ex, raf_module *m,
                            raf_func *f, const rr_options *o, const rr_dist *d,
                            raf_tensor **args, rr_dataset *ds,
                            rr_progress *resume) {
  bool given[1024] = {false};
  raf_tensor *whole[1024] = {NULL};
  raf_status rc = RAF_OK;
  bool in_place = raf_device_host_addressable(raf_exec_device(ex));
  for (int i = 0; i < f->nargs && rc == RAF_OK; i++) {
    raf_type *t = rr_dist_whole_type(m, f, i, d);
    if (!t || !(args[i] = raf_exec_alloc(ex, f->args[i].value->type)) ||
        !(whole[i] = t == args[i]->type && in_place ? args[i]
                                                     : rr_host_tensor(t)))
      rc = RAF_ERROR;
  }
  if (rc == RAF_OK)
    rc = fill_args(ctx, ex, f, o, d->rank, whole, args, given, ds, resume);
  for (int i = 0; i < f->nargs; i++) {
    if (whole[i] == args[i])
      continue;
    /* A param or state that is not sharded is the whole tensor on every
     * rank (rank r's part would be past its end: zeros on ranks above 0). */
    bool replicated = whole[i] && whole[i]->type == args[i]->type &&
                      !raf_attrs_find(&f->args[i].attrs, "sharded");
    if (whole[i] && rc == RAF_OK)
      rc = replicated ? raf_exec_write(ex, args[i], 0, whole[i]->data,
                                       args[i]->nbytes)
                      : rr_dist_take_part(ex, d, whole[i], args[i]);
    rr_host_tensor_free(whole[i]);
  }
  return rc;
}

/* The first result as a loss: a float scalar (copied to the host), else
 * false; RAF_ERROR when the copy fails. */
static raf_status scalar_loss(raf_exec *ex, const raf_tensor *t, double *loss,
                              bool *has_loss) {
  *has_loss = t->type->numel == 1 && raf_dtype_is_float(t->type->dtype);
  double bytes; /* room for any float scalar */
  if (!*has_loss ||
      raf_exec_read(ex, t, 0, &bytes, t->nbytes) != RAF_OK)
    return *has_loss ? RAF_ERROR : RAF_OK;
  *loss = raf_elem_get_f64(t->type->dtype, &bytes, 0);
  return RAF_OK;
}

/* ran: the steps this process ran, of which step is the last. */
static void progress(long step, long steps, long ran, double loss,
                     bool has_loss, double elapsed_ms) {
  double rate = (double)ran / (elapsed_ms / 1e3);
  double eta = (double)(steps - step) / (rate > 0 ? rate : 1);
  fprintf(stderr, "\rstep %ld/%ld", step, steps);
  if (has_loss)
    fprintf(stderr, "  loss %.6g", loss);
  fprintf(stderr, "  %.1f steps/s  ETA %.0fs ", rate, eta);
  if (step == steps)
    fputc('\n', stderr);
}

raf_status rr_report_results(raf_ctx *ctx, raf_func *f, const rr_options *o,
                                 raf_exec *ex, raf_tensor **results,
                                 bool *failed) {
  raf_status rc = RAF_OK;
  if (o->noutputs > f->nresults || o->nexpected > f->nresults) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "@%s has %d result%s, but %d %s given", f->name,
                    f->nresults, f->nresults == 1 ? "" : "s",
                    o->noutputs > o->nexpected ? o->noutputs : o->nexpected,
                    o->noutputs > o->nexpected ? "--output flags are"
                                               : "--expected-output flags are");
    return RAF_ERROR;
  }
  /* The results where the host reads them: in place on the host device,
   * else copied from the device (staged[r], freed below). */
  int n = f->nresults;
  raf_tensor *host = calloc((size_t)n + 1, sizeof *host);
  raf_tensor **hostp = calloc((size_t)n + 1, sizeof *hostp);
  void **staged = calloc((size_t)n + 1, sizeof *staged);
  if (!host || !hostp || !staged) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    rc = RAF_ERROR;
  }
  for (int r = 0; rc == RAF_OK && r < n; r++) {
    const void *data = raf_exec_host_data(ex, results[r], &staged[r]);
    host[r] = (raf_tensor){results[r]->type, (void *)data, results[r]->nbytes,
                           RAF_DEVICE_HOST};
    hostp[r] = &host[r];
    if (!data)
      rc = RAF_ERROR;
  }
  for (int r = 0; rc == RAF_OK && r < o->noutputs; r++) {
    raf_npy view = rr_npy_view(hostp[r]);
    if (raf_npy_write(ctx, o->outputs[r], &view) != RAF_OK)
      rc = RAF_ERROR;
  }
  /* Printed before the verdict, which stays the last line. */
  if (rc == RAF_OK && (o->print_given || (!o->noutputs && !o->nexpected)))
    rr_print_results(stdout, f, hostp, o->print);
  bool all_ok = true;
  for (int r = 0; r < o->nexpected && rc == RAF_OK; r++) {
    raf_tensor *want = rr_host_tensor(results[r]->type);
    char what[64], msg[512];
    snprintf(what, sizeof what, "--expected-output for result[%d]", r);
    if (!want || rr_read_value(ctx, what, o->expected[r], want) != RAF_OK) {
      rc = RAF_ERROR;
    } else if (!rr_compare(hostp[r], want, o->tol, msg, sizeof msg)) {
      printf("[FAILED] result[%d]: %s\n", r, msg);
      all_ok = false;
    }
    rr_host_tensor_free(want);
  }
  if (o->nexpected && rc == RAF_OK) {
    if (all_ok)
      printf("[SUCCESS]\n");
    *failed = !all_ok;
  }
  for (int r = 0; staged && r < n; r++)
    free(staged[r]);
  free(staged);
  free(hostp);
  free(host);
  return rc;
}

/* The --log file, new; or on resume after `first` steps, the same file
 * cut after its lines of steps 1..first (a killed run may have logged
 * steps past its last checkpoint, and half a line), so that it reads as
 * one run's. */
static FILE *open_log(raf_ctx *ctx, const char *path, long first) {
  FILE *log = first > 0 ? fopen(path, "r+") : NULL;
  if (log) {
    char line[512];
    long keep = 0, step;
    while (fgets(line, sizeof line, log)) {
      size_t len = strlen(line);
      if (len == 0 || line[len - 1] != '\n' ||
          sscanf(line, "{\"step\": %ld", &step) != 1 || step > first)
        break;
      keep = ftell(log);
    }
    if (keep >= 0 && ftruncate(fileno(log), keep) == 0 &&
        fseek(log, 0, SEEK_END) == 0)
      return log;
    fclose(log);
    log = NULL;
  } else {
    log = fopen(path, "w");
  }
  if (!log)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--log: cannot write '%s': %s", path, strerror(errno));
  return log;
}

/* Runs the steps; the last step's results are left in results, and the
 * time of all the steps in *total_ms. Only the leader (rank 0) logs and
 * shows progress. */
raf_status rr_run_steps(raf_ctx *ctx, raf_exec *ex, raf_func *f,
                      const rr_options *o, bool leader, raf_tensor **args,
                      rr_dataset *ds, raf_tensor **results, long first,
                      const rr_saver *saver, double *total_ms) {
  FILE *log = NULL;
  *total_ms = 0;
  if (leader && o->log && !(log = open_log(ctx, o->log, first)))
    return RAF_ERROR;
  bool tty = leader && o->steps - first > 1 && isatty(STDERR_FILENO);
  double start = now_ms(), last_shown = 0;
  raf_status rc = RAF_OK;
  for (long s = first; s < o->steps && rc == RAF_OK; s++) {
    for (int k = 0; k < o->ndatasets && rc == RAF_OK; k++)
      rc = rr_feed(ex, &ds[k], s - first, args[ds[k].arg]);
    if (rc != RAF_OK)
      break;
    if (s > first)
      for (int r = 0; r < f->nresults; r++) {
        raf_exec_free(ex, results[r]);
        results[r] = NULL;
      }
    double t0 = now_ms();
    rc = raf_exec_call(ex, f, args, results);
    /* The step is timed to the end of its work, not of its queueing. */
    if (rc == RAF_OK)
      rc = raf_device_synchronize(raf_exec_device(ex));
    double ms = now_ms() - t0;
    *total_ms += ms;
    if (rc == RAF_OK)
      rc = raf_exec_donate(ex, f, args, results);
    double loss = 0;
    bool has_loss = false;
    if (rc == RAF_OK && f->nresults > 0)
      rc = scalar_loss(ex, results[0], &loss, &has_loss);
    if (rc != RAF_OK)
      break;
    if (log) {
      fprintf(log, "{\"step\": %ld", s + 1);
      if (has_loss)
        fprintf(log, isfinite(loss) ? ", \"loss\": %.8g" : ", \"loss\": null",
                loss);
      fprintf(log, ", \"ms\": %.4f}\n", ms);
      /* A line per step reaches the file as the step ends, so a killed
       * run's log has every step it finished. */
      fflush(log);
    }
    double now = now_ms();
    if (tty && (now - last_shown > 100 || s + 1 == o->steps)) {
      progress(s + 1, o->steps, s + 1 - first, loss, has_loss, now - start);
      last_shown = now;
    }
    /* The last step's checkpoint is the run's own, written after it. */
    if (o->save_every && (s + 1) % o->save_every == 0 && s + 1 < o->steps)
      rc = saver->save(saver->self, s + 1);
  }
  if (log && fclose(log) != 0) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--log: cannot write '%s'", o->log);
    rc = RAF_ERROR;
  }
  return rc;
}

