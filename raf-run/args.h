/* args.h: raf-run's command line (args.c). */
#ifndef RAF_RUN_ARGS_H
#define RAF_RUN_ARGS_H

#include "raf-run/options.h"

/* Reads argv into *o (zeroed by the caller), answering --help and
 * --version; returns -1 to go on, else the exit status (a bad flag is a
 * message on stderr and 1). */
int rr_parse_args(int argc, char **argv, rr_options *o);
/* Frees the strings the flags' values were copied into. */
void rr_free_options(rr_options *o);
/* --list-devices: one line per device of --device's kind; returns 1 when
 * there is none (or no driver, or no support in this build), saying why,
 * so that tests can ask whether a GPU is there. */
int rr_list_devices(const rr_options *o);

#endif
