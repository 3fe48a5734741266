/* suggest.c: "did you mean" for misspelt names.
 *
 * Every place that rejects an unknown name (operators, attributes, passes,
 * pass options, command-line flags, architectures) asks raf_suggest for
 * the closest known one, so that all of them judge a typo alike. The
 * distance is the optimal string alignment distance: Levenshtein's
 * insertions, deletions and substitutions, plus the swap of two adjacent
 * characters as one edit, since `rleu` for `relu` is one slip of the
 * fingers, not two.
 */
#include "include/raf/raf.h"

#include <string.h>

/* Names longer than this are not typos of anything we know. */
#define LONGEST 64

/* The optimal string alignment distance of a and b, both at most LONGEST
 * characters: three rows of the dynamic programme suffice. */
static size_t edit_distance(const char *a, size_t alen, const char *b,
                            size_t blen) {
  size_t rows[3][LONGEST + 1];
  size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= blen; j++)
    prev[j] = j;
  for (size_t i = 1; i <= alen; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= blen; j++) {
      size_t cost = a[i - 1] != b[j - 1];
      size_t d = prev[j - 1] + cost;
      if (prev[j] + 1 < d)
        d = prev[j] + 1;
      if (cur[j - 1] + 1 < d)
        d = cur[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          prev2[j - 2] + 1 < d)
        d = prev2[j - 2] + 1;
      cur[j] = d;
    }
    size_t *t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[blen];
}

const char *raf_suggest(const char *word, size_t len,
                        const char *const *names, size_t n) {
  /* A third of the word may be wrong, and always one character: short
   * names have few letters to get wrong, long ones more. */
  size_t allowed = len / 3 > 1 ? len / 3 : 1;
  const char *best = NULL;
  size_t best_distance = allowed + 1;
  if (len == 0 || len > LONGEST)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    size_t nlen = names[i] ? strlen(names[i]) : 0;
    if (nlen == 0 || nlen > LONGEST)
      continue;
    size_t d = edit_distance(word, len, names[i], nlen);
    /* An exact match is no typo: the caller rejected the name for another
     * reason, and suggesting it back would only confuse. */
    if (d > 0 && d < best_distance) {
      best = names[i];
      best_distance = d;
    }
  }
  return best;
}
