/* philox.h: the Philox 4x32-10 counter-based generator (Salmon et al., 2011,
 * "Parallel random numbers: as easy as 1, 2, 3"), and dropout's mask.
 *
 * A block of four 32-bit random words is a pure function of a 128-bit
 * counter and a 64-bit key, so element i of a random tensor can be made by
 * any thread in any order and always gets the same bits: `init` of params
 * and the masks of `dropout` are built on it. The functions are inline,
 * and compiled by nvcc for the GPU too (runtime/cuda/kernels.cu), so that
 * cpu-ref and the cuda dialect draw the same masks from one definition.
 */
#ifndef RAF_PHILOX_H
#define RAF_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define RAF_PHILOX_FN static inline __host__ __device__
#else
#define RAF_PHILOX_FN static inline
#endif

/* out = Philox4x32-10(ctr, key): ten rounds of two 32x32->64-bit
 * multiplications, with the key bumped by Weyl constants between rounds. */
RAF_PHILOX_FN void raf_philox4x32_10(const uint32_t ctr[4],
                                     const uint32_t key[2], uint32_t out[4]) {
  const uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  const uint32_t w0 = 0x9E3779B9u /* golden ratio */,
                 w1 = 0xBB67AE85u /* sqrt(3) - 1 */;
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    if (round) {
      k0 += w0;
      k1 += w1;
    }
    uint64_t p0 = (uint64_t)m0 * c0, p1 = (uint64_t)m1 * c2;
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

/* A float uniform in [0, 1) from the top 24 bits of a word. */
RAF_PHILOX_FN float raf_philox_uniform(uint32_t word) {
  return (float)(word >> 8) * (1.0f / 16777216.0f);
}

/* dropout's stream: the counter's third word, apart from raf-run's init
 * streams (argument indices). */
#define RAF_DROPOUT_STREAM 0xD50u

/* Whether dropout {p} with this key keeps element i (C order): one block
 * at counter {lo32(i), hi32(i), RAF_DROPOUT_STREAM, 0} and key {lo32(key),
 * hi32(key)}; kept iff the uniform of its word 0 is at least p (compared
 * in double). */
RAF_PHILOX_FN int raf_dropout_keeps(uint64_t i, uint64_t key, double p) {
  const uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32),
                           RAF_DROPOUT_STREAM, 0};
  const uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
  uint32_t w[4];
  raf_philox4x32_10(ctr, k, w);
  return (double)raf_philox_uniform(w[0]) >= p;
}

#endif
