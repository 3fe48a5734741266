/* philox.c: Philox 4x32-10 (see philox.h): ten rounds of two 32x32->64-bit
 * multiplications, with the key bumped by Weyl constants between rounds. */
#include "runtime/philox.h"

enum {
  PHILOX_M0 = 0xD2511F53u,
  PHILOX_M1 = 0xCD9E8D57u,
  PHILOX_W0 = 0x9E3779B9u, /* golden ratio */
  PHILOX_W1 = 0xBB67AE85u  /* sqrt(3) - 1 */
};

void raf_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                       uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    if (round) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1,
             n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

float raf_philox_uniform(uint32_t word) {
  return (float)(word >> 8) * (1.0f / 16777216.0f);
}
