/* raf-run: runs a function of a .raf module on the CPU, in the manner of
 * IREE's iree-run-module.
 *
 *   raf-run model.raf --function=NAME --input=x=@x.npy --input=w=1,2,3
 *           [--output=@out.npy] [--expected-output=@ref.npy]
 *           [--steps=N --dataset=x=@train.npy --log=run.jsonl]
 *           [--save=ckpt.safetensors] [--load=ckpt.safetensors]
 *           [--gradcheck [--grad-tol=X]]   (gradcheck.c)
 *           [--print=summary|full|none] [--device=cpu|cuda]
 *   raf-run --device=cuda --list-devices
 *   mpirun -np N raf-run step.raf ...    (a sharded step; dist.c)
 *
 * The module is parsed, verified and dispatched (every statement gets the
 * dialect chosen by --dialects), the arguments are made (given, loaded,
 * initialised from `init`, or sliced from a dataset), and the function is
 * called --steps times; results marked {updates = %arg} are stored back
 * into their argument after each call (train.c). This file parses the
 * command line (options.h) and puts the run together. Every error is a
 * message and a non-zero exit, never a crash. See docs/raf-run.md.
 *
 * The executor runs on one device (--device; runtime/device.h). Arguments
 * are made on the host and copied to it once; params and states stay on
 * it across --steps; dataset batches are copied to it before each step,
 * and the loss (each step), results, outputs and checkpoints are copied
 * back (docs/Device.md).
 */
#include "raf-run/checkpoint.h"
#include "raf-run/dist.h"
#include "runtime/llvm.h"
#include "raf-run/gradcheck.h"
#include "raf-run/profile.h"
#include "raf-run/train.h"
#include "raf-run/values.h"
#include "runtime/device.h"
#include "runtime/dialects.h"
#include "runtime/mpi.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* The options: enum flag_id and FLAGS, from flags.def. */
#define RAF_CLI_FLAGS "raf-run/flags.def"
#include "ir/cli_table.h"

static void usage(FILE *out) {
  fprintf(out, "usage: raf-run [options] FILE.raf|-\n\n");
  raf_cli_usage(out, FLAGS, FLAG_COUNT);
}

/* The version, and the dialects this build can run. */
static void print_version(void) {
  printf("raf-run %s (dialects:", RAF_VERSION);
  for (int i = 0; i < RAF_DIALECT_COUNT; i++)
    if (!raf_dialect_unavailable((raf_dialect)i))
      printf(" %s", raf_dialect_get((raf_dialect)i)->name);
  printf(")\n");
}

static bool split_named(const char *v, rr_named *out) {
  const char *eq = strchr(v, '=');
  if (!eq || eq == v)
    return false;
  char *name = strndup(v, (size_t)(eq - v));
  if (!name)
    return false;
  out->owned = name;
  out->name = name[0] == '%' ? name + 1 : name;
  out->spec = eq + 1;
  return true;
}

static bool parse_number_flag(const char *flag, const char *v, double lo,
                              double *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (*end || errno || d < lo || d != d) {
    fprintf(stderr, "raf-run: %s: '%s' is not a number >= %g\n", flag, v, lo);
    return false;
  }
  *out = d;
  return true;
}

/* Without --dialects: every dialect of the device, highest priority first
 * (the dispatch pass's default; for cuda, cublas and cuda), less those
 * this build cannot run (onednn without oneDNN: raf_dialect_unavailable),
 * written into buf; NULL when it can run them all, leaving the pass its
 * own default. */
static const char *default_dialects(const char *device, char *buf,
                                    size_t size) {
  raf_dialect order[RAF_DIALECT_COUNT];
  int n = 0;
  bool dropped = false;
  for (int i = 0; i < RAF_DIALECT_COUNT; i++) {
    raf_dialect d = (raf_dialect)i;
    if (strcmp(raf_dialect_get(d)->device, device) != 0)
      continue;
    if (raf_dialect_unavailable(d)) {
      dropped = true;
      continue;
    }
    int j = n++; /* insertion by priority; ties keep the table's order */
    for (; j > 0 && raf_dialect_get(order[j - 1])->priority <
                        raf_dialect_get(d)->priority;
         j--)
      order[j] = order[j - 1];
    order[j] = d;
  }
  if (!dropped)
    return NULL;
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : "",
                            raf_dialect_get(order[i])->name);
  return buf;
}

/* Applies option id with its value v (NULL when none is given); returns
 * -1 to go on, else the exit status. */
static int apply_flag(flag_id id, const char *v, rr_options *o) {
  const char *flag = FLAGS[id].name;
  char dashed[64];
  snprintf(dashed, sizeof dashed, "--%s", flag);
  double d;
  switch (id) {
  case FLAG_HELP:
    usage(stdout);
    return 0;
  case FLAG_VERSION:
    print_version();
    return 0;
  case FLAG_FUNCTION: o->function = v[0] == '@' ? v + 1 : v; return -1;
  case FLAG_INPUT:
  case FLAG_DATASET: {
    bool data = id == FLAG_DATASET;
    rr_named *slot = data ? &o->datasets[o->ndatasets] : &o->inputs[o->ninputs];
    if ((data ? o->ndatasets >= MAX_DATASETS : o->ninputs >= MAX_INPUTS) ||
        !split_named(v, slot)) {
      fprintf(stderr, "raf-run: %s needs NAME=VALUE, got '%s'\n", dashed, v);
      return 1;
    }
    if (data)
      o->ndatasets++;
    else
      o->ninputs++;
    return -1;
  }
  case FLAG_OUTPUT:
  case FLAG_EXPECTED_OUTPUT: {
    bool exp = id == FLAG_EXPECTED_OUTPUT;
    if ((exp ? o->nexpected : o->noutputs) >= MAX_RESULT_FLAGS) {
      fprintf(stderr, "raf-run: too many %s flags\n", dashed);
      return 1;
    }
    if (!exp && v[0] != '@') {
      fprintf(stderr, "raf-run: --output needs @FILE.npy, got '%s'\n", v);
      return 1;
    }
    if (exp)
      o->expected[o->nexpected++] = v;
    else
      o->outputs[o->noutputs++] = v + 1;
    return -1;
  }
  case FLAG_PRINT: {
    static const char *const modes[] = {"summary", "full", "none"};
    int k = 0;
    while (k < 3 && strcmp(v, modes[k]) != 0)
      k++;
    if (k == 3) {
      fprintf(stderr, "raf-run: --print: '%s' is not summary, full or none\n",
              v);
      return 1;
    }
    o->print = (rr_print_mode)k;
    o->print_given = true;
    return -1;
  }
  case FLAG_ATOL: return parse_number_flag(dashed, v, 0, &o->tol.atol) ? -1 : 1;
  case FLAG_RTOL: return parse_number_flag(dashed, v, 0, &o->tol.rtol) ? -1 : 1;
  case FLAG_STEPS:
    if (!parse_number_flag(dashed, v, 1, &d) || d != (long)d)
      return 1;
    o->steps = (long)d;
    return -1;
  case FLAG_SEED: {
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (*end || errno || v[0] == '-' || !v[0]) {
      fprintf(stderr, "raf-run: --seed: '%s' is not a number\n", v);
      return 1;
    }
    o->seed = s;
    return -1;
  }
  case FLAG_THREADS:
    if (!parse_number_flag(dashed, v, 1, &d) || d > 1024)
      return 1;
    o->threads = (int)d;
    return -1;
  case FLAG_LOG: o->log = v; return -1;
  case FLAG_SAVE: o->save = v; return -1;
  case FLAG_LOAD: o->load = v; return -1;
  case FLAG_DIALECTS: o->dialects = v; return -1;
  case FLAG_DEVICE:
    if (!raf_device_kind_from_name(v, &o->device)) {
      fprintf(stderr, "raf-run: --device: '%s' is not cpu or cuda\n", v);
      return 1;
    }
    return -1;
  case FLAG_LIST_DEVICES: o->list_devices = true; return -1;
  case FLAG_CHECK_NUMERICS: o->check_numerics = true; return -1;
  case FLAG_CUDA_SYNC_EACH: o->cuda_sync = true; return -1;
  case FLAG_PRINT_MEMORY: o->print_memory = true; return -1;
  case FLAG_PROFILE:
    if (!v) {
      o->profile_top = 20;
      return -1;
    }
    if (!parse_number_flag(dashed, v, 1, &d) || d > 1e6)
      return 1;
    o->profile_top = (int)d;
    return -1;
  case FLAG_PRINT_JIT_STATS: o->print_jit_stats = true; return -1;
  case FLAG_PRINT_COMM: o->print_comm = true; return -1;
  case FLAG_GRADCHECK: o->gradcheck = true; return -1;
  case FLAG_GRAD_TOL:
    return parse_number_flag(dashed, v, 0, &o->grad.tol) ? -1 : 1;
  case FLAG_GRAD_EPS:
    return parse_number_flag(dashed, v, 1e-300, &o->grad.eps) ? -1 : 1;
  case FLAG_GRAD_SAMPLES:
    if (!parse_number_flag(dashed, v, 1, &d) || d != (long)d)
      return 1;
    o->grad.samples = (long)d;
    return -1;
  case FLAG_COUNT: break;
  }
  return -1;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, rr_options *o) {
  o->tol = (rr_tolerance){-1, -1};
  o->steps = 1;
  o->grad = (rr_gradcheck_options){1e-4, 1e-5, 64, NULL, 0, RAF_DEVICE_HOST};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int id = strcmp(a, "-h") == 0 ? FLAG_HELP
                                  : raf_cli_find(FLAGS, FLAG_COUNT, a, &v);
    if (id == FLAG_HELP)
      v = NULL;
    if (id >= 0) {
      if (!raf_cli_value_ok("raf-run", &FLAGS[id], v))
        return 1;
      int rc = apply_flag((flag_id)id, v, o);
      if (rc >= 0)
        return rc;
    } else if (a[0] == '-' && a[1]) {
      raf_cli_unknown("raf-run", a, FLAGS, FLAG_COUNT, NULL, 0);
      return 1;
    } else if (o->input_file) {
      fprintf(stderr, "raf-run: more than one input file ('%s', '%s')\n",
              o->input_file, a);
      return 1;
    } else {
      o->input_file = a;
    }
  }
  if (o->list_devices)
    return -1; /* no module */
  if (!o->input_file) {
    usage(stderr);
    return 1;
  }
  if (o->gradcheck && (o->steps > 1 || o->noutputs || o->nexpected ||
                       o->save || o->log || o->print_given)) {
    fprintf(stderr, "raf-run: --gradcheck runs no steps: it takes none of "
            "--steps, --output, --expected-output, --save, --log, --print\n");
    return 1;
  }
  if (!o->dialects)
    o->dialects = default_dialects(raf_device_kind_name(o->device),
                                   o->default_dialects,
                                   sizeof o->default_dialects);
  o->grad.dialects = o->dialects;
  o->grad.threads = o->threads;
  o->grad.device = o->device;
  return -1;
}

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
  raf_pipeline *pl = m ? raf_pipeline_create(ctx) : NULL;
  char opts[600];
  snprintf(opts, sizeof opts, "device=%s%s%s", raf_device_kind_name(o->device),
           o->dialects ? " dialects=" : "", o->dialects ? o->dialects : "");
  if (m && (!pl || raf_pipeline_add(pl, "dispatch", opts) != RAF_OK ||
            raf_pipeline_run(pl, m, NULL) != RAF_OK)) {
    raf_module_destroy(m);
    m = NULL;
  }
  raf_pipeline_destroy(pl);
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

/* --save: the leader writes every param and state whole, a sharded one
 * gathered from the ranks' parts first (every rank takes part). */
static raf_status save_checkpoint(raf_ctx *ctx, raf_exec *ex, raf_module *m,
                                  raf_func *f, const rr_options *o,
                                  const rr_dist *d, raf_tensor **args) {
  if (d->world <= 1)
    return rr_checkpoint_save(ctx, ex, o->save, f, args);
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
    rc = rr_checkpoint_save(ctx, ex, o->save, f, whole);
  for (int i = 0; whole && i < f->nargs; i++)
    if (whole[i] != args[i])
      rr_host_tensor_free(whole[i]);
  free(whole);
  return rc;
}

/* rank 0's --print-comm line: what the collectives sent and how long the
 * ranks waited in them, per step. The nccl dialect's run on the GPU's
 * stream, untimed by the host: --profile times them. */
static void print_comm(const raf_exec *ex, const rr_options *o, double total_ms) {
  raf_mpi_stats st = raf_comm_stats_of(ex);
  double steps = (double)o->steps, ms = (double)st.ns * 1e-6;
  fprintf(stderr,
          "comm: %.3f MB (%.0f bytes) sent per rank per step, %.0f "
          "collectives per step, ",
          (double)st.bytes / 1e6 / steps, (double)st.bytes / steps,
          (double)st.calls / steps);
  if (st.ns > 0 || st.calls == 0)
    fprintf(stderr, "%.2f ms in collectives per step (%.1f%% of the step)\n",
            ms / steps, total_ms > 0 ? 100 * ms / total_ms : 0.0);
  else
    fprintf(stderr, "timed on the device by --profile\n");
}

/* A rank that fails after the ranks started working together reports and
 * ends the whole job (MPI_Abort), so that none waits in a collective. */
static void end_job_on_error(const raf_ctx *ctx, const rr_dist *d,
                             raf_status rc) {
  if (rc == RAF_OK || d->world <= 1)
    return;
  rr_dist_render(ctx, d, stderr);
  raf_mpi_abort(1);
}

/* The strings the flags' values were copied into. */
static void free_options(rr_options *o) {
  for (int k = 0; k < o->ninputs; k++)
    free(o->inputs[k].owned);
  for (int k = 0; k < o->ndatasets; k++)
    free(o->datasets[k].owned);
}

/* --list-devices: one line per device of --device's kind; exits 1 when
 * there is none (or no driver, or no support in this build), saying why,
 * so that tests can ask whether a GPU is there. */
static int list_devices(const rr_options *o) {
  raf_ctx *ctx = raf_ctx_create();
  if (!ctx) {
    fprintf(stderr, "raf-run: out of memory\n");
    return 1;
  }
  int count = 0;
  raf_status rc = raf_device_count(ctx, o->device, &count);
  if (rc == RAF_OK && count == 0) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "no %s device",
                    raf_device_kind_name(o->device));
    rc = RAF_ERROR;
  }
  for (int i = 0; rc == RAF_OK && i < count; i++) {
    raf_device *dev;
    if ((rc = raf_device_open(ctx, o->device, i, &dev)) == RAF_OK)
      printf("%s\n", raf_device_describe(dev));
    raf_device_destroy(dev);
  }
  raf_diag_render(ctx, stderr);
  raf_ctx_destroy(ctx);
  return rc == RAF_OK ? 0 : 1;
}

/* Opens the device of --device's kind into *out: device 0, or under
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
  if (why)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "--device=%s: raf-run was %s", kind, why);
  else {
    int ordinal = rr_env_local_rank(), count = 1;
    rc = ordinal > 0 ? raf_device_count(scratch, o->device, &count) : RAF_OK;
    if (rc == RAF_OK)
      rc = raf_device_open(scratch, o->device,
                           count > 0 ? ordinal % count : 0, out);
  }
  if (rc == RAF_OK) /* scratch goes; the device's later errors are ctx's */
    raf_device_set_ctx(*out, ctx);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "--device=%s", kind);
  rr_relay_diags(ctx, scratch, prefix);
  return rc;
}

int main(int argc, char **argv) {
  /* Where OpenBLAS fell back to its generic kernels on a CPU it did not
   * recognise, start again telling it the CPU's (raf_cblas_better_core);
   * if exec fails, go on with the generic ones. */
  const char *core = raf_cblas_better_core();
  if (core && setenv("OPENBLAS_CORETYPE", core, 1) == 0)
    execv("/proc/self/exe", argv);
  rr_options o;
  memset(&o, 0, sizeof o);
  int status = parse_args(argc, argv, &o);
  if (status < 0 && o.list_devices)
    status = list_devices(&o);
  raf_ctx *ctx = status < 0 ? raf_ctx_create() : NULL;
  if (status < 0 && !ctx) {
    fprintf(stderr, "raf-run: out of memory\n");
    status = 1;
  }
  if (status >= 0) {
    free_options(&o);
    return status;
  }
  /* The device first: a machine without it fails in one line, before any
   * work (and before dispatch reports what has no kernel for it). */
  raf_device *dev = NULL;
  if (open_device(ctx, &o, &dev) != RAF_OK) {
    if (rr_env_rank() == 0)
      raf_diag_render(ctx, stderr);
    raf_ctx_destroy(ctx);
    free_options(&o);
    return 1;
  }
  /* Until the arguments are made every rank fails alike, and rank 0 alone
   * says why. */
  raf_module *m = load_module(ctx, &o);
  raf_func *f = m ? pick_function(ctx, m, o.function) : NULL;
  rr_dist d = {1, 0};
  raf_status rc = f ? rr_dist_start(ctx, f, &d) : RAF_ERROR;
  if (rc == RAF_OK && d.world > 1 && o.gradcheck) {
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "--gradcheck runs in one process, but @%s is sharded "
                    "over %d ranks", f->name, d.world);
    rc = RAF_ERROR;
  }
  if (d.world > 1 && !o.threads) { /* the ranks on this machine share it */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = cpus > rr_env_local_ranks() ? (int)(cpus / rr_env_local_ranks()) : 1;
  }
  /* --cuda-sync-each as RAF_CUDA_SYNC=1, so that every executor has it
   * (--gradcheck's too); raf_exec_options.sync_each. */
  if (o.cuda_sync)
    setenv("RAF_CUDA_SYNC", "1", 1);
  raf_exec_options eo = {.device = dev,
                         .threads = o.threads,
                         .check_numerics = o.check_numerics,
                         .profile = o.profile_top > 0,
                         .sync_each = o.cuda_sync};
  raf_exec *ex = NULL;
  if (rc == RAF_OK)
    ex = raf_exec_create(ctx, m, &eo); /* dev is the executor's now */
  else
    raf_device_destroy(dev);
  raf_tensor **args = NULL, **results = NULL;
  rr_dataset ds[MAX_DATASETS];
  memset(ds, 0, sizeof ds);
  bool failed = false, leader = d.rank == 0;
  char rank_tag[32];
  snprintf(rank_tag, sizeof rank_tag, "rank %d: ", d.rank);
  if (!ex)
    rc = RAF_ERROR;
  if (rc == RAF_OK && f->nargs > 1024) {
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR, "more than 1024 arguments");
    rc = RAF_ERROR;
  }
  bool setup_failed = rc != RAF_OK;
  if (rc == RAF_OK) {
    args = calloc((size_t)f->nargs + 1, sizeof *args);
    results = calloc((size_t)f->nresults + 1, sizeof *results);
    rc = args && results ? rr_make_args(ctx, ex, m, f, &o, &d, args, ds)
                         : RAF_ERROR;
  }
  /* A rank may fail to make its arguments alone (a file it cannot read):
   * the ranks agree, and each that failed says why. */
  if (!setup_failed && d.world > 1 && raf_mpi_any(rc != RAF_OK)) {
    if (rc == RAF_OK)
      raf_diag_clear(ctx);
    setup_failed = true;
    leader = rc != RAF_OK;
    rc = RAF_ERROR;
  } else if (rc != RAF_OK) {
    setup_failed = true;
    leader = rr_env_rank() == 0;
  }
  double total_ms = 0;
  if (setup_failed) {
    /* reported below */
  } else if (o.gradcheck) {
    for (int k = 0; k < o.ndatasets && rc == RAF_OK; k++)
      rc = rr_feed(ex, &ds[k], 0, args[ds[k].arg]);
    if (rc == RAF_OK)
      rc = rr_gradcheck(ctx, ex, m, f, args, &o.grad, stdout, &failed);
  } else {
    rc = rr_run_steps(ctx, ex, f, &o, leader, args, ds, results, &total_ms);
    if (rc == RAF_OK && leader)
      rc = rr_report_results(ctx, f, &o, ex, results, &failed);
  }
  /* From here a rank that fails may leave the others waiting in a
   * collective: it ends the job. */
  if (!setup_failed)
    end_job_on_error(ctx, &d, rc);
  if (rc == RAF_OK && o.save)
    rc = save_checkpoint(ctx, ex, m, f, &o, &d, args);
  if (rc == RAF_OK && o.print_memory)
    printf("%speak tensor memory: %zu bytes\n", d.world > 1 ? rank_tag : "",
           raf_exec_peak_bytes(ex));
  if (ex && o.print_jit_stats && leader)
    raf_llvm_report(ex, stderr);
  if (rc == RAF_OK && o.print_comm && leader)
    print_comm(ex, &o, total_ms);
  if (rc == RAF_OK && o.profile_top > 0 && !o.gradcheck && leader &&
      rr_profile_report(ex, stderr, o.profile_top) != RAF_OK)
    rc = RAF_ERROR;
  if (!setup_failed)
    end_job_on_error(ctx, &d, rc);
  if (leader)
    rr_dist_render(ctx, &d, stderr);
  for (int k = 0; k < o.ndatasets; k++)
    if (ds[k].arg >= 0)
      raf_npy_free(&ds[k].all);
  for (int i = 0; f && ex && args && i < f->nargs; i++)
    raf_exec_free(ex, args[i]);
  for (int r = 0; f && ex && results && r < f->nresults; r++)
    raf_exec_free(ex, results[r]);
  free(args);
  free(results);
  free_options(&o);
  raf_exec_destroy(ex);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  rr_dist_finish(&d);
  return rc != RAF_OK || failed ? 1 : 0;
}
