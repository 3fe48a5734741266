/* stream_triad.c: the memory-bandwidth baseline of bench/adamw.sh, STREAM's
 * triad a[i] = b[i] + s * c[i] on f64 arrays of N elements each (far larger
 * than the caches), split statically over THREADS OpenMP threads; the
 * arrays are first touched by the same split, so pages sit near the thread
 * that uses them. Counts 24 bytes per element (read b and c, write a; as
 * STREAM, the write-allocate read of a is not counted) and prints the best
 * of REPEATS repeats after one warm-up, as STREAM reports, in GB/s (1e9):
 *   {"triad_gbs": X, "n": N, "threads": T, "ms": [...]}
 *   stream_triad N REPEATS THREADS
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s N REPEATS THREADS\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]);
  int repeats = atoi(argv[2]), threads = atoi(argv[3]);
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
         *c = malloc(n * sizeof *c);
  if (n <= 0 || repeats <= 0 || threads <= 0 || !a || !b || !c) {
    fprintf(stderr, "stream_triad: bad arguments or out of memory\n");
    return 1;
  }
  omp_set_num_threads(threads);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  const double s = 3;
  double best = 1e30, check = 0;
  printf("{\"n\": %ld, \"threads\": %d, \"ms\": [", n, threads);
  for (int r = 0; r <= repeats; r++) { /* r = 0: the warm-up */
    double t0 = now_s();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
      a[i] = b[i] + s * c[i];
    double t = now_s() - t0;
    check += a[n / 2];
    if (r > 0) {
      printf("%s%.3f", r > 1 ? ", " : "", t * 1e3);
      if (t < best)
        best = t;
    }
  }
  if (check != 7.0 * (repeats + 1)) {
    fprintf(stderr, "stream_triad: wrong result\n");
    return 1;
  }
  printf("], \"triad_gbs\": %.3f}\n", 24.0 * n / best / 1e9);
  free(a);
  free(b);
  free(c);
  return 0;
}
