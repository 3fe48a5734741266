/* init.c: parameter initialisation from `init` (the rule is in init.h). */
#include "runtime/init.h"

#include "runtime/philox.h"

#include <math.h>

void raf_init_fill(raf_tensor *t, const raf_init_spec *spec, uint64_t seed,
                   uint32_t stream) {
  raf_dtype dt = t->type->dtype;
  const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  for (int64_t i = 0; i < t->type->numel; i++) {
    double v = spec->kind == RAF_INIT_ONES       ? 1.0
               : spec->kind == RAF_INIT_CONSTANT ? spec->a
                                                 : 0.0;
    if (spec->kind == RAF_INIT_NORMAL || spec->kind == RAF_INIT_UNIFORM) {
      const uint32_t ctr[4] = {(uint32_t)i, (uint32_t)((uint64_t)i >> 32),
                               stream, 0};
      uint32_t w[4];
      raf_philox4x32_10(ctr, key, w);
      double u = raf_philox_uniform(w[0]);
      if (spec->kind == RAF_INIT_UNIFORM) {
        v = spec->a + (spec->b - spec->a) * u;
      } else {
        double u1 = 1.0 - u; /* (0, 1]: log is finite */
        double u2 = raf_philox_uniform(w[1]);
        v = spec->a +
            spec->b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
      }
    }
    raf_elem_set_f64(dt, t->data, i, v);
  }
}
