/* test_gpu_launch.c: the NVPTX schedule's launches (codegen/plan.h,
 * schedule.c) cover every output element exactly once. For a few shapes of
 * each layout it evaluates the launch formulas in C, thread by thread of
 * the grid the schedule gives (and of smaller grids, which the kernels'
 * grid-stride loops also cover), and counts the stores:
 *   - flat: item blockIdx * block + threadIdx + k * grid * block;
 *   - rows (warp, block, tile): the slot's rows blockIdx * rows_per_block
 *     + slot + k * grid * rows_per_block, and in each row the lane's
 *     elements lane, lane + lanes, ...; the row's own results by lane 0;
 *   - a total's final block: rows t, t + final_block, ...
 * It then compiles two functions through raf_cg_compile_ptx and checks
 * that the launches it returns are the schedule's, and that a second
 * compilation takes the same PTX from the kernel cache. No GPU runs here. */
#include "codegen/codegen.h"
#include "codegen/plan.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#include "test/unit/check.h"

/* The slot and lane of thread t of a block (plan.h's formulas). */
static void slot_lane(const cg_gpu_sched *s, int t, int *slot, int *lane) {
  if (s->layout == CG_GPU_TILE) {
    *slot = t % s->rows_per_block;
    *lane = t / s->rows_per_block;
  } else {
    *slot = t / s->lanes;
    *lane = t % s->lanes;
  }
}

/* Whether a launch of `grid` blocks stores each element (and, for row
 * layouts, each row's result) exactly once. */
static bool covers(const cg_gpu_sched *s, int64_t grid) {
  int64_t n = s->items * s->cols;
  unsigned char *elem = calloc((size_t)n + 1, 1);
  unsigned char *row = calloc((size_t)s->items + 1, 1);
  if (!elem || !row) {
    free(elem);
    free(row);
    return false;
  }
  CHECK(s->layout == CG_GPU_FLAT || s->lanes * s->rows_per_block == s->block);
  for (int64_t b = 0; b < grid; b++)
    for (int t = 0; t < s->block; t++) {
      if (s->layout == CG_GPU_FLAT) {
        for (int64_t i = b * s->block + t; i < s->items;
             i += grid * s->block)
          elem[i]++;
        continue;
      }
      int slot, lane;
      slot_lane(s, t, &slot, &lane);
      /* the loop's step is the block's, uniform over its threads */
      for (int64_t base = b * s->rows_per_block; base < s->items;
           base += grid * s->rows_per_block) {
        int64_t r = base + slot;
        if (r >= s->items)
          continue; /* recomputes the last row, stores nothing */
        for (int64_t j = lane; j < s->cols; j += s->lanes)
          elem[r * s->cols + j]++;
        if (lane == 0)
          row[r]++;
      }
    }
  bool ok = true;
  for (int64_t i = 0; i < n; i++)
    ok &= elem[i] == 1;
  for (int64_t r = 0; s->layout != CG_GPU_FLAT && r < s->items; r++)
    ok &= row[r] == 1;
  free(elem);
  free(row);
  return ok;
}

/* The final block's threads take each row once. */
static bool final_covers(const cg_gpu_sched *s, int64_t rows) {
  unsigned char *seen = calloc((size_t)rows + 1, 1);
  if (!seen)
    return false;
  for (int t = 0; t < s->final_block; t++)
    for (int64_t r = t; r < rows; r += s->final_block)
      seen[r]++;
  bool ok = true;
  for (int64_t r = 0; r < rows; r++)
    ok &= seen[r] == 1;
  free(seen);
  return ok;
}

static void check_shape(int64_t rows, int64_t cols, bool rowops, bool tile,
                        bool totals, cg_gpu_layout want) {
  cg_gpu_sched s;
  cg_gpu_schedule_for(rows, cols, rowops, tile, totals, &s);
  if (s.layout != want)
    fprintf(stderr, "[%lld x %lld]: layout %d, not %d\n", (long long)rows,
            (long long)cols, s.layout, want);
  CHECK(s.layout == want);
  CHECK(s.grid >= 1 && s.grid <= CG_GPU_MAX_GRID);
  CHECK(s.block >= 32 && s.block <= 1024 && s.block % 32 == 0);
  CHECK(s.shared_bytes <= 48 * 1024);
  /* the grid the schedule gives takes each item in one pass unless it
   * hit the cap */
  if (s.grid < CG_GPU_MAX_GRID)
    CHECK(s.grid * s.rows_per_block >= s.items &&
          (s.grid - 1) * s.rows_per_block < s.items);
  bool ok = covers(&s, s.grid);
  if (!ok)
    fprintf(stderr, "[%lld x %lld] layout %d: not covered once\n",
            (long long)rows, (long long)cols, s.layout);
  CHECK(ok);
  if (s.items * s.cols < (1 << 20)) { /* smaller grids stride over it */
    CHECK(covers(&s, 1));
    CHECK(covers(&s, 3));
  }
  if (totals) {
    CHECK(s.final_block > 0 && s.final_shared_bytes == s.final_block / 32 * 8);
    CHECK(final_covers(&s, rows));
  }
}

static void check_compile(void) {
  const char *text =
      "func @bias_relu(%x: f32[37,300], %b: f32[300]) -> f32[37,300] {fused} {\n"
      "  %h = add(%x, %b)\n"
      "  %z = constant 0 : f32[]\n"
      "  %r = maximum(%h, %z)\n"
      "  return %r\n"
      "}\n"
      "func @colsum(%x: f32[64,100]) -> f32[100] {fused} {\n"
      "  %c = sum(%x) {axes = [0]}\n"
      "  return %c\n"
      "}\n"
      "func @leading(%x: f32[64,100]) -> (f32[100], f32[64]) {fused} {\n"
      "  %c = sum(%x) {axes = [0]}\n"
      "  %r = sum(%x) {axes = [1]}\n"
      "  return %c, %r\n"
      "}\n"
      "func @rowmax(%x: f32[5,3000]) -> f32[5] {fused} {\n"
      "  %m = max(%x) {axes = [1]}\n"
      "  return %m\n"
      "}\n";
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, "launch.raf", text, strlen(text), 1);
  CHECK(m != NULL);
  if (!m) {
    raf_ctx_destroy(ctx);
    return;
  }
  struct {
    const char *fn;
    cg_gpu_layout layout;
    int64_t rows, cols;
    bool declined;
  } cases[] = {{"bias_relu", CG_GPU_FLAT, 37, 300, false},
               {"colsum", CG_GPU_TILE, 100, 64, false},
               {"leading", CG_GPU_FLAT, 0, 0, true},
               {"rowmax", CG_GPU_BLOCK, 5, 3000, false}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const raf_func *f = raf_module_find_func(m, cases[i].fn);
    raf_cg_ptx out;
    bool declined;
    char why[512];
    bool ok = raf_cg_compile_ptx(f, "sm_90", NULL, NULL, &out, &declined, why,
                                 sizeof why);
    if (cases[i].declined) {
      CHECK(!ok && declined && out.ptx == NULL);
      continue;
    }
    if (!ok)
      fprintf(stderr, "@%s: %s\n", cases[i].fn, why);
    CHECK(ok);
    if (!ok)
      continue;
    cg_gpu_sched s;
    cg_gpu_schedule_for(cases[i].rows, cases[i].cols,
                        cases[i].layout != CG_GPU_FLAT,
                        cases[i].layout == CG_GPU_TILE, false, &s);
    CHECK(s.layout == cases[i].layout);
    CHECK(out.nkernels == 1);
    CHECK(strcmp(out.kernels[0].name, cases[i].fn) == 0);
    CHECK(out.kernels[0].grid[0] == s.grid && out.kernels[0].grid[1] == 1 &&
          out.kernels[0].grid[2] == 1);
    CHECK(out.kernels[0].block[0] == s.block && out.kernels[0].block[1] == 1 &&
          out.kernels[0].block[2] == 1);
    CHECK(out.kernels[0].shared_bytes == s.shared_bytes);
    char entry[300];
    snprintf(entry, sizeof entry, ".entry %s(", cases[i].fn);
    CHECK(strstr(out.ptx, entry) != NULL);
    CHECK(strstr(out.ptx, ".target sm_90") != NULL);
    CHECK(covers(&s, out.kernels[0].grid[0]));
    CHECK(!out.cached);
    raf_cg_ptx again;
    CHECK(raf_cg_compile_ptx(f, "sm_90", NULL, NULL, &again, &declined, why,
                             sizeof why));
    CHECK(again.cached && again.ptx && strcmp(again.ptx, out.ptx) == 0);
    CHECK(again.nkernels == 1 && again.kernels[0].grid[0] == s.grid);
    raf_cg_ptx_free(&again);
    /* Another architecture is another entry. */
    CHECK(raf_cg_compile_ptx(f, "sm_80", NULL, NULL, &again, &declined, why,
                             sizeof why));
    CHECK(!again.cached && strstr(again.ptx, ".target sm_80") != NULL);
    raf_cg_ptx_free(&again);
    raf_cg_ptx_free(&out);
    CHECK(out.ptx == NULL && out.nkernels == 0);
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

/* Removes a directory of files. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    char path[512];
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

int main(void) {
  /* A kernel cache of this run's own, in the working directory (removed
   * at the end). */
  char cache[] = "test_gpu_launch.cache-XXXXXX";
  bool have_cache = mkdtemp(cache) != NULL;
  CHECK(have_cache);
  if (have_cache)
    setenv("RAF_CACHE_DIR", cache, 1);
  /* flat: a scalar, a bias add's [64 x 256], odd sizes, past the grid cap */
  check_shape(1, 1, false, false, false, CG_GPU_FLAT);
  check_shape(64, 256, false, false, false, CG_GPU_FLAT);
  check_shape(1000, 37, false, false, false, CG_GPU_FLAT);
  check_shape(1, (1 << 24) + 3, false, false, false, CG_GPU_FLAT);
  /* a warp per row: short rows, up to 1,024 elements, rows not a
   * multiple of the block's 8 */
  check_shape(7, 5, true, false, false, CG_GPU_WARP);
  check_shape(33, 1024, true, false, true, CG_GPU_WARP);
  check_shape(256, 768, true, false, true, CG_GPU_WARP);
  /* a block per row */
  check_shape(5, 1025, true, false, false, CG_GPU_BLOCK);
  check_shape(3, 50257, true, false, true, CG_GPU_BLOCK);
  /* column tiles: GPT-2's bias gradient, columns not a multiple of 32 */
  check_shape(768, 64, true, true, false, CG_GPU_TILE);
  check_shape(100, 37, true, true, false, CG_GPU_TILE);
  /* a total's second stage over more rows than its block */
  check_shape(1000, 10, true, false, true, CG_GPU_WARP);
  check_compile();
  if (have_cache)
    remove_dir(cache);
  if (failures)
    fprintf(stderr, "test_gpu_launch: %d checks failed\n", failures);
  return failures != 0;
}
