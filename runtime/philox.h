/* philox.h: the Philox 4x32-10 counter-based generator (Salmon et al., 2011,
 * "Parallel random numbers: as easy as 1, 2, 3").
 *
 * A block of four 32-bit random words is a pure function of a 128-bit
 * counter and a 64-bit key, so element i of a random tensor can be made by
 * any thread in any order and always gets the same bits: `init` of params
 * and the masks of `dropout` are built on it.
 */
#ifndef RAF_PHILOX_H
#define RAF_PHILOX_H

#include <stdint.h>

/* out = Philox4x32-10(ctr, key). */
void raf_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                       uint32_t out[4]);
/* A float uniform in [0, 1) from the top 24 bits of a word. */
float raf_philox_uniform(uint32_t word);

#endif
