/* schedule.c: the NVPTX schedule's launch geometry (plan.h), in plain C so
 * that the lowering (lower_nvptx.c), the launch API (codegen.h) and the
 * tests compute the same numbers. */
#include "codegen/plan.h"

/* Threads per block of the flat and warp layouts; a warp has 32. */
#define BLOCK 256
#define WARP 32

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t clamp_grid(int64_t g) {
  return g < 1 ? 1 : g > CG_GPU_MAX_GRID ? CG_GPU_MAX_GRID : g;
}

void cg_gpu_schedule_for(int64_t rows, int64_t cols, bool rowops, bool tile,
                         bool totals, cg_gpu_sched *s) {
  *s = (cg_gpu_sched){0};
  s->block = BLOCK;
  if (!rowops) {
    s->layout = CG_GPU_FLAT;
    s->items = rows * cols;
    s->cols = 1;
    s->rows_per_block = BLOCK;
    s->lanes = 1;
  } else if (tile) {
    /* 32 columns of 8 lanes: a warp reads 32 adjacent elements */
    s->layout = CG_GPU_TILE;
    s->items = rows;
    s->cols = cols;
    s->rows_per_block = WARP;
    s->lanes = BLOCK / WARP;
    s->shared_bytes = BLOCK * 8;
  } else if (cols <= 1024) {
    /* a warp per row: up to 32 elements a lane, no shared memory */
    s->layout = CG_GPU_WARP;
    s->items = rows;
    s->cols = cols;
    s->rows_per_block = BLOCK / WARP;
    s->lanes = WARP;
  } else {
    /* a block per row: 512 threads for a long row (a vocabulary's) */
    s->layout = CG_GPU_BLOCK;
    s->items = rows;
    s->cols = cols;
    s->block = 2 * BLOCK;
    s->rows_per_block = 1;
    s->lanes = s->block;
    s->shared_bytes = s->block / WARP * 8;
  }
  s->grid = clamp_grid(cdiv(s->items, s->rows_per_block));
  if (totals) {
    s->final_block = BLOCK;
    s->final_shared_bytes = BLOCK / WARP * 8;
  }
}

void cg_gpu_schedule(const cg_plan *p, cg_gpu_sched *s) {
  cg_gpu_schedule_for(p->rows, p->cols, p->has_rowops, cg_plan_tile(p) != 0,
                      p->ntotals > 0, s);
}
