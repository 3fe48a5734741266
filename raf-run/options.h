/* options.h: raf-run's command line, parsed (main.c parses it; train.c
 * makes the arguments and runs the steps from it). */
#ifndef RAF_RUN_OPTIONS_H
#define RAF_RUN_OPTIONS_H

#include "raf-run/gradcheck.h"
#include "raf-run/values.h"
#include "runtime/device.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct rr_named {
  const char *name, *spec; /* "NAME=SPEC" split at the first '=' */
  char *owned;             /* the copy name points into */
} rr_named;

/* How many of each repeated flag: enough for a training step's hundreds of
 * params and results (GPT-2 124M returns 446). */
enum { MAX_INPUTS = 4096, MAX_DATASETS = 256, MAX_RESULT_FLAGS = 4096 };

typedef struct rr_options {
  const char *input_file;
  const char *function;
  rr_named inputs[MAX_INPUTS], datasets[MAX_DATASETS];
  int ninputs, ndatasets;
  const char *outputs[MAX_RESULT_FLAGS], *expected[MAX_RESULT_FLAGS];
  int noutputs, nexpected;
  rr_tolerance tol;
  double comm_timeout; /* --comm-timeout, 0: the mpi dialect's default */
  long steps;
  const char *log, *save, *load;
  long save_every; /* --save-every=N: 0 when not given */
  bool resume;     /* --resume: go on from --save's file when it exists */
  const char *dialects; /* --dialects, or NULL: the device's (run.h) */
  bool check_numerics, print_memory, print_jit_stats, print_comm;
  rr_print_mode print;
  bool print_given; /* --print: print results even with --output */
  int profile_top; /* --profile[=N]: 0 off */
  bool gradcheck;
  rr_gradcheck_options grad;
  uint64_t seed;
  int threads;
  raf_device_kind device; /* --device, else the module's marks' (session.c) */
  bool device_given;
  bool list_devices;
  bool cuda_sync; /* --cuda-sync-each */
} rr_options;

#endif
