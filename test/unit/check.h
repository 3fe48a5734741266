/* check.h: the one assertion macro of the C unit tests. Each test file
 * defines `static int failures;` before including it and returns non-zero
 * from main when any check failed. */
#ifndef RAF_TEST_CHECK_H
#define RAF_TEST_CHECK_H

#include <stdio.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#endif
