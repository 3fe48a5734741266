/* arena.c: the module arena (see arena.h). Chunks grow geometrically so a
 * million-statement module needs few mallocs. */
#include "ir/arena.h"

#include <stdlib.h>
#include <string.h>

struct raf_arena_chunk {
  raf_arena_chunk *next;
  size_t size;
  /* data follows, 16-byte aligned */
};

#define CHUNK_HEADER ((sizeof(raf_arena_chunk) + 15) & ~(size_t)15)
#define FIRST_CHUNK (64 * 1024)
#define MAX_CHUNK (64 * 1024 * 1024)

void raf_arena_init(raf_arena *a) { memset(a, 0, sizeof *a); }

void raf_arena_free(raf_arena *a) {
  raf_arena_chunk *c = a->head;
  while (c) {
    raf_arena_chunk *next = c->next;
    free(c);
    c = next;
  }
  memset(a, 0, sizeof *a);
}

void *raf_arena_alloc(raf_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size == 0)
    size = 16;
  if ((size_t)(a->end - a->cur) < size) {
    size_t prev = a->head ? a->head->size : FIRST_CHUNK / 2;
    size_t want = prev * 2 > MAX_CHUNK ? MAX_CHUNK : prev * 2;
    if (want < size)
      want = size;
    raf_arena_chunk *c = malloc(CHUNK_HEADER + want);
    if (!c)
      return NULL;
    c->next = a->head;
    c->size = want;
    a->head = c;
    a->total += want;
    a->cur = (char *)c + CHUNK_HEADER;
    a->end = a->cur + want;
    /* Fresh pages from malloc are not guaranteed zero; clear on use below. */
  }
  void *p = a->cur;
  a->cur += size;
  memset(p, 0, size);
  return p;
}

char *raf_arena_strndup(raf_arena *a, const char *s, size_t len) {
  char *p = raf_arena_alloc(a, len + 1);
  if (p) {
    memcpy(p, s, len);
    p[len] = 0;
  }
  return p;
}

void *raf_arena_memdup(raf_arena *a, const void *src, size_t size) {
  void *p = raf_arena_alloc(a, size);
  if (p && size)
    memcpy(p, src, size);
  return p;
}
