/* oracle.c: running the user's test on a candidate module.
 *
 * The test is a program (usually a shell script) run as
 *   TEST [TEST-ARGS...] CANDIDATE.raf
 * as llvm-reduce runs its --test; exit status 0 means "still interesting".
 * The candidate is one temporary file, rewritten for every run, whose name
 * ends in .raf so that tools which look at the suffix accept it.
 *
 * The test runs in a process group of its own with standard input from
 * /dev/null and its output discarded (unless verbose). A time limit is an
 * alarm set in the child before exec: SIGALRM ends the test, and the rest of
 * its group (the tools it started) is killed with it, so a hanging
 * candidate counts as boring instead of stalling the reduction.
 *
 * Texts already tried are remembered by a 64-bit FNV-1a hash: different
 * reductions often produce the same candidate (a statement that dead-code
 * removal takes anyway), and each repeat would cost a run of the test.
 */
#define _DEFAULT_SOURCE /* mkstemps */
#include "raf-reduce/reduce.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

bool reduce_oracle_init(reduce_oracle *o, char *err, size_t errsize) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir)
    dir = "/tmp";
  size_t n = strlen(dir) + sizeof "/raf-reduce-XXXXXX.raf";
  o->path = malloc(n);
  if (!o->path) {
    snprintf(err, errsize, "out of memory");
    return false;
  }
  snprintf(o->path, n, "%s/raf-reduce-XXXXXX.raf", dir);
  int fd = mkstemps(o->path, 4);
  if (fd < 0) {
    snprintf(err, errsize, "cannot create a temporary file in %s: %s", dir,
             strerror(errno));
    free(o->path);
    o->path = NULL;
    return false;
  }
  close(fd);
  return true;
}

void reduce_oracle_free(reduce_oracle *o) {
  if (o->path)
    unlink(o->path);
  free(o->path);
  free(o->seen);
  o->path = NULL;
  o->seen = NULL;
}

static uint64_t text_hash(const char *text, size_t len) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)text[i];
    h *= 1099511628211ull;
  }
  return h ? h : 1; /* 0 marks an empty slot */
}

/* Adds h to the set; returns false when it was there already. */
static bool remember(reduce_oracle *o, uint64_t h) {
  if (2 * (o->nseen + 1) > o->capseen) {
    size_t cap = o->capseen ? 2 * o->capseen : 256;
    uint64_t *seen = calloc(cap, sizeof *seen);
    if (!seen)
      return true; /* without memory the cache just stops growing */
    for (size_t i = 0; i < o->capseen; i++)
      if (o->seen[i])
        for (size_t j = o->seen[i] & (cap - 1);; j = (j + 1) & (cap - 1))
          if (!seen[j]) {
            seen[j] = o->seen[i];
            break;
          }
    free(o->seen);
    o->seen = seen;
    o->capseen = cap;
  }
  for (size_t j = h & (o->capseen - 1);; j = (j + 1) & (o->capseen - 1)) {
    if (o->seen[j] == h)
      return false;
    if (!o->seen[j]) {
      o->seen[j] = h;
      o->nseen++;
      return true;
    }
  }
}

static bool write_candidate(const reduce_oracle *o, const char *text,
                            size_t len) {
  FILE *f = fopen(o->path, "wb");
  if (!f)
    return false;
  bool ok = fwrite(text, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

/* In the child: becomes the test. Never returns. */
static void exec_test(const reduce_oracle *o) {
  setpgid(0, 0);
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    if (!o->verbose) {
      dup2(null, 1);
      dup2(null, 2);
    }
    if (null > 2)
      close(null);
  }
  signal(SIGALRM, SIG_DFL);
  if (o->timeout > 0)
    alarm(o->timeout < 1 ? 1 : (unsigned)(o->timeout + 0.5));
  const char **argv = malloc(sizeof *argv * (size_t)(o->nargs + 3));
  if (!argv)
    _exit(127);
  argv[0] = o->test;
  for (int i = 0; i < o->nargs; i++)
    argv[1 + i] = o->args[i];
  argv[1 + o->nargs] = o->path;
  argv[2 + o->nargs] = NULL;
  execv(o->test, (char *const *)argv);
  _exit(127);
}

reduce_verdict reduce_oracle_run(reduce_oracle *o, const char *text,
                                 size_t len, bool use_cache, int *status) {
  if (use_cache && !remember(o, text_hash(text, len))) {
    o->cache_hits++;
    return REDUCE_SEEN;
  }
  if (!write_candidate(o, text, len))
    return REDUCE_FAILED;
  fflush(NULL); /* nothing buffered is written twice by the child */
  pid_t pid = fork();
  if (pid < 0)
    return REDUCE_FAILED;
  if (pid == 0)
    exec_test(o);
  int ws;
  while (waitpid(pid, &ws, 0) < 0)
    if (errno != EINTR)
      return REDUCE_FAILED;
  o->runs++;
  if (WIFSIGNALED(ws)) {
    if (WTERMSIG(ws) == SIGALRM) {
      o->timeouts++;
      kill(-pid, SIGKILL); /* what the test started, still running */
    }
    *status = 128 + WTERMSIG(ws);
    return REDUCE_BORING;
  }
  *status = WEXITSTATUS(ws);
  return *status == 0 ? REDUCE_INTERESTING : REDUCE_BORING;
}
