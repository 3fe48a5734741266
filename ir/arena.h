/* arena.h: bump allocation for IR that lives as long as its module.
 *
 * Every IR object is allocated from its module's arena and freed all at once
 * with it (docs/Design.md, principle 4). A pass that needs scratch memory makes its
 * own arena and destroys it when it ends. Allocation never fails silently:
 * raf_arena_alloc returns NULL only when malloc does.
 */
#ifndef RAF_ARENA_H
#define RAF_ARENA_H

#include <stddef.h>

typedef struct raf_arena_chunk raf_arena_chunk;
typedef struct raf_arena {
  raf_arena_chunk *head;
  char *cur, *end;
  size_t total; /* bytes obtained from malloc, for statistics */
} raf_arena;

void raf_arena_init(raf_arena *a);
void raf_arena_free(raf_arena *a);
/* Zeroed, 16-byte aligned memory owned by the arena. */
void *raf_arena_alloc(raf_arena *a, size_t size);
/* A NUL-terminated copy of s[0..len) owned by the arena. */
char *raf_arena_strndup(raf_arena *a, const char *s, size_t len);
void *raf_arena_memdup(raf_arena *a, const void *p, size_t size);

#define RAF_NEW(arena, T) ((T *)raf_arena_alloc((arena), sizeof(T)))
#define RAF_NEW_ARRAY(arena, T, n)                                              \
  ((T *)raf_arena_alloc((arena), sizeof(T) * (size_t)(n)))

#endif
