/* test_cuda_move.c: the arithmetic of the cuda dialect's hand-written
 * data movement kernels (runtime/cuda/kernels.h), run on the CPU: the
 * strided copies movement.c describes for transpose, concat, split,
 * slice and slice_grad
 * produce NumPy's results, and take_grad's row ownership sums exactly the
 * dy rows a scatter-add would, each once, and argmax's row scan follows
 * cpu-ref's rule. The GPU runs the same inline
 * functions (kernels.cu); that it runs them has never been checked.
 * Skipped (77) in a build without the CUDA toolkit. */
#include <stdio.h>

#ifndef RAF_HAVE_CUDA
int main(void) {
  fprintf(stderr, "test_cuda_move: built without CUDA\n");
  return 77;
}
#else
#include "ir/ir.h"
#include "runtime/cuda/kernels.h"

#include <string.h>

static int failures;
#include "test/unit/check.h"

/* The kernel's loop, on the host: dst[off_dst(i)] = src[off_src(i)]. */
static void run(const raf_move *m, float *dst, const float *src) {
  for (int64_t i = 0; i < m->n; i++)
    dst[raf_move_offset(m, i, 0)] = src[raf_move_offset(m, i, 1)];
}

static void test_transpose(void) {
  /* x: [2,3,4] = 0..23; perm [2,0,1] gives y[c,a,b] = x[a,b,c]. */
  float x[24], y[24];
  for (int i = 0; i < 24; i++)
    x[i] = (float)i;
  int64_t dims[] = {2, 3, 4};
  int perm[] = {2, 0, 1};
  raf_move m;
  CHECK(raf_move_transpose(dims, 3, perm, &m));
  CHECK(m.n == 24);
  memset(y, 0xff, sizeof y);
  run(&m, y, x);
  for (int c = 0; c < 4; c++)
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 3; b++)
        CHECK(y[(c * 2 + a) * 3 + b] == x[(a * 3 + b) * 4 + c]);
  int64_t big[RAF_MOVE_MAX_RANK + 1];
  int p[RAF_MOVE_MAX_RANK + 1];
  for (int d = 0; d <= RAF_MOVE_MAX_RANK; d++)
    big[d] = 1, p[d] = d;
  CHECK(!raf_move_transpose(big, RAF_MOVE_MAX_RANK + 1, p, &m));
}

static void test_concat_split(void) {
  /* a: [2,1,3], b: [2,2,3] concatenated on axis 1 into w: [2,3,3]. */
  float a[6], b[12], w[18], a2[6], b2[12];
  for (int i = 0; i < 6; i++)
    a[i] = (float)(100 + i);
  for (int i = 0; i < 12; i++)
    b[i] = (float)(200 + i);
  int64_t ad[] = {2, 1, 3}, bd[] = {2, 2, 3}, wd[] = {2, 3, 3};
  raf_move m;
  memset(w, 0xff, sizeof w);
  CHECK(raf_move_block(ad, wd, 3, 1, 0, true, &m));
  run(&m, w, a);
  CHECK(raf_move_block(bd, wd, 3, 1, 1, true, &m));
  run(&m, w, b);
  for (int o = 0; o < 2; o++)
    for (int j = 0; j < 3; j++)
      for (int c = 0; c < 3; c++)
        CHECK(w[(o * 3 + j) * 3 + c] ==
              (j == 0 ? a[o * 3 + c] : b[(o * 2 + j - 1) * 3 + c]));
  /* split is the inverse. */
  CHECK(raf_move_block(ad, wd, 3, 1, 0, false, &m));
  run(&m, a2, w);
  CHECK(raf_move_block(bd, wd, 3, 1, 1, false, &m));
  run(&m, b2, w);
  CHECK(memcmp(a, a2, sizeof a) == 0);
  CHECK(memcmp(b, b2, sizeof b) == 0);
  CHECK(!raf_move_block(ad, wd, 3, 3, 0, true, &m));
}

/* take_grad's ownership against a scatter-add: every (index, row) pair is
 * owned by exactly the row its index lands on, so each dy row is summed
 * once, into the right table row. */
static void test_take_grad_owns(void) {
  const int64_t dim = 5, idx[] = {0, 4, -1, 2, 0, -5};
  const int nidx = 6, inner = 2;
  float dy[12], want[10] = {0}, got[10];
  for (int i = 0; i < 12; i++)
    dy[i] = (float)(i + 1) * 0.5f;
  for (int i = 0; i < nidx; i++) {
    int64_t x = idx[i] < 0 ? idx[i] + dim : idx[i];
    for (int c = 0; c < inner; c++)
      want[x * inner + c] += dy[i * inner + c];
  }
  for (int64_t x = 0; x < dim; x++)
    for (int c = 0; c < inner; c++) {
      float acc = 0.0f;
      for (int i = 0; i < nidx; i++)
        if (raf_take_grad_owns(idx[i], dim, x))
          acc += dy[i * inner + c];
      got[x * inner + c] = acc;
    }
  CHECK(memcmp(want, got, sizeof want) == 0);
  for (int i = 0; i < nidx; i++) {
    int n = 0;
    for (int64_t x = 0; x < dim; x++)
      n += raf_take_grad_owns(idx[i], dim, x);
    CHECK(n == 1);
  }
}

/* argmax's row scan: cpu-ref's rule (the first largest; the first NaN). */
static void test_argmax_row(void) {
  const float nan = __builtin_nanf("");
  const float ties[] = {1, 5, 2, 5}, first_nan[] = {1, nan, 9, nan},
              lead_nan[] = {nan, 3}, neg[] = {-3, -1, -2};
  CHECK(raf_argmax_row_f32(ties, 4, 1) == 1);
  CHECK(raf_argmax_row_f32(first_nan, 4, 1) == 1);
  CHECK(raf_argmax_row_f32(lead_nan, 2, 1) == 0);
  CHECK(raf_argmax_row_f32(neg, 3, 1) == 1);
  /* {5, 5}, every other element from ties[1]: a tie, the first wins. */
  CHECK(raf_argmax_row_f32(ties + 1, 2, 2) == 0);
  CHECK(raf_argmax_row_f32(ties, 1, 1) == 0);
}

static void test_slice(void) {
  /* x: [4,5] = 0..19; x[3:-5:-1, 1:100:2] is [4,2], y[i,j] = x[3-i, 1+2j],
   * the windows raf_slice_range reads as cpu-ref does. */
  float x[20], y[8], back[20];
  for (int i = 0; i < 20; i++)
    x[i] = (float)i;
  int64_t xd[] = {4, 5}, yd[2], start[2], step[] = {-1, 2};
  yd[0] = raf_slice_range(4, 3, -5, -1, &start[0]);
  yd[1] = raf_slice_range(5, 1, 100, 2, &start[1]);
  CHECK(yd[0] == 4 && yd[1] == 2 && start[0] == 3 && start[1] == 1);
  raf_move m;
  CHECK(raf_move_slice(yd, xd, 2, start, step, false, &m));
  CHECK(m.n == 8);
  run(&m, y, x);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      CHECK(y[i * 2 + j] == x[(3 - i) * 5 + 1 + 2 * j]);
  /* slice_grad: y back into zeros where the slice read it. */
  memset(back, 0, sizeof back);
  CHECK(raf_move_slice(yd, xd, 2, start, step, true, &m));
  run(&m, back, y);
  for (int i = 0; i < 20; i++)
    CHECK(back[i] == (i % 5 == 1 || i % 5 == 3 ? x[i] : 0.0f));
  /* An empty window copies nothing, wherever it starts. */
  int64_t ed[] = {0, 2};
  ed[0] = raf_slice_range(4, 9, 12, 1, &start[0]);
  CHECK(ed[0] == 0 && raf_move_slice(ed, xd, 2, start, step, false, &m));
  CHECK(m.n == 0);
}

int main(void) {
  test_slice();
  test_argmax_row();
  test_transpose();
  test_concat_split();
  test_take_grad_owns();
  if (failures)
    fprintf(stderr, "test_cuda_move: %d failures\n", failures);
  return failures != 0;
}
#endif
