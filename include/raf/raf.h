/* raf.h: the public C API of raf, a compiler for deep-learning training.
 *
 * The model is the LLVM C API: opaque handles, and each function says who
 * owns what it returns. A raf_ctx owns diagnostics and source buffers and
 * must outlive every module parsed with it. A raf_module owns all of its IR
 * (functions, statements, values, types) in one arena; destroying the module
 * frees it all at once.
 *
 * Errors are values: functions that can fail return RAF_OK or RAF_ERROR and
 * append located diagnostics to the context. Nothing here exits, aborts or
 * writes to a stream it was not given.
 */
#ifndef RAF_RAF_H
#define RAF_RAF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RAF_VERSION "0.1.0"

typedef enum raf_status { RAF_OK = 0, RAF_ERROR = 1 } raf_status;

typedef struct raf_ctx raf_ctx;
typedef struct raf_module raf_module;
typedef struct raf_func raf_func;
typedef struct raf_stmt raf_stmt;
typedef struct raf_value raf_value;
typedef struct raf_type raf_type;

/* ---- Context and diagnostics ------------------------------------------- */

typedef enum raf_severity {
  RAF_SEV_ERROR,
  RAF_SEV_WARNING,
  RAF_SEV_NOTE
} raf_severity;

/* A source position. file is owned by the context. line and col are 1-based;
 * line 0 means "no location". */
typedef struct raf_loc {
  const char *file;
  uint32_t line, col;
} raf_loc;

/* Creates a context; the caller owns it and frees it with raf_ctx_destroy. */
raf_ctx *raf_ctx_create(void);
void raf_ctx_destroy(raf_ctx *ctx);

/* Number of diagnostics reported so far, and of errors among them. */
size_t raf_diag_count(const raf_ctx *ctx);
size_t raf_error_count(const raf_ctx *ctx);
/* The i-th diagnostic. The message is owned by the context. */
void raf_diag_get(const raf_ctx *ctx, size_t i, raf_loc *loc,
                  raf_severity *sev, const char **message);
/* Forgets all diagnostics (sources stay registered). */
void raf_diag_clear(raf_ctx *ctx);
/* Writes every diagnostic, GCC style, with the source line and a caret when
 * the source is registered. */
void raf_diag_render(const raf_ctx *ctx, FILE *out);
/* Reports a diagnostic; fmt is printf-style. */
void raf_diag_report(raf_ctx *ctx, raf_loc loc, raf_severity sev,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The name among names[0..n) that word (len characters, not necessarily
 * NUL-terminated) most likely misspells: the closest by edit distance (an
 * adjacent swap counting as one edit) when at most a third of word's
 * characters, and at least one, are wrong; else NULL. Ties go to the
 * earlier name. The result is one of names. Every "did you mean" of raf
 * comes from here. */
const char *raf_suggest(const char *word, size_t len,
                        const char *const *names, size_t n);

/* Reads the rest of f into a new buffer, which the caller frees; *len gets
 * its size. Returns NULL on a read error or when out of memory. */
char *raf_read_stream(FILE *f, size_t *len);

/* ---- Parsing, verifying, printing --------------------------------------- */

/* Parses text (len bytes, need not be NUL-terminated) as a module. name is the
 * file name used in locations; first_line is the line number of the text's
 * first line (1 normally; larger for a chunk of a split file). The context
 * keeps a copy of the text to show source lines in diagnostics. Returns a new
 * module owned by the caller, or NULL when there were errors (all reported).
 * Types left out in the input are inferred; the module is not verified. */
raf_module *raf_parse_module(raf_ctx *ctx, const char *name, const char *text,
                             size_t len, uint32_t first_line);

/* Checks every rule of the language (see docs/LangRef.md) and reports each
 * violation. Returns RAF_OK when the module is valid. */
raf_status raf_verify_module(raf_ctx *ctx, raf_module *m);

enum {
  RAF_PRINT_LOC = 1 /* print loc("file":line:col) after each statement */
};
/* Prints the module canonically: parsing the output and printing again gives
 * the same bytes. */
void raf_print_module(const raf_module *m, FILE *out, unsigned flags);
/* Writes a Graphviz picture of each function's dataflow. */
void raf_print_dot(const raf_module *m, FILE *out);

void raf_module_destroy(raf_module *m);
raf_ctx *raf_module_ctx(const raf_module *m);
size_t raf_module_stmt_count(const raf_module *m);

/* Tensor memory of a function, in bytes (docs/Memory.md), and its cost. */
typedef struct raf_memory_stats {
  const char *func; /* its name, without '@'; owned by the module */
  bool planned;     /* it carries a memory plan ({arena}, plan-memory) */
  int64_t args;     /* its arguments */
  int64_t results;  /* planned: its results with buffers of their own
                     * (not in its arena, not donated to an argument) */
  int64_t arena;    /* planned: the arena of a call */
  int64_t calls;    /* planned: the most that one of the calls it runs
                     * statement by statement adds (its arena, nested) */
  int64_t peak;     /* planned: the most a call of it holds at once: args
                     * + arena + the most that its own results made so far
                     * and a call's arenas add together */
  int64_t unplanned; /* the sum over all its values (and its calls'), each
                      * in a buffer of its own */
  int64_t live;     /* the most live at once when each value has a buffer
                     * freed after its last use (the unplanned executor) */
  int64_t saved;    /* saved for backward: the bytes of the values its
                     * forward makes and its backward reads (docs/Memory.md);
                     * -1 when it has no backward of its own */
  int nsaved;       /* and their number */
  double flops;     /* the cost model's floating-point operations of one
                     * call (ir/cost.h; calls count their callees') */
  double moved;     /* and the bytes its statements read and write */
} raf_memory_stats;
/* Fills out[i] for the first cap functions of m, in order; returns the
 * number of functions. m must be verified. */
size_t raf_module_memory_stats(raf_module *m, raf_memory_stats *out,
                               size_t cap);

/* ---- Passes -------------------------------------------------------------- */

typedef struct raf_pass_info {
  const char *name;
  const char *summary;
  const char *after;  /* "a,b": passes it must follow in a pipeline, or "" */
  const char *before; /* "a,b": passes it must precede in a pipeline, or "" */
  /* "a,b": passes that must have run before it (earlier in the pipeline,
   * or their mark on the module; else the manager runs them first), or "" */
  const char *required;
} raf_pass_info;

/* The registered passes, in registry order; *count receives their number. */
const raf_pass_info *raf_pass_list(size_t *count);
/* Whether name is a registered pass. When it is not and near is not NULL,
 * *near receives the pass that name most likely misspells (static
 * storage), or NULL. */
bool raf_pass_lookup(const char *name, const char **near);

typedef struct raf_pipeline raf_pipeline;

/* Instrumentation of a pipeline run. */
typedef struct raf_pipeline_options {
  bool verify_each;          /* verify after every pass (default true) */
  bool time_passes;          /* report each pass's wall time to `report` */
  int bisect_limit;          /* run only passes 1..N; -1 runs all */
  const char *print_before;  /* pass name, or NULL */
  const char *print_after;   /* pass name, or NULL */
  bool print_after_all;
  unsigned print_flags;      /* RAF_PRINT_* for the IR dumps */
  FILE *report;              /* where timing, bisect and IR dumps go */
} raf_pipeline_options;

void raf_pipeline_options_init(raf_pipeline_options *o);

/* Creates an empty pipeline; the caller owns it. */
raf_pipeline *raf_pipeline_create(raf_ctx *ctx);
void raf_pipeline_destroy(raf_pipeline *p);
/* Appends a pass by name, with MLIR-style options "key=value key=value"
 * (options may be NULL). Reports an unknown pass or bad option as an error. */
raf_status raf_pipeline_add(raf_pipeline *p, const char *name,
                            const char *options);
/* Appends every pass of a pipeline string "a,b{k=v},c". */
raf_status raf_pipeline_parse(raf_pipeline *p, const char *text);
size_t raf_pipeline_length(const raf_pipeline *p);
/* Checks the order of p against the `after` and `before` constraints of
 * the registry (passes/passes.def); reports the first pair out of order,
 * naming both passes, and returns RAF_ERROR. raf_pipeline_run checks it
 * before running anything. */
raf_status raf_pipeline_check(raf_pipeline *p);
/* Runs the passes in order on m. A pass whose `required` names a pass
 * that neither runs earlier in p nor has left its mark on m gets that pass
 * run first, with its default options, and a note that says so (the
 * dispatch that plan-memory requires). Stops at the first failing pass,
 * and refuses (before running it) a pass whose `before` names a pass that
 * has left its mark on m (a planned function, for every pass that must run
 * before plan-memory). */
raf_status raf_pipeline_run(raf_pipeline *p, raf_module *m,
                            const raf_pipeline_options *o);

#ifdef __cplusplus
}
#endif
#endif
