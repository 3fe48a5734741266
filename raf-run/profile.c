/* profile.c: raf-run --profile.
 *
 * The executor times every kernel run (runtime/exec.c); this file turns the
 * per-statement sums into the two tables a person tuning a training step
 * asks for first, in the manner of PyTorch's profiler's key_averages():
 *
 *   by op      where the time went by kind of work: an op in a dialect
 *              (matmul on cblas, layer_norm_grad on cpu-ref), fused calls
 *              grouped by the dialect that compiled them;
 *   top N      the costliest statements, with their result types and
 *              source locations, so a slow one can be found in the .raf
 *              file; a matmul's line also gives its GFLOP/s.
 *
 * Times are wall time inside the kernel (all threads of it at once), so
 * the shares add up to the kernel time of the run, not to CPU time.
 */
#include "raf-run/profile.h"

#include "ir/ir.h"
#include "runtime/mpi.h"

#include <stdlib.h>
#include <string.h>

typedef struct group {
  const char *op, *dialect;
  int64_t ns, runs;
} group;

static const char *dialect_of(const raf_stmt *s) {
  const char *d = raf_stmt_dialect_name(s);
  return d ? d : "-";
}

/* FLOPs of one run of a matmul (2 per multiply-add); 0 for other ops. */
static double flops_of(const raf_stmt *s) {
  if (s->op != RAF_OP_MATMUL)
    return 0;
  const raf_type *a = s->operands[0].value->type;
  int64_t k = a->dims[a->rank - (raf_stmt_attr_bool(s, "transpose_a") ? 2 : 1)];
  return 2.0 * (double)s->results[0]->type->numel * (double)k;
}

static int by_time_desc(const void *x, const void *y) {
  int64_t a = ((const raf_profile_entry *)x)->ns;
  int64_t b = ((const raf_profile_entry *)y)->ns;
  return (a < b) - (a > b);
}

static int groups_by_time_desc(const void *x, const void *y) {
  int64_t a = ((const group *)x)->ns, b = ((const group *)y)->ns;
  return (a < b) - (a > b);
}

static void print_row(FILE *out, int64_t ns, int64_t total, int64_t runs) {
  fprintf(out, "  %10.3f  %5.1f%%  %7lld  ", (double)ns / 1e6,
          total > 0 ? 100.0 * (double)ns / (double)total : 0.0,
          (long long)runs);
}

raf_status rr_profile_report(const raf_exec *ex, FILE *out, int top,
                             long steps) {
  raf_profile_entry *e;
  int n = raf_exec_profile(ex, &e);
  if (n < 0)
    return RAF_ERROR;
  group *g = calloc((size_t)n + 1, sizeof *g);
  if (!g) {
    free(e);
    return RAF_ERROR;
  }
  int ng = 0;
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const char *op = raf_op_table[e[i].stmt->op].name;
    const char *d = dialect_of(e[i].stmt);
    int k = 0;
    while (k < ng && !(strcmp(g[k].op, op) == 0 && strcmp(g[k].dialect, d) == 0))
      k++;
    if (k == ng)
      g[ng++] = (group){op, d, 0, 0};
    g[k].ns += e[i].ns;
    g[k].runs += e[i].runs;
    total += e[i].ns;
  }
  qsort(g, (size_t)ng, sizeof *g, groups_by_time_desc);
  qsort(e, (size_t)n, sizeof *e, by_time_desc);

  fprintf(out, "profile: %.3f ms in kernels, %d statements\n",
          (double)total / 1e6, n);
  fprintf(out, "  by op:\n  %10s  %6s  %7s  %s\n", "ms", "share", "runs",
          "op (dialect)");
  for (int k = 0; k < ng; k++) {
    print_row(out, g[k].ns, total, g[k].runs);
    fprintf(out, "%s (%s)\n", g[k].op, g[k].dialect);
  }
  if (top > n)
    top = n;
  fprintf(out, "  top %d statements:\n  %10s  %6s  %7s  %s\n", top, "ms",
          "share", "runs", "op (dialect) : result type, location [GFLOP/s]");
  for (int i = 0; i < top; i++) {
    const raf_stmt *s = e[i].stmt;
    char ty[128];
    raf_type_str(s->results[0]->type, ty, sizeof ty);
    print_row(out, e[i].ns, total, e[i].runs);
    if (s->op == RAF_OP_CALL)
      fprintf(out, "call @%s", s->callee->name);
    else
      fputs(raf_op_table[s->op].name, out);
    fprintf(out, " (%s) : %s%s, %s:%u:%u", dialect_of(s), ty,
            s->nresults > 1 ? ", ..." : "", s->loc.file ? s->loc.file : "-",
            s->loc.line, s->loc.col);
    double f = flops_of(s);
    if (f > 0 && e[i].ns > 0)
      fprintf(out, " [%.1f]", f * (double)e[i].runs / (double)e[i].ns);
    fputc('\n', out);
  }
  /* The collectives' time is not kernel time: they run on the mpi
   * dialect's communication thread (the nccl dialect's async ones on the
   * GPU's communication stream), and the step waits only for what
   * compute did not hide (the wait statements above). */
  raf_mpi_stats c = raf_comm_stats_of(ex);
  if (c.calls > 0 && c.ns > 0 && steps > 0)
    fprintf(out,
            "  collectives: %.3f ms per step on the communication thread, "
            "%.3f ms of it waited for (%.1f%% hidden behind compute)\n",
            (double)c.ns / 1e6 / (double)steps,
            (double)c.waited_ns / 1e6 / (double)steps,
            100.0 * (double)(c.ns - c.waited_ns) / (double)c.ns);
  free(g);
  free(e);
  return RAF_OK;
}
