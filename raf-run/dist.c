/* dist.c: raf-run's side of data-parallel runs: which rank this process
 * is, and how whole tensors on the command line become a rank's parts and
 * back (dist.h). The collectives themselves are the mpi dialect's
 * (runtime/mpi.c).
 *
 * Why the parts are byte runs: a data argument's local batch is rows
 * [r*b, (r+1)*b) of the global one, and a sharded argument's part is
 * elements [r*p, (r+1)*p) of the flattened tensor padded with zeros to
 * N*p; both are the rank-th run of the part's size in the whole tensor's
 * bytes, zero past its end.
 */
#include "raf-run/dist.h"

#include "runtime/mpi.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The first of the environment variables names that is set, as a
 * positive number, or fallback. */
static int env_number(const char *const *names, int fallback) {
  for (int i = 0; names[i]; i++) {
    const char *v = getenv(names[i]);
    if (v && *v)
      return atoi(v);
  }
  return fallback;
}

static int env_world(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                      "PMIX_SIZE", NULL};
  return env_number(names, 1);
}

int rr_env_rank(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                      "PMIX_RANK", NULL};
  return env_number(names, 0);
}

int rr_env_local_rank(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                      "MPI_LOCALRANKID", NULL};
  return env_number(names, 0);
}

int rr_env_local_ranks(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_SIZE",
                                      "MPI_LOCALNRANKS", NULL};
  int n = env_number(names, 1);
  return n > 0 ? n : 1;
}

static int64_t func_world(const raf_func *f) {
  const raf_attr *a = raf_attrs_find(&f->attrs, "world");
  return a && a->kind == RAF_ATTR_INT ? a->val.u.i : 0;
}

raf_status rr_dist_start(raf_ctx *ctx, const raf_func *f, rr_dist *d) {
  *d = (rr_dist){1, 0};
  int64_t world = func_world(f);
  int job = env_world();
  if (world <= 1) {
    if (job <= 1)
      return RAF_OK;
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "mpirun started %d processes, but @%s is not sharded "
                    "(it has no `world` attribute): shard it with raf-opt "
                    "-p '...,optimizer,shard{world=%d},...', or run one "
                    "process",
                    job, f->name, job);
    return RAF_ERROR;
  }
  if (raf_dialect_unavailable(RAF_DIALECT_MPI)) {
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "@%s is sharded over world = %lld ranks, but %s", f->name,
                    (long long)world, raf_dialect_unavailable(RAF_DIALECT_MPI));
    return RAF_ERROR;
  }
  if (job <= 1) {
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "@%s is sharded over world = %lld ranks: run one process "
                    "per rank, as `mpirun -np %lld raf-run ...` (as root, "
                    "with --allow-run-as-root; on fewer cores than ranks, "
                    "with --oversubscribe)",
                    f->name, (long long)world, (long long)world);
    return RAF_ERROR;
  }
  if (raf_mpi_start(ctx, &d->rank, &d->world) != RAF_OK)
    return RAF_ERROR;
  if (d->world != world) {
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "@%s is sharded over world = %lld ranks, but this MPI job "
                    "has %d: run it as `mpirun -np %lld raf-run ...`",
                    f->name, (long long)world, d->world, (long long)world);
    return RAF_ERROR;
  }
  return RAF_OK;
}

/* What a rank runs, as rr_dist_check_same compares it: fixed-size, so
 * that raf_mpi_gather moves it as bytes. */
typedef struct run_id {
  uint64_t module, function;
  int64_t steps;
  char version[32];
} run_id;

/* FNV-1a, 64 bits: cheap, and any difference of the texts shows. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
  return h;
}

static raf_status identify(raf_ctx *ctx, const raf_module *m,
                           const raf_func *f, long steps, run_id *id) {
  memset(id, 0, sizeof *id);
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  raf_print_module(m, mem, 0);
  fclose(mem);
  uint64_t basis = 0xcbf29ce484222325ULL;
  id->module = fnv1a(basis, text, len);
  free(text);
  id->function = fnv1a(basis, f->name, strlen(f->name));
  id->steps = steps;
  snprintf(id->version, sizeof id->version, "%s", RAF_VERSION);
  return RAF_OK;
}

/* Rank 0's reports of the ranks whose id differs from its own; whether
 * any did. The version first: another raf may print one module otherwise. */
static bool report_differences(raf_ctx *ctx, const raf_func *f,
                               const run_id *all, int world) {
  const run_id *me = &all[0];
  bool differ = false;
  for (int r = 1; r < world; r++) {
    const run_id *o = &all[r];
    char version[sizeof o->version + 1]; /* as gathered: ended here */
    memcpy(version, o->version, sizeof o->version);
    version[sizeof o->version] = 0;
    if (strcmp(version, me->version) != 0)
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "rank %d runs raf-run %s, rank 0 raf-run %s: install "
                      "the same raf on every host",
                      r, version, me->version);
    else if (o->module != me->module)
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "rank %d runs another module than rank 0 (hash "
                      "%016" PRIx64 " vs %016" PRIx64 "): give every rank "
                      "the same file (on several hosts, the same contents)",
                      r, o->module, me->module);
    else if (o->function != me->function)
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "rank %d runs another function than rank 0's @%s "
                      "(--function)",
                      r, f->name);
    else if (o->steps != me->steps)
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "rank %d runs %lld steps, rank 0 %lld (--steps)", r,
                      (long long)o->steps, (long long)me->steps);
    else
      continue;
    differ = true;
  }
  return differ;
}

raf_status rr_dist_check_same(raf_ctx *ctx, const rr_dist *d,
                              const raf_module *m, const raf_func *f,
                              long steps) {
  if (d->world <= 1)
    return RAF_OK;
  run_id id = {0};
  run_id *all = d->rank == 0 ? calloc((size_t)d->world, sizeof *all) : NULL;
  raf_status rc = d->rank == 0 && !all ? RAF_ERROR
                                       : identify(ctx, m, f, steps, &id);
  if (d->rank == 0 && !all)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
  /* Every rank takes part in the gather, even one that failed above, so
   * that none waits for it. */
  if (raf_mpi_gather(ctx, &id, sizeof id, all) != RAF_OK)
    rc = RAF_ERROR;
  bool bad = rc != RAF_OK;
  if (!bad && d->rank == 0)
    bad = report_differences(ctx, f, all, d->world);
  free(all);
  if (bad && d->rank != 0) /* rank 0 alone says why the ranks stop */
    rr_dist_render(ctx, d, stderr);
  return raf_mpi_any(bad) ? RAF_ERROR : RAF_OK;
}

void rr_dist_finish(const rr_dist *d) {
  if (d->world > 1)
    raf_mpi_finish();
}

raf_type *rr_dist_whole_type(raf_module *m, const raf_func *f, int i,
                             const rr_dist *d) {
  const raf_arg *a = &f->args[i];
  raf_type *t = a->value->type;
  if (d->world <= 1)
    return t;
  const raf_attr *sh = raf_attrs_find(&a->attrs, "sharded");
  if (sh && sh->kind == RAF_ATTR_INTS)
    return raf_type_get(m, t->dtype, sh->val.u.ints.n, sh->val.u.ints.v);
  bool data = !raf_arg_flag(a, "param") && !raf_arg_flag(a, "state");
  if (!data || t->rank == 0)
    return t;
  int64_t dims[RAF_MAX_RANK];
  memcpy(dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  dims[0] *= d->world;
  return raf_type_get(m, t->dtype, t->rank, dims);
}

raf_status rr_dist_take_part(raf_exec *ex, const rr_dist *d,
                             const raf_tensor *whole, raf_tensor *part) {
  size_t begin = (size_t)d->rank * part->nbytes;
  size_t n = begin >= whole->nbytes ? 0 : whole->nbytes - begin;
  if (n > part->nbytes)
    n = part->nbytes;
  if (raf_exec_write(ex, part, 0, (const char *)whole->data + begin, n) !=
      RAF_OK)
    return RAF_ERROR;
  return raf_exec_zero(ex, part, n, part->nbytes - n);
}

raf_status rr_dist_gather(raf_ctx *ctx, raf_exec *ex, const rr_dist *d,
                          const raf_tensor *part, raf_tensor *whole) {
  size_t all_bytes = part->nbytes * (size_t)d->world;
  char *all = d->rank == 0 ? malloc(all_bytes + 1) : NULL;
  if (d->rank == 0 && !all) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  void *staged;
  const void *mine = raf_exec_host_data(ex, part, &staged);
  raf_status rc = mine ? raf_mpi_gather(ctx, mine, part->nbytes, all)
                       : RAF_ERROR;
  free(staged);
  if (rc == RAF_OK && d->rank == 0) /* the padding stays behind */
    rc = raf_exec_write(ex, whole, 0, all, whole->nbytes);
  free(all);
  return rc;
}

void rr_dist_render(const raf_ctx *ctx, const rr_dist *d, FILE *out) {
  if (d->world <= 1) {
    raf_diag_render(ctx, out);
    return;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) {
    raf_diag_render(ctx, out);
    return;
  }
  raf_diag_render(ctx, mem);
  fclose(mem);
  for (char *line = text; line && *line;) {
    char *end = strchr(line, '\n');
    int n = end ? (int)(end - line) : (int)strlen(line);
    fprintf(out, "rank %d: %.*s\n", d->rank, n, line);
    line = end ? end + 1 : NULL;
  }
  free(text);
}
