/* test_suggest.c: raf_suggest, the one "did you mean" of raf: the closest
 * name by edit distance (an adjacent swap is one edit), within a third of
 * the word, ties to the earlier name, no suggestion of the word itself. */
#include "include/raf/raf.h"

#include <string.h>

static int failures;
#include "test/unit/check.h"

static const char *suggest(const char *word, const char *const *names,
                           size_t n) {
  return raf_suggest(word, strlen(word), names, n);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static bool is(const char *got, const char *want) {
  return got && strcmp(got, want) == 0;
}

int main(void) {
  static const char *const ops[] = {"matmul", "relu", "sum", "mean",
                                    "softmax", "log_softmax"};
  CHECK(is(suggest("matmull", ops, N(ops)), "matmul")); /* insertion */
  CHECK(is(suggest("matmu", ops, N(ops)), "matmul"));   /* deletion */
  CHECK(is(suggest("relv", ops, N(ops)), "relu"));      /* substitution */
  CHECK(is(suggest("rleu", ops, N(ops)), "relu"));      /* swap: one edit */
  CHECK(is(suggest("sofmtax", ops, N(ops)), "softmax"));
  CHECK(is(suggest("log_sotfmax", ops, N(ops)), "log_softmax"));
  /* Too far: a third of the word, at least one character. */
  CHECK(suggest("frobnicate", ops, N(ops)) == NULL);
  CHECK(suggest("xyz", ops, N(ops)) == NULL);
  CHECK(is(suggest("mtamlu", ops, N(ops)), "matmul")); /* two swaps */
  CHECK(suggest("xxxmul", ops, N(ops)) == NULL);     /* three edits */
  /* The word itself is no suggestion. */
  CHECK(suggest("relu", ops, N(ops)) == NULL);
  /* Ties go to the earlier name. */
  static const char *const ties[] = {"axes", "axis"};
  CHECK(is(suggest("axs", ties, N(ties)), "axes"));
  /* Only len characters of the word count (a flag's "=value" is cut). */
  static const char *const flags[] = {"emit", "stats"};
  CHECK(is(raf_suggest("emitt=dot", 5, flags, N(flags)), "emit"));
  /* Empty words, empty lists, NULL and overlong names. */
  CHECK(suggest("", ops, N(ops)) == NULL);
  CHECK(raf_suggest("relu", 4, NULL, 0) == NULL);
  static const char *const odd[] = {NULL, "", "relu"};
  CHECK(is(suggest("rlu", odd, N(odd)), "relu"));
  char longword[200];
  memset(longword, 'a', sizeof longword - 1);
  longword[sizeof longword - 1] = 0;
  static const char *const as[] = {"aaaa"};
  CHECK(suggest(longword, as, N(as)) == NULL);
  return failures != 0;
}
