/* strmap.c: linear-probing string map (see strmap.h). Removal uses backward
 * shift deletion, so there are no tombstones. */
#include "ir/strmap.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_bytes(const char *s, size_t len) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

void raf_strmap_init(raf_strmap *m) { memset(m, 0, sizeof *m); }

void raf_strmap_free(raf_strmap *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

static size_t find_slot(const raf_strmap *m, const char *key, size_t len,
                        uint32_t h) {
  size_t mask = m->cap - 1, i = h & mask;
  for (;;) {
    const raf_strmap_slot *s = &m->slots[i];
    if (!s->key ||
        (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0))
      return i;
    i = (i + 1) & mask;
  }
}

void *raf_strmap_get(const raf_strmap *m, const char *key, size_t len) {
  if (!m->cap)
    return NULL;
  size_t i = find_slot(m, key, len, hash_bytes(key, len));
  return m->slots[i].key ? m->slots[i].value : NULL;
}

static bool grow(raf_strmap *m) {
  size_t cap = m->cap ? m->cap * 2 : 16;
  raf_strmap_slot *slots = calloc(cap, sizeof *slots);
  if (!slots)
    return false;
  raf_strmap old = *m;
  m->slots = slots;
  m->cap = cap;
  for (size_t i = 0; i < old.cap; i++)
    if (old.slots[i].key)
      m->slots[find_slot(m, old.slots[i].key, old.slots[i].len,
                         old.slots[i].hash)] = old.slots[i];
  free(old.slots);
  return true;
}

bool raf_strmap_put(raf_strmap *m, const char *key, size_t len, void *value) {
  if ((m->count + 1) * 4 > m->cap * 3 && !grow(m))
    return false;
  uint32_t h = hash_bytes(key, len);
  size_t i = find_slot(m, key, len, h);
  if (!m->slots[i].key) {
    m->slots[i] = (raf_strmap_slot){key, (uint32_t)len, h, value};
    m->count++;
  } else {
    m->slots[i].value = value;
  }
  return true;
}

void raf_strmap_remove(raf_strmap *m, const char *key, size_t len) {
  if (!m->cap)
    return;
  size_t mask = m->cap - 1, i = find_slot(m, key, len, hash_bytes(key, len));
  if (!m->slots[i].key)
    return;
  m->slots[i].key = NULL;
  m->count--;
  /* Shift later members of the cluster back into the hole. */
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (!m->slots[j].key)
      return;
    size_t home = m->slots[j].hash & mask;
    bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (in_range)
      continue;
    m->slots[i] = m->slots[j];
    m->slots[j].key = NULL;
    i = j;
  }
}
