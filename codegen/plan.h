/* plan.h: the analysis of a fused function into a kernel plan (codegen/
 * internal; no LLVM here).
 *
 * A kernel iterates over one shape F, the iteration space. Its dims are
 * split into outer dims, which the kernel's parallel range [begin, end)
 * walks one row at a time, and inner dims, which each row walks with
 * nested loops. An elementwise kernel's F is its largest result's shape
 * (every dim outer, or the last one inner when the dims do not collapse
 * into one); a kernel with reductions or row ops (softmax, log_softmax,
 * layer_norm, cross_entropy, mse_loss) has their input's shape as F, with
 * the reduced dims inner (a "row" is then whatever one output element
 * reduces: a row of x for sum(x, axes = [1]), a column for axes = [0]):
 * every row op of a kernel must reduce the same dims of the same F.
 *
 * Values are evaluated at points of F. Each use of a value V carries a map
 * from V's dims to F's dims (-1: index 0, for a size-1 dim that
 * broadcasts), derived by NumPy broadcasting from the use's own map; a
 * kernel argument (or dense constant) read under a map is a leaf access
 * whose offset is a linear function of F's indices, with coefficient
 * coef[d] for F dim d. A row op's result is a row value: computed once per
 * row, it may only be read at its own row (its map sends its dims onto the
 * outer dims of F, in order).
 *
 * A reshape views the same elements in C order: its operand's dims map onto
 * runs of the F dims its result's dims run over. When a dim of the operand
 * would end inside an F dim, F is refined (that dim split in two) and the
 * analysis starts again, so F is the finest factorisation every view needs.
 *
 * The dims of F then collapse where every leaf access allows it (size-1
 * dims vanish; adjacent dims of one group merge when each access's
 * coefficients are contiguous across them), so that most elementwise
 * kernels become one flat loop.
 *
 * A total (cross_entropy "mean" or "sum") adds a value of every row: the
 * rows store theirs into scratch arrays, and a final step after every row
 * adds them up and computes the single-element results that depend on it.
 *
 * What the analysis refuses it says in a phrase ("row ops over different
 * axes of f32[8,16]"); the fused function then runs statement by
 * statement.
 */
#ifndef RAF_CODEGEN_PLAN_H
#define RAF_CODEGEN_PLAN_H

#include "ir/ir.h"

/* The most dims of F: a value's rank, more when reshapes split dims. */
#define CG_MAX_FDIMS 12
/* The most buffers (arguments, results, scratch) a kernel takes. */
#define CG_MAX_BUFS 192

/* A map of a value's dims (rank entries) onto F's dims: value dim j runs
 * over F dims lo[j]..hi[j] (one F dim, or several merged, as a reshape
 * views them); lo[j] = -1 for a dim of size 1 (index 0). */
typedef struct cg_map {
  int8_t lo[RAF_MAX_RANK], hi[RAF_MAX_RANK];
} cg_map;

/* An F dim to split into outer x (extent / outer), so that a reshape's
 * dims line up with F's. */
typedef struct cg_split {
  int dim;
  int64_t outer;
} cg_split;

typedef enum cg_out_class {
  CG_OUT_FULL,    /* F's shape: stored at every point */
  CG_OUT_ROW,     /* one element per row: stored by the row */
  CG_OUT_UNIFORM, /* one element, no row op under it: stored once */
  CG_OUT_FINAL,   /* one element under a total: stored by the final step */
  CG_OUT_PART     /* a shape F broadcasts from: stored at the points whose
                     indices along its missing dims are 0 */
} cg_out_class;

typedef struct cg_output {
  const raf_value *value;
  cg_out_class cls;
  cg_map map;
} cg_output;

/* A dim of the collapsed iteration space: F's dims first..last (size-1
 * dims among them skipped) merged. */
typedef struct cg_cdim {
  int64_t extent;
  int last; /* the F dim whose coefficient strides this dim */
} cg_cdim;

/* A label operand of cross_entropy, which the runtime checks before the
 * kernel runs (labels outside [0, classes) other than ignore are errors). */
typedef struct cg_label_check {
  int arg; /* the function argument holding the labels */
  int64_t classes, ignore;
  const raf_stmt *stmt;
  bool backward; /* cross_entropy_grad's (its own message) */
} cg_label_check;

#define CG_MAX_CHECKS 8

typedef struct cg_plan {
  const raf_func *f;
  bool has_rowops;
  int rank; /* F */
  int64_t dims[CG_MAX_FDIMS];
  bool inner[CG_MAX_FDIMS]; /* F dim d is walked inside a row */
  int ncdims, ncouter;      /* collapsed dims; the first ncouter are outer */
  cg_cdim cdims[CG_MAX_FDIMS];
  int64_t rows; /* product of the outer extents: the parallel range */
  int64_t cols; /* product of the inner extents */
  int nstmts;   /* statements evaluated, for the cost of a row */
  int nout;
  cg_output *out; /* f->nresults, in result order */
  int nrowops;
  const raf_stmt **rowops; /* in statement order */
  int ntotals; /* row ops among them that are totals (cg_is_total) */
  int nchecks;
  cg_label_check checks[CG_MAX_CHECKS];
} cg_plan;

/* Rows a kernel walks together (a column tile), or 0. A kernel whose rows
 * are columns, that is whose only row ops are sum, mean, max and min over
 * dims that come before its one outer dim (sum(x, axes = [0]) of a
 * matrix: a bias's gradient), would read one element per cache line and
 * per page walking a row; on the host it walks CG_TILE adjacent rows at
 * once instead, the reduced dims outside, each row's accumulator in its
 * own lane (so each row still adds its elements in ascending order), and
 * its parallel ranges are multiples of CG_TILE rows. */
#define CG_TILE 16
int cg_plan_tile(const cg_plan *p);

/* Analyses f. On success fills *p (free with cg_plan_free) and returns
 * true; else writes why into why (size bytes) and returns false. */
bool cg_plan_make(const raf_func *f, cg_plan *p, char *why, size_t size);
void cg_plan_free(cg_plan *p);

/* The map of operand U of a statement whose result (type rt) is read under
 * map m: NumPy broadcasting, right-aligned; size-1 dims of U map to -1. */
cg_map cg_map_operand(const raf_type *ut, const raf_type *rt, cg_map m);
/* The map of a value with F's elements in C order (F's shape, or another
 * factorisation of it): its dims onto runs of F's dims. 1 when it maps, 0
 * when an F dim must be split first (*need), -1 when it cannot. */
int cg_map_full(const cg_plan *p, const raf_type *t, cg_map *out,
                cg_split *need);
/* cg_map_full's map when t has F's elements, else t right-aligned to F
 * dim for dim (a shape F broadcasts from); for maps the analysis checked. */
cg_map cg_map_identity(const cg_plan *p, const raf_type *t);
/* The map of a row op's result: its non-1 dims onto runs of F's non-1
 * outer dims, in order; false (or 0, -1 as cg_map_full) when its shape is
 * not the rows'. */
bool cg_map_row(const cg_plan *p, const raf_type *t, cg_map *out);
int cg_map_row_split(const cg_plan *p, const raf_type *t, cg_map *out,
                     cg_split *need);
/* The map of reshape's operand (type ut) when its result (type rt) is read
 * under m: the same elements in C order, over the same F dims. 1, 0 or -1
 * as cg_map_full. */
int cg_map_reshape(const cg_plan *p, const raf_type *ut, const raf_type *rt,
                   cg_map m, cg_map *out, cg_split *need);
bool cg_map_equal(const cg_map *a, const cg_map *b, int rank);
/* The coefficients of a leaf access of a tensor of type t under map m:
 * coef[d] for F dim d (elements). */
void cg_leaf_coef(const cg_plan *p, const raf_type *t, cg_map m,
                  int64_t *coef);

/* Row ops: statements computed by passes over each row. */
bool cg_is_rowop(const raf_stmt *s);
/* Row ops whose result has the input's shape (softmax, layer_norm, the
 * gradients of softmax and cross_entropy), not one element per row. */
bool cg_rowop_is_full(const raf_stmt *s);
/* The operand whose shape is the row op's iteration space. */
int cg_rowop_input(const raf_stmt *s);
/* Totals: row ops whose result sums a value of every row (cross_entropy
 * with reduction "mean" or "sum"). Each row stores its loss and whether it
 * counts into two scratch arrays of doubles; the final step, once every
 * row is done, adds them up in row order (as cpu-ref does) and stores the
 * results computed from them. */
bool cg_is_total(const raf_stmt *s);

/* ---- The NVPTX schedule (schedule.c) --------------------------------------
 *
 * How a kernel's work spreads over CUDA threads. Shapes are static, so a
 * launch is concrete numbers: a 1-D grid of `grid` blocks of `block`
 * threads, `shared_bytes` of shared memory. Every layout strides over
 * the grid (so any grid covers the work); grid is the one that gives each
 * thread about one item, capped at CG_GPU_MAX_GRID blocks.
 *
 *   CG_GPU_FLAT (no row ops): item i = blockIdx * block + threadIdx + k *
 *     grid * block over the `items` points of F in C order, so adjacent
 *     threads touch adjacent elements of a C-order output.
 *   CG_GPU_WARP, CG_GPU_BLOCK (row ops, rows of `cols` elements): a group
 *     of `lanes` threads per row, rows_per_block rows per block: thread t
 *     takes slot t / lanes and lane t % lanes, rows blockIdx *
 *     rows_per_block + slot + k * grid * rows_per_block, and in each row
 *     the elements lane, lane + lanes, ...; WARP (lanes 32) reduces with
 *     shfl.sync, BLOCK (one row per block) with shfl.sync then shared
 *     memory and bar.sync.
 *   CG_GPU_TILE (rows that are columns, cg_plan_tile): rows_per_block = 32
 *     adjacent columns per block, `lanes` threads down each: thread t
 *     takes slot t % 32 and lane t / 32, so a warp reads 32 adjacent
 *     elements; the lanes reduce through shared memory.
 *
 * A plan with totals also has a final kernel (final_block threads in one
 * block): thread t adds rows t, t + final_block, ... of the scratch
 * arrays, and the block reduces them (the second stage of the total). */
typedef enum cg_gpu_layout {
  CG_GPU_FLAT,
  CG_GPU_WARP,
  CG_GPU_BLOCK,
  CG_GPU_TILE
} cg_gpu_layout;

#define CG_GPU_MAX_GRID 65535

typedef struct cg_gpu_sched {
  cg_gpu_layout layout;
  int64_t items;          /* FLAT: points; else rows */
  int64_t cols;           /* elements per row (1 for FLAT) */
  int block, rows_per_block, lanes;
  int64_t grid;
  int shared_bytes;
  int final_block, final_shared_bytes; /* 0 without totals */
} cg_gpu_sched;

/* The schedule of a kernel of `rows` rows of `cols` elements, with row ops
 * or not, a column tile (cg_plan_tile) or not, and totals or not. */
void cg_gpu_schedule_for(int64_t rows, int64_t cols, bool rowops, bool tile,
                         bool totals, cg_gpu_sched *s);
/* The schedule of plan p. */
void cg_gpu_schedule(const cg_plan *p, cg_gpu_sched *s);

#endif
