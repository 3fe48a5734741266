/* matmul_openblas.c: the baseline of bench/matmul.sh: cblas_sgemm called
 * directly on row-major f32 matrices, C [M, N] = A [M, K] B [K, N], timed
 * per call and written as raf-run's --log lines ({"step": i, "ms": x}), so
 * that one script reads both. Same library, same thread count as raf-run.
 *   matmul_openblas M K N STEPS THREADS LOG
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s M K N STEPS THREADS LOG\n", argv[0]);
    return 2;
  }
  int m = atoi(argv[1]), k = atoi(argv[2]), n = atoi(argv[3]);
  int steps = atoi(argv[4]), threads = atoi(argv[5]);
  FILE *log = fopen(argv[6], "w");
  float *a = malloc((size_t)m * k * sizeof *a);
  float *b = malloc((size_t)k * n * sizeof *b);
  float *c = malloc((size_t)m * n * sizeof *c);
  if (m <= 0 || k <= 0 || n <= 0 || steps <= 0 || threads <= 0 || !log ||
      !a || !b || !c) {
    fprintf(stderr, "matmul_openblas: bad arguments or out of memory\n");
    return 1;
  }
  /* Values in [-1, 1): the speed of sgemm does not depend on them. */
  unsigned s = 1;
  for (size_t i = 0; i < (size_t)m * k; i++)
    a[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 8388608.0f - 1.0f;
  for (size_t i = 0; i < (size_t)k * n; i++)
    b[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 8388608.0f - 1.0f;
  openblas_set_num_threads(threads);
  for (int step = 1; step <= steps; step++) {
    double t0 = now_ms();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a,
                k, b, n, 0.0f, c, n);
    fprintf(log, "{\"step\": %d, \"ms\": %.4f}\n", step, now_ms() - t0);
  }
  fclose(log);
  free(a);
  free(b);
  free(c);
  return 0;
}
