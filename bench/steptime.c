/* steptime.c: an LD_PRELOAD library for bench's scripts that timestamps
 * raf-run's steps from the outside. raf-run's --log "ms" is the time of
 * the function call alone; after it raf-run stores every {updates} result
 * into its argument (a copy, unless the function is memory-planned), frees
 * the results and feeds the next batch. This library wraps fprintf: each
 * time raf-run writes a --log line (format starting {"step": ), it appends
 * the CLOCK_MONOTONIC time in ms to $RAF_STEP_TIMES, one line per step.
 * The difference of consecutive lines is the whole period of a step, what
 * a training loop pays. Nothing in raf is changed; with another format the
 * file stays empty and the scripts say so.
 *   cc -O2 -shared -fPIC bench/steptime.c -o steptime.so
 *   RAF_STEP_TIMES=t.txt LD_PRELOAD=./steptime.so raf-run ... --log=l.jsonl
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fprintf(FILE *f, const char *fmt, ...) {
  static int fd = -2;
  if (strncmp(fmt, "{\"step\": ", 9) == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (fd == -2) {
      const char *path = getenv("RAF_STEP_TIMES");
      fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                : -1;
    }
    if (fd >= 0)
      dprintf(fd, "%.4f\n", ts.tv_sec * 1e3 + ts.tv_nsec / 1e6);
  }
  va_list ap;
  va_start(ap, fmt);
  int r = vfprintf(f, fmt, ap);
  va_end(ap);
  return r;
}
