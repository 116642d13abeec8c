/* Hosted only (pthreads): a fixed pool of worker threads behind the
 * kiln_workers port hook. The pool lives in the caller's struct: nothing is
 * allocated once it has started. Workers spin briefly after each job, then
 * sleep until the next one. */
#ifndef KILN_KILN_POOL_H
#define KILN_KILN_POOL_H

#include <pthread.h>

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_POOL_MAX_THREADS 64

typedef struct kiln_pool {
  int32_t threads; /* the caller's thread included */
  pthread_t workers[KILN_POOL_MAX_THREADS - 1];
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  /* The current job, published by a new generation; reached with atomics. */
  kiln_task_fn fn;
  void *ctx;
  int32_t shares;
  uint32_t generation;
  int32_t pending;  /* workers still running the job */
  int32_t sleepers; /* workers waiting on wake */
  int32_t waiting;  /* the caller waits on done */
  int32_t started;  /* workers that have taken their index */
  int32_t stop;
  int32_t pinned;   /* kiln_pool_pin bound the threads; caller_cpus restores the caller */
  uint64_t caller_cpus[16];
} kiln_pool;

/* Starts threads - 1 workers (threads in 1..KILN_POOL_MAX_THREADS; 1 starts
 * none). KILN_ERR_ARGUMENT for a bad count, KILN_ERR_IO if the system
 * refuses a thread (those started are stopped again). */
kiln_status kiln_pool_start(kiln_pool *p, int32_t threads);

/* Binds the caller's thread and each worker to a CPU of its own, from the
 * CPUs the process may run on (Linux). Threads that poll for work must not
 * share a CPU: one would wait out the other's time slice at every kernel, so
 * a small model would run slower on two threads than on one. The caller's
 * own binding comes back at kiln_pool_stop. KILN_ERR_ARGUMENT when the
 * process has fewer CPUs than threads (the pool runs unbound), KILN_ERR_CPU
 * where the system cannot bind threads. */
kiln_status kiln_pool_pin(kiln_pool *p);

/* kiln_workers.parallel_for: thread t of the pool (0 is the caller) runs
 * shares [t * shares / threads, (t + 1) * shares / threads). One job at a time. */
void kiln_pool_parallel_for(void *pool, kiln_task_fn fn, void *ctx, int32_t shares);

/* The hook to give a model: {kiln_pool_parallel_for, p}. */
kiln_workers kiln_pool_workers(kiln_pool *p);

/* Stops and joins the workers; safe on a pool that failed to start. */
void kiln_pool_stop(kiln_pool *p);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_POOL_H */
