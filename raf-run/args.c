/* args.c: raf-run's command line, read through the flag table of
 * flags.def (ir/cli_table.h makes its usage text, its "did you mean" and
 * its parser), into rr_options (options.h); and the two answers that need
 * no module: --version and --list-devices.
 */
#include "raf-run/args.h"

#include "runtime/device.h"
#include "runtime/dialects.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
  case FLAG_COMM_TIMEOUT:
    if (!parse_number_flag(dashed, v, 0, &o->comm_timeout))
      return 1;
    if (o->comm_timeout <= 0) {
      fprintf(stderr, "raf-run: %s: '%s' is not a number > 0\n", dashed, v);
      return 1;
    }
    return -1;
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
  case FLAG_SAVE_EVERY:
    if (!parse_number_flag(dashed, v, 1, &d) || d != (long)d)
      return 1;
    o->save_every = (long)d;
    return -1;
  case FLAG_RESUME: o->resume = true; return -1;
  case FLAG_DIALECTS: o->dialects = v; return -1;
  case FLAG_DEVICE:
    if (!raf_device_kind_from_name(v, &o->device)) {
      fprintf(stderr, "raf-run: --device: '%s' is not cpu or cuda\n", v);
      return 1;
    }
    o->device_given = true;
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

int rr_parse_args(int argc, char **argv, rr_options *o) {
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
  /* Both name no file of their own: they are --save's. */
  if ((o->save_every || o->resume) && !o->save) {
    fprintf(stderr, "raf-run: %s needs --save=FILE.safetensors, the "
            "checkpoint it %s\n", o->save_every ? "--save-every" : "--resume",
            o->save_every ? "writes" : "goes on from");
    return 1;
  }
  o->grad.threads = o->threads;
  return -1;
}

void rr_free_options(rr_options *o) {
  for (int k = 0; k < o->ninputs; k++)
    free(o->inputs[k].owned);
  for (int k = 0; k < o->ndatasets; k++)
    free(o->datasets[k].owned);
}

int rr_list_devices(const rr_options *o) {
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

