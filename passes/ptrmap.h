/* ptrmap.h: a hash map from pointers to pointers, the scratch table of the
 * passes that relate IR objects (a value to its gradient, to its cast).
 *
 * Open addressing with linear probing; the zero-initialised struct is an
 * empty map. Keys are never NULL; a NULL value reads the same as absent.
 * The map owns its tables and nothing it points to.
 */
#ifndef RAF_PASSES_PTRMAP_H
#define RAF_PASSES_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct raf_ptrmap {
  const void **keys;
  void **vals;
  size_t cap, count;
} raf_ptrmap;

/* The value stored for k, or NULL. */
void *raf_ptrmap_get(const raf_ptrmap *m, const void *k);
/* Stores v for k (replacing any); false when out of memory. */
bool raf_ptrmap_put(raf_ptrmap *m, const void *k, void *v);
/* Frees the tables and leaves an empty map. */
void raf_ptrmap_free(raf_ptrmap *m);

#endif
