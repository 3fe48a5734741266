/* reduce.h: the parts of raf-reduce, shared by the files of raf-reduce/.
 *
 * raf-reduce shrinks a module while a user's test keeps calling it
 * interesting (exit status 0). Its parts:
 *
 *   oracle.c      runs the test on a candidate text (a temporary file),
 *                 with a per-test time limit and a cache of texts tried;
 *   reductions.c  the ways to make a module smaller, each over a list of
 *                 items ("statements", "arguments", ...) so that the driver
 *                 can remove any range [lo, hi) of them at once;
 *   edit.c        the IR edits the reductions share: a replacement for a
 *                 value that goes away, removing results and arguments,
 *                 re-inferring types after a shape or attribute changes;
 *   main.c        the command line and the driver: delta debugging over
 *                 each reduction's items, in rounds until nothing changes.
 *
 * Candidates are made from text: the current best module is kept printed,
 * each candidate is parsed from it afresh, edited, verified and printed
 * again, so a rejected candidate needs no undo and every kept one is a
 * module that parses, verifies and prints canonically.
 */
#ifndef RAF_REDUCE_H
#define RAF_REDUCE_H

#include "ir/ir.h"

/* ---- The test (oracle.c) ------------------------------------------------- */

typedef struct reduce_oracle {
  const char *test;        /* the program to run */
  const char *const *args; /* extra arguments before the file (--test-arg) */
  int nargs;
  double timeout;          /* seconds per run; 0: none */
  bool verbose;            /* let the test's output through */
  char *path;              /* the candidate file, owned */
  size_t runs, timeouts, cache_hits;
  uint64_t *seen;          /* open-addressing set of text hashes; 0 is empty */
  size_t nseen, capseen;
} reduce_oracle;

/* Creates the candidate file in $TMPDIR (or /tmp). Returns false, with a
 * message in err, when it cannot. */
bool reduce_oracle_init(reduce_oracle *o, char *err, size_t errsize);
/* Removes the candidate file and frees what o owns. */
void reduce_oracle_free(reduce_oracle *o);

typedef enum reduce_verdict {
  REDUCE_BORING,      /* the test exited non-zero, was killed, or timed out */
  REDUCE_INTERESTING, /* it exited 0 */
  REDUCE_SEEN,        /* this text was tried before (and was not kept) */
  REDUCE_FAILED       /* the file could not be written or the test run */
} reduce_verdict;

/* Writes text to the candidate file and runs the test on it. With
 * use_cache, a text tried before is not run again. *status receives the
 * test's exit status (128 + N when killed by signal N) when it ran. */
reduce_verdict reduce_oracle_run(reduce_oracle *o, const char *text,
                                 size_t len, bool use_cache, int *status);

/* ---- Edits (edit.c) ------------------------------------------------------ */

/* The functions of a module that some call statement calls. */
typedef struct reduce_callees {
  raf_func **v;
  size_t n;
} reduce_callees;

reduce_callees reduce_callees_of(raf_module *m); /* caller frees .v */
bool reduce_is_called(const reduce_callees *c, const raf_func *f);

/* A value of type t for f to use in place of one that goes away: an
 * argument of f of that type; else, when f is not called (so its
 * signature is free), a new argument with an `init` attribute (raf-run can
 * make it); else a zero constant at the top of f. NULL when out of memory. */
raf_value *reduce_stand_in(raf_func *f, raf_type *t,
                           const reduce_callees *callees);
/* Points every use of each result of s at a stand-in, then erases s. */
bool reduce_erase_stmt(raf_stmt *s, const reduce_callees *callees);
/* Removes the results of f whose drop[i] is set, from its signature, its
 * return and every call of it (a call left with no results is erased). */
bool reduce_drop_results(raf_func *f, const bool *drop);
/* Removes the arguments of f whose drop[i] is set and that are unused (the
 * caller points their uses elsewhere first), and the matching operands of
 * every call of f. */
void reduce_drop_args(raf_func *f, const bool *drop);
/* Infers every statement's result types again, and each function's result
 * types from its return, until nothing changes (callees before callers).
 * False when a statement no longer has a type: the candidate is invalid. */
bool reduce_reinfer(raf_module *m);
/* Whether some attribute of the module refers to f, or to v. */
bool reduce_func_is_named(raf_module *m, const raf_func *f);
bool reduce_value_is_named(raf_module *m, const raf_value *v);

/* ---- Reductions (reductions.c) ------------------------------------------- */

typedef struct reduce_pass {
  const char *name;
  const char *summary;
  /* The number of items of m this reduction can act on. */
  size_t (*count)(raf_module *m);
  /* Applies the reduction to items [lo, hi) of m (in count's order).
   * False when it could not: the candidate is dropped. */
  bool (*apply)(raf_module *m, size_t lo, size_t hi);
} reduce_pass;

/* The reductions in the order of a round. */
extern const reduce_pass reduce_passes[];
extern const size_t reduce_npasses;

#endif
