/* ptrmap.c: the pointer map of ptrmap.h. */
#include "passes/ptrmap.h"

#include <stdint.h>
#include <stdlib.h>

static size_t ptr_hash(const void *p) {
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
  return (size_t)(h ^ (h >> 29));
}

void *raf_ptrmap_get(const raf_ptrmap *m, const void *k) {
  if (!m->cap)
    return NULL;
  for (size_t i = ptr_hash(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == k)
      return m->vals[i];
    if (!m->keys[i])
      return NULL;
  }
}

bool raf_ptrmap_put(raf_ptrmap *m, const void *k, void *v) {
  if (2 * (m->count + 1) > m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 64;
    raf_ptrmap g = {calloc(cap, sizeof *g.keys), calloc(cap, sizeof *g.vals),
                    cap, 0};
    if (!g.keys || !g.vals) {
      free(g.keys);
      free(g.vals);
      return false;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i])
        raf_ptrmap_put(&g, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = g;
  }
  size_t i = ptr_hash(k) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != k)
    i = (i + 1) & (m->cap - 1);
  m->count += !m->keys[i];
  m->keys[i] = k;
  m->vals[i] = v;
  return true;
}

void raf_ptrmap_free(raf_ptrmap *m) {
  free(m->keys);
  free(m->vals);
  *m = (raf_ptrmap){0};
}
