/* session.c: one run of raf-run, put together from the options.
 *
 * The module is parsed and verified; its device is --device's, else the
 * one its dialect marks name (a module raf-opt dispatched for cuda runs
 * there), else the CPU. The device is opened before anything is
 * dispatched, so that a machine without it fails in one line. The
 * executor (include/raf/run.h) then chooses the dialects: the module's
 * marks are kept unless --dialects or --device asks for another choice,
 * and a note on stderr says how many were replaced. Then the arguments
 * are made, the function is called --steps times (train.c) or checked
 * (--gradcheck), the results reported, the checkpoint saved, and the
 * figures asked for printed. Every error is a message and a non-zero
 * exit, never a crash; under mpirun a rank that fails once the ranks work
 * together ends the job (dist.c).
 */
#include "raf-run/session.h"

#include "raf-run/checkpoint.h"
#include "raf-run/dist.h"
#include "raf-run/gradcheck.h"
#include "raf-run/profile.h"
#include "raf-run/train.h"
#include "raf-run/values.h"
#include "runtime/dialects.h"
#include "runtime/llvm.h"
#include "runtime/mpi.h"
#include "runtime/run_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static raf_module *load_module(raf_ctx *ctx, const rr_options *o) {
  bool from_stdin = strcmp(o->input_file, "-") == 0;
  const char *name = from_stdin ? "<stdin>" : o->input_file;
  FILE *in = from_stdin ? stdin : fopen(o->input_file, "rb");
  size_t len = 0;
  char *text = in ? raf_read_stream(in, &len) : NULL;
  if (in && !from_stdin)
    fclose(in);
  if (!text) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "cannot read '%s': %s",
                    name, strerror(errno));
    return NULL;
  }
  raf_module *m = raf_parse_module(ctx, name, text, len, 1);
  free(text);
  if (m && raf_verify_module(ctx, m) != RAF_OK) {
    raf_module_destroy(m);
    return NULL;
  }
  return m;
}

static raf_func *pick_function(raf_ctx *ctx, raf_module *m, const char *name) {
  if (!name) {
    if (!m->last)
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "the module has no function");
    return m->last;
  }
  raf_func *f = raf_module_find_func(m, name);
  if (!f) {
    char known[1024] = "";
    size_t k = 0;
    for (raf_func *g = m->first; g && k < sizeof known - 64; g = g->next)
      k += (size_t)snprintf(known + k, sizeof known - k, "%s@%s",
                            k ? ", " : "", g->name);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--function: no function @%s (the module has %s)", name,
                    known[0] ? known : "none");
  }
  return f;
}

/* rank 0's --print-comm line: what the collectives sent, how long they
 * took (waiting for the other ranks included) and how much of that the
 * step waited for, per step; the rest ran behind compute (overlap-comm's
 * async collectives). The nccl dialect's times come from events on the
 * GPU (runtime/cuda/nccl.c); none at all is said as such. */
static void print_comm(const raf_exec *ex, long ran, double total_ms) {
  raf_mpi_stats st = raf_comm_stats_of(ex);
  double steps = (double)ran, ms = (double)st.ns * 1e-6;
  fprintf(stderr,
          "comm: %.3f MB (%.0f bytes) sent per rank per step, %.0f "
          "collectives per step, ",
          (double)st.bytes / 1e6 / steps, (double)st.bytes / steps,
          (double)st.calls / steps);
  if (st.ns > 0 || st.calls == 0) {
    double waited = (double)st.waited_ns * 1e-6;
    fprintf(stderr,
            "%.2f ms in collectives per step (%.1f%% of the step), %.2f ms "
            "of it waited for (%.1f%% hidden behind compute)\n",
            ms / steps, total_ms > 0 ? 100 * ms / total_ms : 0.0,
            waited / steps, ms > 0 ? 100 * (ms - waited) / ms : 0.0);
  } else
    fprintf(stderr, "timed on the device by --profile\n");
}

/* How long MPI_Abort may take before the rank exits by itself. Open MPI's
 * abort goes through the local daemon to mpirun, which may sit on the far
 * side of a network that is gone; the rank's exit is what matters, since
 * mpirun ends the job when a rank exits without finalizing. */
enum { ABORT_GRACE_S = 5 };

static volatile sig_atomic_t abort_rank;

/* SIGALRM during the abort: say so and exit, with async-signal-safe
 * calls only (hence the digits by hand). */
static void abort_timed_out(int sig) {
  (void)sig;
  char digits[12], *p = digits + sizeof digits;
  unsigned r = (unsigned)abort_rank;
  do
    *--p = (char)('0' + r % 10);
  while ((r /= 10) && p > digits);
  static const char head[] = "rank ";
  static const char tail[] = ": error: MPI_Abort did not end the job "
                             "within 5 s; the rank exits by itself\n";
  _Static_assert(ABORT_GRACE_S == 5, "the message says 5 s");
  ssize_t ok = write(STDERR_FILENO, head, sizeof head - 1);
  if (ok >= 0)
    ok = write(STDERR_FILENO, p, (size_t)(digits + sizeof digits - p));
  if (ok >= 0)
    ok = write(STDERR_FILENO, tail, sizeof tail - 1);
  _exit(1);
}

/* A rank that fails after the ranks started working together reports and
 * ends the whole job (MPI_Abort), so that none waits in a collective. An
 * alarm bounds the abort (ABORT_GRACE_S). */
static void end_job_on_error(const raf_ctx *ctx, const rr_dist *d,
                             raf_status rc) {
  if (rc == RAF_OK || d->world <= 1)
    return;
  rr_dist_render(ctx, d, stderr);
  fflush(NULL);
  abort_rank = d->rank;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = abort_timed_out;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  alarm(ABORT_GRACE_S);
  raf_mpi_abort(1);
}

/* Opens the device of o->device's kind into *out: device 0, or under
 * mpirun the local rank's, modulo the devices there are, so that the ranks
 * on one machine take a GPU each. Its failure is one line,
 * "--device=cuda: no libcuda.so.1 (no NVIDIA driver)": the device's
 * messages, collected apart, are reported again after the flag. */
static raf_status open_device(raf_ctx *ctx, const rr_options *o,
                              raf_device **out) {
  raf_ctx *scratch = raf_ctx_create();
  if (!scratch) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  const char *kind = raf_device_kind_name(o->device);
  const char *why = raf_device_kind_unavailable(o->device);
  raf_status rc = RAF_ERROR;
  char prefix[80];
  if (o->device_given)
    snprintf(prefix, sizeof prefix, "--device=%s", kind);
  else
    snprintf(prefix, sizeof prefix, "device %s (the module's dialect marks)",
             kind);
  if (why)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "%s: raf-run was %s",
                    prefix, why);
  else {
    int ordinal = rr_env_local_rank(), count = 1;
    rc = ordinal > 0 ? raf_device_count(scratch, o->device, &count) : RAF_OK;
    if (rc == RAF_OK)
      rc = raf_device_open(scratch, o->device,
                           count > 0 ? ordinal % count : 0, out);
  }
  if (rc == RAF_OK) /* scratch goes; the device's later errors are ctx's */
    raf_device_set_ctx(*out, ctx);
  rr_relay_diags(ctx, scratch, prefix);
  return rc;
}

/* Everything one run holds, freed by end_session. */
typedef struct session {
  raf_ctx *ctx;
  raf_module *m;
  raf_func *f;
  rr_dist d;
  raf_executor *executor;
  raf_exec *ex; /* the executor's */
  raf_tensor **args, **results;
  rr_dataset ds[MAX_DATASETS];
  bool leader; /* the rank that says why a run failed, and prints */
  const rr_options *o;
  /* --resume: the steps the checkpoint had done (first), else 0; and the
   * counters --save writes (progress). */
  long first;
  rr_progress progress;
} session;

/* The device, then the executor and its dialect choice; says on stderr
 * when the choice replaced the module's marks. */
static raf_status make_executor(session *s, rr_options *o) {
  if (!o->device_given)
    raf_module_marked_device(s->m, &o->device);
  raf_device *dev = NULL;
  if (open_device(s->ctx, o, &dev) != RAF_OK)
    return RAF_ERROR;
  raf_executor_options eo;
  raf_executor_options_init(&eo);
  eo.dialects = o->dialects;
  eo.threads = o->threads;
  eo.check_numerics = o->check_numerics;
  eo.profile = o->profile_top > 0;
  eo.sync_each = o->cuda_sync;
  if (raf_executor_create_on(s->m, &eo, dev, &s->executor) != RAF_OK)
    return RAF_ERROR; /* dev went with it */
  s->ex = raf_executor_exec(s->executor);
  int replaced = raf_executor_replaced_marks(s->executor);
  if (replaced && rr_env_rank() == 0)
    fprintf(stderr,
            "raf-run: note: %d dialect mark%s of the module replaced: "
            "dispatched again for %s with %s\n",
            replaced, replaced == 1 ? "" : "s",
            raf_executor_device(s->executor),
            raf_executor_dialects(s->executor));
  o->grad.dialects = raf_executor_dialects(s->executor);
  o->grad.device = o->device;
  return RAF_OK;
}

/* The module, the function, the ranks, the executor and the arguments.
 * Until the arguments are made every rank fails alike, and rank 0 alone
 * says why; a rank may fail to make its arguments alone (a file it cannot
 * read): the ranks agree, and each that failed says why. */
static raf_status start_session(session *s, rr_options *o) {
  s->d = (rr_dist){1, 0};
  s->leader = rr_env_rank() == 0;
  s->m = load_module(s->ctx, o);
  s->f = s->m ? pick_function(s->ctx, s->m, o->function) : NULL;
  if (o->comm_timeout > 0)
    raf_mpi_set_timeout(o->comm_timeout);
  raf_status rc = s->f ? rr_dist_start(s->ctx, s->f, &s->d) : RAF_ERROR;
  if (rc == RAF_OK)
    rc = rr_dist_check_same(s->ctx, &s->d, s->m, s->f, o->steps);
  if (rc == RAF_OK && s->d.world > 1 && o->gradcheck) {
    raf_diag_report(s->ctx, s->f->loc, RAF_SEV_ERROR,
                    "--gradcheck runs in one process, but @%s is sharded "
                    "over %d ranks", s->f->name, s->d.world);
    rc = RAF_ERROR;
  }
  if (s->d.world > 1 && !o->threads) { /* the ranks here share the CPUs */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int local = rr_env_local_ranks();
    o->threads = cpus > local ? (int)(cpus / local) : 1;
  }
  /* --cuda-sync-each as RAF_CUDA_SYNC=1, so that every executor has it
   * (--gradcheck's too). */
  if (o->cuda_sync)
    setenv("RAF_CUDA_SYNC", "1", 1);
  if (rc == RAF_OK)
    rc = make_executor(s, o);
  if (rc == RAF_OK && s->f->nargs > 1024) {
    raf_diag_report(s->ctx, s->f->loc, RAF_SEV_ERROR,
                    "more than 1024 arguments");
    rc = RAF_ERROR;
  }
  if (rc != RAF_OK)
    return rc;
  s->args = calloc((size_t)s->f->nargs + 1, sizeof *s->args);
  s->results = calloc((size_t)s->f->nresults + 1, sizeof *s->results);
  /* --resume goes on from --save's file when there is one; without it the
   * run starts at step 1, so one command line starts a run and restarts
   * it after a fault. */
  s->progress.datasets = o->datasets;
  s->progress.ndatasets = o->ndatasets;
  bool resume = o->resume && access(o->save, F_OK) == 0;
  if (o->resume && !resume && s->leader)
    fprintf(stderr, "raf-run: note: --resume: no checkpoint '%s' yet; "
            "starting at step 1\n", o->save);
  rc = s->args && s->results
           ? rr_make_args(s->ctx, s->ex, s->m, s->f, o, &s->d, s->args, s->ds,
                          resume ? &s->progress : NULL)
           : RAF_ERROR;
  s->first = resume ? s->progress.step : 0;
  if (s->d.world > 1 && raf_mpi_any(rc != RAF_OK)) {
    if (rc == RAF_OK)
      raf_diag_clear(s->ctx);
    s->leader = rc != RAF_OK;
    return RAF_ERROR;
  }
  return rc;
}

/* --save's checkpoint after `done` steps (counted over resumed runs):
 * the params and states, the step and each dataset's next batch. Every
 * rank calls it. */
static raf_status save_at(void *self, long done) {
  session *s = self;
  rr_progress *p = &s->progress;
  p->step = done;
  for (int k = 0; k < p->ndatasets; k++)
    p->next[k] = s->ds[k].arg < 0 ? 0
                                  : (s->ds[k].start + (done - s->first)) %
                                        s->ds[k].batches;
  return rr_checkpoint_save_dist(s->ctx, s->ex, s->m, s->f, &s->d, s->o->save,
                                 s->args, p);
}

/* The steps or the gradient check, then what was asked of the results:
 * the checkpoint and the figures. A rank that fails here may leave the
 * others waiting in a collective: it ends the job. *failed: a check
 * failed. */
static raf_status run_session(session *s, const rr_options *o,
                              bool *failed) {
  raf_status rc = RAF_OK;
  double total_ms = 0;
  if (s->first >= o->steps) {
    /* A resumed run that had finished: nothing runs, and there are no
     * results to write or check. */
    if (o->noutputs || o->nexpected) {
      raf_diag_report(s->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "--resume: %s has done %ld steps of --steps=%ld: no "
                      "step is left to make the results of --output or "
                      "--expected-output",
                      o->save, s->first, o->steps);
      return RAF_ERROR;
    }
    if (s->leader)
      fprintf(stderr, "raf-run: note: --resume: '%s' has done %ld steps of "
              "--steps=%ld; no step is left to run\n", o->save, s->first,
              o->steps);
    return RAF_OK;
  }
  if (o->gradcheck) {
    for (int k = 0; k < o->ndatasets && rc == RAF_OK; k++)
      rc = rr_feed(s->ex, &s->ds[k], 0, s->args[s->ds[k].arg]);
    if (rc == RAF_OK)
      rc = rr_gradcheck(s->ctx, s->ex, s->m, s->f, s->args, &o->grad,
                        stdout, failed);
  } else {
    rr_saver saver = {save_at, s};
    rc = rr_run_steps(s->ctx, s->ex, s->f, o, s->leader, s->args, s->ds,
                      s->results, s->first, &saver, &total_ms);
    if (rc == RAF_OK && s->leader)
      rc = rr_report_results(s->ctx, s->f, o, s->ex, s->results, failed);
  }
  end_job_on_error(s->ctx, &s->d, rc);
  if (rc == RAF_OK && o->save)
    rc = save_at(s, o->steps);
  if (rc == RAF_OK && o->print_memory) {
    char rank_tag[32] = "";
    if (s->d.world > 1)
      snprintf(rank_tag, sizeof rank_tag, "rank %d: ", s->d.rank);
    printf("%speak tensor memory: %zu bytes\n", rank_tag,
           raf_executor_peak_bytes(s->executor));
  }
  if (o->print_jit_stats && s->leader)
    raf_llvm_report(s->ex, stderr);
  if (rc == RAF_OK && o->print_comm && s->leader)
    print_comm(s->ex, o->steps - s->first, total_ms);
  if (rc == RAF_OK && o->profile_top > 0 && !o->gradcheck && s->leader &&
      rr_profile_report(s->ex, stderr, o->profile_top,
                        o->steps - s->first) != RAF_OK)
    rc = RAF_ERROR;
  end_job_on_error(s->ctx, &s->d, rc);
  return rc;
}

static void end_session(session *s, const rr_options *o) {
  if (s->leader)
    rr_dist_render(s->ctx, &s->d, stderr);
  for (int k = 0; k < o->ndatasets; k++)
    if (s->ds[k].arg >= 0)
      raf_npy_free(&s->ds[k].all);
  for (int i = 0; s->ex && s->args && i < s->f->nargs; i++)
    raf_exec_free(s->ex, s->args[i]);
  for (int r = 0; s->ex && s->results && r < s->f->nresults; r++)
    raf_exec_free(s->ex, s->results[r]);
  free(s->args);
  free(s->results);
  raf_executor_destroy(s->executor);
  raf_module_destroy(s->m);
  raf_ctx_destroy(s->ctx);
  rr_dist_finish(&s->d);
}

int rr_session(rr_options *o) {
  session *s = calloc(1, sizeof *s);
  if (s)
    s->ctx = raf_ctx_create();
  if (!s || !s->ctx) {
    free(s);
    fprintf(stderr, "raf-run: out of memory\n");
    return 1;
  }
  bool failed = false;
  s->o = o;
  raf_status rc = start_session(s, o);
  if (rc == RAF_OK)
    rc = run_session(s, o, &failed);
  end_session(s, o);
  free(s);
  return rc != RAF_OK || failed ? 1 : 0;
}

const char *rr_openblas_core(void) { return raf_cblas_better_core(); }
