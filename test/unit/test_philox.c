/* test_philox.c: Philox 4x32-10 against the known-answer vectors published
 * with the Random123 library, and the range of the uniform conversion. */
#include "runtime/philox.h"

#include <stdio.h>

int main(void) {
  static const struct {
    uint32_t ctr[4], key[2], want[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  int failures = 0;
  for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
    uint32_t out[4];
    raf_philox4x32_10(kat[k].ctr, kat[k].key, out);
    for (int i = 0; i < 4; i++)
      if (out[i] != kat[k].want[i]) {
        fprintf(stderr, "vector %zu word %d: %08x, want %08x\n", k, i,
                out[i], kat[k].want[i]);
        failures++;
      }
  }
  if (raf_philox_uniform(0) != 0.0f || !(raf_philox_uniform(0xffffffffu) < 1.0f)) {
    fprintf(stderr, "uniform out of [0, 1)\n");
    failures++;
  }
  return failures != 0;
}
