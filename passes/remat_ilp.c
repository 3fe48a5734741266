/* remat_ilp.c: the remat pass's exact solver: Checkmate's mixed-integer
 * program (Jain et al., MLSys 2020, section 4) in the memory model of
 * passes/remat.h, solved with GLPK's branch and cut (glp_intopt).
 *
 * Variables, for stages t and nodes i < t (lower-triangular only):
 *  - R(t, i), binary: stage t recomputes i. R(t, t) = 1 is a constant, and
 *    R(t, i) = 0 when i may not be recomputed;
 *  - S(t, i), binary: the copy of i made before stage t is still live in
 *    it (Checkmate's checkpoint). No S in stage 0; S(n, i), after the last
 *    stage, is the constant returned[i];
 *  - FREE(t, i, k), binary, for k < t in stage t that reads i: the copy
 *    of i dies right after moment k;
 *  - U(t, k), continuous: the live bytes at moment k of stage t (the
 *    moment of computing k there), at most the budget.
 * Constraints:
 *  - R(t, k) <= R(t, i) + S(t, i) for each input i of k <= t: a
 *    computation reads a copy that exists;
 *  - S(t+1, i) <= S(t, i) + R(t, i): a kept copy was kept or made; with
 *    S(n, i) = returned[i], a returned node's last copy lives to the end;
 *  - FREE(t, i, k) <= R(t, k), FREE(t, i, k) + R(t, j) <= 1 for each
 *    later reader j of i in stage t (k < j <= t), and FREE(t, i, k) +
 *    S(t+1, i) <= 1: a copy dies after its last read in the stage unless
 *    the next stage keeps it;
 *  - U(t, first) = sum_i bytes_i S(t, i) + bytes_first R(t, first), and
 *    U(t, k) = U(t, k') - sum_i bytes_i FREE(t, i, k') + bytes_k R(t, k)
 *    for consecutive moments k' < k: a moment counts its own result and
 *    the inputs it reads, which die only after it.
 * Objective: the sum of flops[i] R(t, i) over i < t.
 * And rows that cut off only schedules no better than others, to tighten
 * the relaxation GLPK branches on: R(t, i) + S(t, i) <= 1 (an older copy
 * is not read once i is recomputed), and R(t, i) + S(t, i) <= the sum of
 * R(t, j) over i's readers j <= t, plus S(t+1, i) (a copy is made or
 * kept in a stage only when the stage reads it or the next keeps it).
 * They also make Checkmate's FREE(t, k, k) (a result no one reads) always
 * 0, so it is left out.
 *
 * Exactness. The model (remat_model.c) and this program agree: for any
 * schedule R, taking each S(t, i) = 1 exactly when an older copy of i is
 * read in stage t or later (or is a returned node's last copy) and each
 * FREE at the copy's last read, U is the model's live bytes at every
 * moment that computes (and no more at moments that do not); any other
 * choice of S and FREE only counts more. So the optimum here is the least
 * recomputation whose model peak fits the budget, which test_remat_ilp
 * checks against brute force. Where Checkmate differs, this follows the
 * model: FREE is only bounded above (the solver frees whatever it may,
 * since freeing only helps), nothing is freed after a stage's last moment
 * (the next stage counts its memory from S anew), and a returned node may
 * be recomputed as long as its last copy is kept.
 *
 * Outputs. For a graph with remat.h's optional outputs and slices the
 * program stays at the granularity of nodes: a node's outputs count
 * together (bytes is their sum), live until the last read of any of them
 * (to the end when any is returned), and slices are not used. That is
 * conservative: every schedule returned fits the budget in the finer
 * model too (checked below, in it); it is the least among schedules that
 * recompute whole nodes.
 *
 * Size. Variables whose value cannot matter are left out: R(t, i) and
 * S(t, i) for stages past the last node that depends on i (unless i or a
 * node depending on it is returned), R of nodes that may not be
 * recomputed, U of moments no computation can take, FREE(t, i, k) when
 * node t reads i (then k is not the last read) and frees after a stage's
 * last moment. For n nodes and e input edges that is at most n^2/2 each
 * of R, S and U and n*e FREE; rows: n^2/2 each of memory and kept copies,
 * n^2 of usefulness, at most n*e dependency rows and, per FREE, two plus
 * its copy's later readers in the stage. Bytes are counted in units of
 * their greatest common divisor (the plan's alignment at least), so the
 * coefficients stay small and whole; the budget gets half a unit of slack,
 * exact for whole sums and robust to GLPK's tolerances.
 *
 * Solve times, on the forward and backward chain of test_remat_ilp (m
 * forward nodes, m backward; 64-byte activations; budget 2*ceil(sqrt(m))
 * + 2 activations) on a shared two-core machine: 16 to 30 nodes, optimal
 * in 0.05 to 2 s; 32 nodes in 3 to 8 s; 34 to 40 nodes, 13 to 40 s, or
 * only a schedule not proven optimal by 30 s; 50 and 60 nodes, no
 * schedule in 60 s (at 60 nodes, 19,000 rows and 9,000 columns, the root
 * relaxation alone takes about 20 s). Options measured there: GLPK's
 * feasibility pump (on) found schedules several times sooner from 26
 * nodes; its cuts, other branching and backtracking rules did not pay.
 *
 * Time limit. glp_intopt stops at tm_lim: with no schedule yet, *feasible
 * is false and *timed_out set; with one, it is returned with both set
 * (a schedule within the budget, not proven the least).
 *
 * Warm start (raf_remat_solve_ilp_from). The solver can start from an
 * incumbent (the greedy solver's schedule, as whole nodes) and then looks
 * only for cheaper schedules: one more row holds the objective below the
 * incumbent's FLOPs. When there is none, or none is found in the time
 * limit, the answer is the incumbent itself, if it meets the budget by
 * whole nodes; so the result is never worse than the incumbent. (GLPK's
 * own way, glp_ios_heur_sol from glp_intopt's callback, needs the MIP
 * presolver off; measured on a one-layer GPT-2 step restricted to
 * greedy's stages, branch and bound then found nothing better in 60 s,
 * where with the presolver and this row it proved the least in 19 s.) The incumbent may also restrict
 * the stages that recompute (stages: only R(t, i) of those t), which
 * shrinks the program from n^2/2 R columns to n per stage: a search
 * around the incumbent's stages, exact among the schedules that
 * recompute there and nowhere else.
 *
 * GLPK is optional (CMake defines RAF_HAVE_GLPK when it finds it); without
 * it the solver returns RAF_ERROR, saying so. GLPK reports its internal
 * errors (out of memory) through glp_error_hook, which here frees GLPK's
 * environment and returns RAF_ERROR rather than aborting.
 */
#include "passes/remat.h"

#include <stdio.h>

#ifndef RAF_HAVE_GLPK

raf_status raf_remat_solve_ilp_from(const raf_remat_graph *g,
                                    int64_t budget, double time_limit,
                                    const raf_remat_schedule *incumbent,
                                    const bool *stages,
                                    raf_remat_schedule *out, bool *feasible,
                                    bool *timed_out, char *why,
                                    size_t why_size) {
  (void)g, (void)budget, (void)time_limit, (void)incumbent, (void)stages,
      (void)out;
  *feasible = false;
  *timed_out = false;
  snprintf(why, why_size, "raf was built without GLPK");
  return RAF_ERROR;
}

#else

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* The program under construction. Column indices are GLPK's (from 1); 0
 * in a column table means the variable is left out (fixed to 0). */
typedef struct ilp {
  const raf_remat_graph *g;
  int n;
  glp_prob *lp;
  int *r_col;        /* [t * n + i]: R(t, i), i < t */
  int *s_col;        /* [t * n + i]: S(t, i), i < t */
  int *user_start;   /* node i's readers: user[user_start[i] ..) */
  int *user;
  int64_t unit;      /* bytes per unit of U */
  /* The matrix, as GLPK's triplets (index 0 unused). */
  int *ia, *ja;
  double *ar;
  int nz, cap;
  int row_first;     /* the row under construction's first triplet */
  double row_const;  /* its constant terms (R(t, t), S(n, i)) */
  bool out_of_memory;
  bool infeasible;   /* a row of constants alone does not hold */
  const bool *stages; /* the stages that may recompute, or NULL: all */
} ilp;

static double bytes_of(const ilp *p, int i) {
  return (double)(p->g->bytes[i] / p->unit);
}

static int new_col(ilp *p, bool binary, double obj) {
  int col = glp_add_cols(p->lp, 1);
  if (binary)
    glp_set_col_kind(p->lp, col, GLP_BV);
  glp_set_obj_coef(p->lp, col, obj);
  return col;
}

static void row_begin(ilp *p) {
  p->row_first = p->nz + 1;
  p->row_const = 0;
}

/* A term of the row under construction; col 0 is a variable left out. */
static void term(ilp *p, int col, double coef) {
  if (col == 0 || coef == 0)
    return;
  if (p->nz + 1 >= p->cap) {
    int cap = p->cap * 2;
    int *ia = realloc(p->ia, sizeof *ia * (size_t)cap);
    if (ia)
      p->ia = ia;
    int *ja = realloc(p->ja, sizeof *ja * (size_t)cap);
    if (ja)
      p->ja = ja;
    double *ar = realloc(p->ar, sizeof *ar * (size_t)cap);
    if (ar)
      p->ar = ar;
    if (!ia || !ja || !ar) {
      p->out_of_memory = true;
      return;
    }
    p->cap = cap;
  }
  p->nz++;
  p->ja[p->nz] = col;
  p->ar[p->nz] = coef;
}

static void term_r(ilp *p, int t, int i, double coef) {
  if (i == t)
    p->row_const += coef;
  else
    term(p, p->r_col[(size_t)t * (size_t)p->n + (size_t)i], coef);
}

static void term_s(ilp *p, int t, int i, double coef) {
  if (t == p->n)
    p->row_const += p->g->returned[i] ? coef : 0;
  else
    term(p, p->s_col[(size_t)t * (size_t)p->n + (size_t)i], coef);
}

/* Ends the row: its terms (type) rhs, type GLP_UP for <=, GLP_LO for >=,
 * GLP_FX for =. */
static void row_end(ilp *p, int type, double rhs) {
  double bound = rhs - p->row_const;
  if (p->out_of_memory)
    return;
  if (p->nz < p->row_first) {
    bool holds = type == GLP_UP ? 0 <= bound
                 : type == GLP_LO ? 0 >= bound
                                  : 0 == bound;
    if (!holds)
      p->infeasible = true;
    return;
  }
  int row = glp_add_rows(p->lp, 1);
  glp_set_row_bnds(p->lp, row, type, bound, bound);
  for (int k = p->row_first; k <= p->nz; k++)
    p->ia[k] = row;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/* Node i's readers, and the last stage in which a copy of i can matter:
 * the last node depending on i, or the end when i or a node depending on
 * it is returned. */
static bool index_graph(ilp *p, int *useful_until) {
  const raf_remat_graph *g = p->g;
  int n = p->n;
  int edges = g->in_start[n];
  p->user_start = calloc((size_t)n + 1, sizeof *p->user_start);
  p->user = malloc(sizeof *p->user * ((size_t)edges + 1));
  bool *reaches_returned = malloc((size_t)n + 1);
  int *fill = malloc(sizeof *fill * ((size_t)n + 1));
  bool ok = p->user_start && p->user && reaches_returned && fill;
  if (ok) {
    for (int e = 0; e < edges; e++)
      p->user_start[g->in[e] + 1]++;
    for (int i = 0; i < n; i++) {
      p->user_start[i + 1] += p->user_start[i];
      fill[i] = p->user_start[i];
    }
    /* Readers in increasing order, since nodes are visited in order. */
    for (int j = 0; j < n; j++)
      for (int e = g->in_start[j]; e < g->in_start[j + 1]; e++)
        p->user[fill[g->in[e]]++] = j;
    for (int i = n - 1; i >= 0; i--) {
      int last = i;
      reaches_returned[i] = g->returned[i];
      for (int e = p->user_start[i]; e < p->user_start[i + 1]; e++) {
        int j = p->user[e];
        reaches_returned[i] |= reaches_returned[j];
        if (useful_until[j] > last)
          last = useful_until[j];
      }
      useful_until[i] = reaches_returned[i] ? n - 1 : last;
    }
  }
  free(reaches_returned);
  free(fill);
  return ok;
}

/* The variables R and S, and the objective. */
static void add_stage_vars(ilp *p, const int *useful_until) {
  const raf_remat_graph *g = p->g;
  int n = p->n;
  for (int t = 1; t < n; t++)
    for (int i = 0; i < t; i++) {
      if (t > useful_until[i])
        continue;
      size_t at = (size_t)t * (size_t)n + (size_t)i;
      if (g->can_recompute[i] && (!p->stages || p->stages[t]))
        p->r_col[at] = new_col(p, true, g->flops[i]);
      p->s_col[at] = new_col(p, true, 0);
    }
}

static bool may_compute(const ilp *p, int t, int k) {
  return k == t || p->r_col[(size_t)t * (size_t)p->n + (size_t)k] != 0;
}

static bool may_hold(const ilp *p, int t, int i) {
  size_t at = (size_t)t * (size_t)p->n + (size_t)i;
  return i == t || p->r_col[at] != 0 || p->s_col[at] != 0;
}

static void add_dependency_rows(ilp *p) {
  const raf_remat_graph *g = p->g;
  int n = p->n;
  for (int t = 0; t < n; t++)
    for (int k = 0; k <= t; k++) {
      if (!may_compute(p, t, k))
        continue;
      for (int e = g->in_start[k]; e < g->in_start[k + 1]; e++) {
        int i = g->in[e];
        row_begin(p);
        term_r(p, t, k, 1);
        term_r(p, t, i, -1);
        term_s(p, t, i, -1);
        row_end(p, GLP_UP, 0);
      }
    }
  /* Kept copies; into stage n, the returned nodes' last copies. */
  for (int t = 0; t < n; t++)
    for (int i = 0; i < t; i++) { /* S(t+1, t) <= R(t, t) = 1 holds */
      if (t + 1 < n && p->s_col[(size_t)(t + 1) * (size_t)n + (size_t)i] == 0)
        continue;
      if (t + 1 == n && !g->returned[i])
        continue;
      row_begin(p);
      term_s(p, t + 1, i, 1);
      term_s(p, t, i, -1);
      term_r(p, t, i, -1);
      row_end(p, GLP_UP, 0);
    }
}

/* The usefulness rows (above). Removing a useless copy from a schedule
 * costs no flops and no memory and changes no other copy's reads, so
 * some optimum meets them. */
static void add_usefulness_rows(ilp *p) {
  int n = p->n;
  for (int t = 1; t < n; t++)
    for (int i = 0; i < t; i++) {
      if (!may_hold(p, t, i))
        continue;
      row_begin(p);
      term_r(p, t, i, 1);
      term_s(p, t, i, 1);
      row_end(p, GLP_UP, 1);
      row_begin(p);
      term_r(p, t, i, 1);
      term_s(p, t, i, 1);
      for (int u = p->user_start[i]; u < p->user_start[i + 1]; u++)
        if (p->user[u] <= t)
          term_r(p, t, p->user[u], -1);
      term_s(p, t + 1, i, -1);
      row_end(p, GLP_UP, 0);
    }
}

/* The FREE(t, i, k) variables of moment k < t and their rows, into
 * free_node/free_col (count returned). */
static int add_frees(ilp *p, int t, int k, int *free_node, int *free_col) {
  const raf_remat_graph *g = p->g;
  int n = p->n;
  int count = 0;
  for (int e = g->in_start[k]; e < g->in_start[k + 1]; e++) {
    int i = g->in[e];
    if (!may_hold(p, t, i))
      continue;
    if (t == n - 1 && g->returned[i])
      continue;
    /* Later readers in this stage keep the copy; node t always runs. */
    bool read_by_t = false;
    for (int u = p->user_start[i]; u < p->user_start[i + 1]; u++)
      read_by_t |= p->user[u] == t;
    if (read_by_t)
      continue;
    int col = new_col(p, true, 0);
    free_node[count] = i;
    free_col[count++] = col;
    row_begin(p);
    term(p, col, 1);
    term_r(p, t, k, -1);
    row_end(p, GLP_UP, 0);
    for (int u = p->user_start[i]; u < p->user_start[i + 1]; u++) {
      int j = p->user[u];
      if (j <= k || j > t || !may_compute(p, t, j))
        continue;
      row_begin(p);
      term(p, col, 1);
      term_r(p, t, j, 1);
      row_end(p, GLP_UP, 1);
    }
    if (t + 1 < n && p->s_col[(size_t)(t + 1) * (size_t)n + (size_t)i]) {
      row_begin(p);
      term(p, col, 1);
      term_s(p, t + 1, i, 1);
      row_end(p, GLP_UP, 1);
    }
  }
  return count;
}

/* U and the memory recurrence, stage by stage. */
static bool add_memory_rows(ilp *p, double budget_units) {
  const raf_remat_graph *g = p->g;
  int n = p->n;
  /* A stage's frees: at most one per node and one per edge. */
  size_t most = (size_t)n + (size_t)g->in_start[n] + 1;
  int *free_node = malloc(sizeof *free_node * most);
  int *free_col = malloc(sizeof *free_col * most);
  bool ok = free_node && free_col;
  for (int t = 0; ok && t < n; t++) {
    int prev_u = 0, prev_frees = 0, frees = 0;
    for (int k = 0; k <= t; k++) {
      if (!may_compute(p, t, k))
        continue;
      int u = new_col(p, false, 0);
      glp_set_col_bnds(p->lp, u, GLP_UP, 0, budget_units);
      row_begin(p);
      term(p, u, 1);
      if (prev_u == 0) {
        for (int i = 0; i < t; i++)
          term_s(p, t, i, -bytes_of(p, i));
      } else {
        term(p, prev_u, -1);
        for (int f = prev_frees; f < frees; f++)
          term(p, free_col[f], bytes_of(p, free_node[f]));
      }
      term_r(p, t, k, -bytes_of(p, k));
      row_end(p, GLP_FX, 0);
      prev_u = u;
      prev_frees = frees;
      if (k < t)
        frees += add_frees(p, t, k, free_node + frees, free_col + frees);
    }
  }
  free(free_node);
  free(free_col);
  return ok;
}

/* The FLOPs a schedule recomputes. */
static double schedule_flops(const raf_remat_graph *g,
                             const raf_remat_schedule *s) {
  double sum = 0;
  for (int t = 0; t < g->n; t++)
    for (int i = 0; i < t; i++)
      sum += s->r[(size_t)t * (size_t)g->n + (size_t)i] ? g->flops[i] : 0;
  return sum;
}

/* The warm start's row: the objective below the incumbent's, by a margin
 * far above GLPK's tolerances and below any FLOP count's step (each
 * recomputation costs at least one operation per element). */
static void add_cutoff_row(ilp *p, const raf_remat_schedule *start) {
  double cutoff = schedule_flops(p->g, start);
  cutoff -= cutoff * 1e-6 > 0.5 ? cutoff * 1e-6 : 0.5;
  row_begin(p);
  for (size_t at = 0; at < (size_t)p->n * (size_t)p->n; at++)
    if (p->r_col[at])
      term(p, p->r_col[at], p->g->flops[at % (size_t)p->n]);
  row_end(p, GLP_UP, cutoff);
}

static void on_glpk_error(void *info) {
  glp_free_env();
  longjmp(*(jmp_buf *)info, 1);
}

typedef enum solve_result {
  SOLVED,
  NO_SCHEDULE,  /* the program is infeasible */
  NO_TIME,      /* the time limit passed without a solution */
  FAILED
} solve_result;

/* Builds and solves the program; on SOLVED, R into out and the optimum
 * into *objective. */
static solve_result build_and_solve(ilp *p, int64_t budget, double time_limit,
                                    const raf_remat_schedule *start,
                                    raf_remat_schedule *out, double *objective,
                                    bool *incumbent, char *why,
                                    size_t why_size) {
  int n = p->n;
  int *useful_until = malloc(sizeof *useful_until * ((size_t)n + 1));
  if (!useful_until || !index_graph(p, useful_until)) {
    free(useful_until);
    snprintf(why, why_size, "out of memory");
    return FAILED;
  }
  int64_t unit = 0;
  for (int i = 0; i < n; i++)
    unit = gcd64(unit, p->g->bytes[i]);
  p->unit = unit > 0 ? unit : 1;
  /* Sums of bytes are whole units: half a unit of slack is exact and
   * robust to the solver's tolerances. */
  double budget_units = (double)(budget / p->unit) + 0.5;

  p->lp = glp_create_prob();
  glp_set_obj_dir(p->lp, GLP_MIN);
  add_stage_vars(p, useful_until);
  free(useful_until);
  add_dependency_rows(p);
  add_usefulness_rows(p);
  if (start)
    add_cutoff_row(p, start);
  if (!add_memory_rows(p, budget_units) || p->out_of_memory) {
    snprintf(why, why_size, "out of memory");
    return FAILED;
  }
  if (p->infeasible)
    return NO_SCHEDULE;
  glp_load_matrix(p->lp, p->nz, p->ia, p->ja, p->ar);

  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  int limit_ms = time_limit <= 0 ? INT_MAX
                 : time_limit * 1000 >= INT_MAX ? INT_MAX
                                                : (int)ceil(time_limit * 1000);
  parm.tm_lim = limit_ms;
  /* The feasibility pump finds a first schedule early (measured on the
   * chains of test_remat_ilp: several times faster from 26 nodes up, and
   * a schedule where there was none in the time limit); GLPK's cuts did
   * not pay. */
  parm.fp_heur = GLP_ON;
  int rc = glp_intopt(p->lp, &parm);
  int status = glp_mip_status(p->lp);
  if (rc == GLP_ENOPFS || (rc == 0 && status == GLP_NOFEAS))
    return NO_SCHEDULE;
  if (rc == GLP_ETMLIM && status != GLP_FEAS)
    return NO_TIME;
  if ((rc != 0 && rc != GLP_ETMLIM) || (status != GLP_OPT && status != GLP_FEAS)) {
    snprintf(why, why_size, "GLPK failed (glp_intopt: %d, status %d)", rc,
             status);
    return FAILED;
  }
  *incumbent = status != GLP_OPT;
  memset(out->r, 0, (size_t)n * (size_t)n);
  for (size_t at = 0; at < (size_t)n * (size_t)n; at++)
    if (p->r_col[at])
      out->r[at] = glp_mip_col_val(p->lp, p->r_col[at]) > 0.5;
  *objective = glp_mip_obj_val(p->lp);
  return SOLVED;
}

/* Whether s, read at the program's granularity (whole nodes), is within
 * budget: only then may the incumbent be the answer. */
static bool fits_by_nodes(const raf_remat_graph *g, const raf_remat_schedule *s,
                          int64_t budget) {
  raf_remat_graph whole = *g;
  whole.out_start = NULL; /* the optional outputs, slices and sharing */
  whole.has_slice = NULL;
  whole.out_share = NULL;
  int64_t peak = raf_remat_model_peak(&whole, s, NULL);
  return peak >= 0 && peak <= budget;
}

/* See "Time limit" and "Warm start" above. */
raf_status raf_remat_solve_ilp_from(const raf_remat_graph *g,
                                    int64_t budget, double time_limit,
                                    const raf_remat_schedule *incumbent,
                                    const bool *stages,
                                    raf_remat_schedule *out, bool *feasible,
                                    bool *timed_out, char *why,
                                    size_t why_size) {
  *feasible = false;
  *timed_out = false;
  if (g->n == 0) {
    *feasible = true;
    return RAF_OK;
  }
  if (budget < 0)
    return RAF_OK;

  ilp *p = calloc(1, sizeof *p);
  size_t cells = (size_t)g->n * (size_t)g->n;
  if (p) {
    p->g = g;
    p->n = g->n;
    p->stages = stages;
    p->r_col = calloc(cells, sizeof *p->r_col);
    p->s_col = calloc(cells, sizeof *p->s_col);
    p->cap = 1024;
    p->ia = malloc(sizeof *p->ia * (size_t)p->cap);
    p->ja = malloc(sizeof *p->ja * (size_t)p->cap);
    p->ar = malloc(sizeof *p->ar * (size_t)p->cap);
  }
  if (!p || !p->r_col || !p->s_col || !p->ia || !p->ja || !p->ar) {
    if (p) {
      free(p->r_col), free(p->s_col), free(p->ia), free(p->ja), free(p->ar);
      free(p);
    }
    snprintf(why, why_size, "out of memory");
    return RAF_ERROR;
  }

  /* The incumbent's answer, worked out before GLPK can longjmp. */
  volatile bool incumbent_fits =
      incumbent && fits_by_nodes(g, incumbent, budget);
  volatile double incumbent_flops =
      incumbent ? schedule_flops(g, incumbent) : 0;
  int term_was = glp_term_out(GLP_OFF);
  jmp_buf on_error;
  volatile solve_result result = FAILED;
  double objective = 0;
  bool not_proven = false;
  if (setjmp(on_error) == 0) {
    glp_error_hook(on_glpk_error, &on_error);
    result = build_and_solve(p, budget, time_limit, incumbent, out,
                             &objective, &not_proven, why, why_size);
    glp_error_hook(NULL, NULL);
    if (p->lp)
      glp_delete_prob(p->lp);
  } else {
    /* GLPK's environment, the program with it, is gone. */
    snprintf(why, why_size, "GLPK failed (an internal error)");
    result = FAILED;
  }
  glp_term_out(term_was);
  free(p->r_col), free(p->s_col), free(p->ia), free(p->ja), free(p->ar);
  free(p->user_start), free(p->user);
  free(p);

  /* Nothing cheaper than the incumbent (or nothing found in time): the
   * incumbent itself, when it meets the budget by whole nodes. */
  if ((result == NO_SCHEDULE || result == NO_TIME) && incumbent_fits) {
    not_proven = result == NO_TIME;
    memcpy(out->r, incumbent->r, (size_t)g->n * (size_t)g->n);
    objective = incumbent_flops;
    result = SOLVED;
  }
  switch (result) {
  case NO_SCHEDULE:
    return RAF_OK;
  case NO_TIME:
    *timed_out = true;
    return RAF_OK;
  case FAILED:
    return RAF_ERROR;
  case SOLVED:
    break;
  }
  /* The program's solution must be a schedule of the model that meets
   * the budget at the cost the program says. */
  double extra = 0;
  int64_t peak = raf_remat_model_peak(g, out, &extra);
  if (peak < 0 || peak > budget ||
      fabs(extra - objective) > 1e-6 * (fabs(objective) + 1)) {
    snprintf(why, why_size,
             "the ilp solver's schedule does not check (model peak %lld, "
             "budget %lld; flops %g, objective %g)",
             (long long)peak, (long long)budget, extra, objective);
    return RAF_ERROR;
  }
  *feasible = true;
  *timed_out = not_proven;
  return RAF_OK;
}

#endif

raf_status raf_remat_solve_ilp(const raf_remat_graph *g, int64_t budget,
                               double time_limit, raf_remat_schedule *out,
                               bool *feasible, bool *timed_out,
                               char *why, size_t why_size) {
  return raf_remat_solve_ilp_from(g, budget, time_limit, NULL, NULL, out,
                                  feasible, timed_out, why, why_size);
}
