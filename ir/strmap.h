/* strmap.h: an open-addressing hash map from strings to pointers.
 *
 * Keys are not copied: the caller keeps them alive as long as the map (they
 * live in the module arena). The slot array is malloc'd and freed by
 * raf_strmap_free.
 */
#ifndef RAF_STRMAP_H
#define RAF_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct raf_strmap_slot {
  const char *key;
  uint32_t len;
  uint32_t hash;
  void *value;
} raf_strmap_slot;

typedef struct raf_strmap {
  raf_strmap_slot *slots;
  size_t cap, count;
} raf_strmap;

void raf_strmap_init(raf_strmap *m);
void raf_strmap_free(raf_strmap *m);
/* The value stored under key[0..len), or NULL. */
void *raf_strmap_get(const raf_strmap *m, const char *key, size_t len);
/* Stores value under key (NUL-terminated, len bytes), replacing any old one.
 * Returns false only when out of memory. */
bool raf_strmap_put(raf_strmap *m, const char *key, size_t len, void *value);
/* Removes key if present. */
void raf_strmap_remove(raf_strmap *m, const char *key, size_t len);

#endif
