/* pool.h: a fixed pool of worker threads for data-parallel kernels.
 *
 * raf_pool_run hands out chunk numbers 0..nchunks-1 to the calling thread
 * and the workers until all are done, then returns. Which thread runs a
 * chunk varies; what a chunk computes must not depend on it.
 */
#ifndef RAF_POOL_H
#define RAF_POOL_H

#include <stdint.h>

typedef struct raf_pool raf_pool;

/* A pool of nthreads threads in all, the caller included (nthreads - 1
 * workers); NULL when out of memory or threads. nthreads <= 1 makes a pool
 * that runs everything on the caller. */
raf_pool *raf_pool_create(int nthreads);
void raf_pool_destroy(raf_pool *p);
int raf_pool_threads(const raf_pool *p);
void raf_pool_run(raf_pool *p, int64_t nchunks,
                  void (*chunk)(void *data, int64_t index), void *data);

#endif
