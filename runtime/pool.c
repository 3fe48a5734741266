/* pool.c: the worker threads behind raf_kernel_parallel.
 *
 * One job at a time: the caller publishes (function, data, chunk count)
 * under the mutex, bumps a generation number and wakes the workers; every
 * thread, the caller too, then claims chunks from an atomic counter until
 * none is left, and the caller waits until every chunk has finished and
 * every worker that joined the job has left it, so no worker ever sees the
 * fields of the next job half-written; a worker that wakes after every chunk
 * of a job is done does not join it. Workers sleep on a condition variable between jobs, so an idle
 * pool costs nothing.
 */
#include "runtime/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

struct raf_pool {
  int nthreads;
  pthread_t *workers;
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  uint64_t generation;
  bool stopping;
  /* The current job. */
  void (*chunk)(void *, int64_t);
  void *data;
  int64_t nchunks;
  atomic_int_fast64_t next;
  int64_t finished; /* chunks done, under lock */
  int active;       /* workers inside the current job, under lock */
};

static void work(raf_pool *p) {
  int64_t mine = 0;
  for (;;) {
    int64_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->nchunks)
      break;
    p->chunk(p->data, i);
    mine++;
  }
  pthread_mutex_lock(&p->lock);
  p->finished += mine;
  pthread_mutex_unlock(&p->lock);
}

static void *worker_main(void *arg) {
  raf_pool *p = arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->stopping && p->generation == seen)
      pthread_cond_wait(&p->wake, &p->lock);
    if (p->stopping)
      break;
    seen = p->generation;
    /* A job whose chunks are all done may be over for the caller, which
     * may publish the next one while this thread would still be claiming
     * from the old counter: a stale claim could then run a chunk of the
     * new job twice. Joining only an unfinished job, under the lock that
     * the caller's final wait also holds, keeps the fields stable. */
    if (p->finished >= p->nchunks)
      continue;
    p->active++;
    pthread_mutex_unlock(&p->lock);
    work(p);
    pthread_mutex_lock(&p->lock);
    if (--p->active == 0)
      pthread_cond_broadcast(&p->done);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

raf_pool *raf_pool_create(int nthreads) {
  raf_pool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->nthreads = nthreads < 1 ? 1 : nthreads;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (p->nthreads > 1) {
    p->workers = calloc((size_t)p->nthreads - 1, sizeof(pthread_t));
    if (!p->workers) {
      p->nthreads = 1;
      return p;
    }
    for (int i = 0; i < p->nthreads - 1; i++)
      if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
        p->nthreads = i + 1; /* run with the threads we got */
        break;
      }
  }
  return p;
}

void raf_pool_destroy(raf_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  p->stopping = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->nthreads - 1; i++)
    pthread_join(p->workers[i], NULL);
  free(p->workers);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p);
}

int raf_pool_threads(const raf_pool *p) { return p ? p->nthreads : 1; }

void raf_pool_run(raf_pool *p, int64_t nchunks,
                  void (*chunk)(void *data, int64_t index), void *data) {
  if (!p || p->nthreads == 1 || nchunks <= 1) {
    for (int64_t i = 0; i < nchunks; i++)
      chunk(data, i);
    return;
  }
  pthread_mutex_lock(&p->lock);
  p->chunk = chunk;
  p->data = data;
  p->nchunks = nchunks;
  p->finished = 0;
  atomic_store(&p->next, 0);
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  work(p);
  pthread_mutex_lock(&p->lock);
  /* Every worker that joined must leave before the job's fields change. */
  while (p->finished != nchunks || p->active != 0)
    pthread_cond_wait(&p->done, &p->lock);
  pthread_mutex_unlock(&p->lock);
}
