/* init.h: making parameters from their `init` attribute.
 *
 * Random inits draw from Philox 4x32-10 (runtime/philox.h), so a tensor is
 * a pure function of (seed, stream, element index): the same seed gives the
 * same bits on every run, at every thread count. Element i of stream s
 * uses the counter {lo32(i), hi32(i), s, 0} and the key {lo32(seed),
 * hi32(seed)}; uniform(LOW, HIGH) maps word 0 to LOW + (HIGH - LOW) * u,
 * normal(MEAN, STD) applies Box-Muller to words 0 and 1 (u1 in (0, 1]).
 * raf-run uses the argument's index as its stream.
 */
#ifndef RAF_INIT_H
#define RAF_INIT_H

#include "runtime/kernel.h"

void raf_init_fill(raf_tensor *t, const raf_init_spec *spec, uint64_t seed,
                   uint32_t stream);

#endif
