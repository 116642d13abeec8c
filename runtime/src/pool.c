/* The pthread pool behind kiln_workers (hosted builds of multi-core models). */
#ifdef __linux__
#define _GNU_SOURCE /* sched_getaffinity, pthread_setaffinity_np */
#else
#define _POSIX_C_SOURCE 200809L
#endif

#include "kiln/kiln_pool.h"

#include <sched.h>
#include <string.h>

/* Polls before sleeping: about the gap between two kernels of a schedule, so
 * workers stay awake through a decode step and sleep between steps. */
#define KILN_POOL_SPINS 20000

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define ADD(x, v) __atomic_add_fetch(&(x), (v), __ATOMIC_SEQ_CST)

/* One round of polling. After the first 1024 (the gap between two kernels of
 * a schedule), every 64th gives the CPU away: a worker that shares its CPU
 * with the caller (before the scheduler spreads them) must not hold up the
 * caller's work while it waits. */
static void relax(int32_t round) {
  if (round >= 1024 && (round & 63) == 63) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Thread t's part of the job's shares. */
static void run_range(kiln_pool *p, int32_t t) {
  int32_t s0 = (int32_t)((int64_t)t * p->shares / p->threads);
  int32_t s1 = (int32_t)((int64_t)(t + 1) * p->shares / p->threads);
  if (s0 < s1)
    p->fn(p->ctx, s0, s1);
}

/* The next generation after `seen`: spins, then sleeps on wake. The sleeper
 * count is raised before generation is read again, and the caller reads it
 * after publishing a generation, so one of the two sees the other. */
static uint32_t wait_job(kiln_pool *p, uint32_t seen) {
  uint32_t g;
  int32_t i;
  for (i = 0; i < KILN_POOL_SPINS; ++i) {
    g = LOAD(p->generation);
    if (g != seen)
      return g;
    relax(i);
  }
  pthread_mutex_lock(&p->lock);
  ADD(p->sleepers, 1);
  while ((g = LOAD(p->generation)) == seen)
    pthread_cond_wait(&p->wake, &p->lock);
  ADD(p->sleepers, -1);
  pthread_mutex_unlock(&p->lock);
  return g;
}

static void *worker_main(void *arg) {
  kiln_pool *p = (kiln_pool *)arg;
  const int32_t t = ADD(p->started, 1);
  uint32_t seen = 0;
  for (;;) {
    seen = wait_job(p, seen);
    if (LOAD(p->stop))
      return NULL;
    run_range(p, t);
    if (ADD(p->pending, -1) == 0 && LOAD(p->waiting)) {
      pthread_mutex_lock(&p->lock);
      pthread_cond_broadcast(&p->done);
      pthread_mutex_unlock(&p->lock);
    }
  }
}

kiln_status kiln_pool_start(kiln_pool *p, int32_t threads) {
  int32_t i;
  if (!p)
    return KILN_ERR_ARGUMENT;
  p->threads = 0;
  if (threads < 1 || threads > KILN_POOL_MAX_THREADS)
    return KILN_ERR_ARGUMENT;
  p->fn = NULL;
  p->ctx = NULL;
  p->shares = 0;
  p->generation = 0;
  p->pending = 0;
  p->sleepers = 0;
  p->waiting = 0;
  p->started = 0;
  p->stop = 0;
  p->pinned = 0;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  p->threads = threads;
  for (i = 0; i + 1 < threads; ++i)
    if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
      p->threads = i + 1; /* those started, and the caller */
      kiln_pool_stop(p);
      return KILN_ERR_IO;
    }
  return KILN_OK;
}

void kiln_pool_parallel_for(void *pool, kiln_task_fn fn, void *ctx, int32_t shares) {
  kiln_pool *p = (kiln_pool *)pool;
  int32_t i;
  if (p->threads <= 1 || shares <= 1) {
    fn(ctx, 0, shares);
    return;
  }
  /* Every worker finished the last job, so nobody reads these now. */
  p->fn = fn;
  p->ctx = ctx;
  p->shares = shares;
  STORE(p->pending, p->threads - 1);
  ADD(p->generation, 1);
  if (LOAD(p->sleepers) > 0) {
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
  }
  run_range(p, 0);
  for (i = 0; i < KILN_POOL_SPINS && LOAD(p->pending) > 0; ++i)
    relax(i);
  if (LOAD(p->pending) > 0) {
    pthread_mutex_lock(&p->lock);
    STORE(p->waiting, 1);
    while (LOAD(p->pending) > 0)
      pthread_cond_wait(&p->done, &p->lock);
    STORE(p->waiting, 0);
    pthread_mutex_unlock(&p->lock);
  }
}

#ifdef __linux__
/* The caller's CPU set fits the pool's copy. */
typedef char kiln_pool_caller_cpus_fit[sizeof(((kiln_pool *)0)->caller_cpus) >= sizeof(cpu_set_t)
                                           ? 1 : -1];
#endif

kiln_status kiln_pool_pin(kiln_pool *p) {
#ifdef __linux__
  cpu_set_t allowed, one;
  int32_t cpu, t;
  if (!p || p->threads < 1 || p->pinned)
    return KILN_ERR_ARGUMENT;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return KILN_ERR_CPU;
  if (CPU_COUNT(&allowed) < p->threads)
    return KILN_ERR_ARGUMENT;
  memcpy(p->caller_cpus, &allowed, sizeof allowed);
  /* The caller keeps the CPU it is on, the workers take the next ones: two
   * programs started on different CPUs do not both bind to the first. */
  cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
    cpu = 0;
  for (t = 0; t < p->threads; ++t, cpu = (cpu + 1) % CPU_SETSIZE) {
    while (!CPU_ISSET(cpu, &allowed))
      cpu = (cpu + 1) % CPU_SETSIZE;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (pthread_setaffinity_np(t == 0 ? pthread_self() : p->workers[t - 1], sizeof one, &one) != 0) {
      (void)pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
      return KILN_ERR_CPU;
    }
  }
  p->pinned = 1;
  return KILN_OK;
#else
  (void)p;
  return KILN_ERR_CPU;
#endif
}

kiln_workers kiln_pool_workers(kiln_pool *p) {
  kiln_workers w;
  w.parallel_for = kiln_pool_parallel_for;
  w.pool = p;
  return w;
}

void kiln_pool_stop(kiln_pool *p) {
  int32_t i;
  if (!p || p->threads < 1)
    return;
  STORE(p->stop, 1);
  ADD(p->generation, 1);
  pthread_mutex_lock(&p->lock);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (i = 0; i + 1 < p->threads; ++i)
    pthread_join(p->workers[i], NULL);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
#ifdef __linux__
  if (p->pinned) {
    cpu_set_t caller;
    memcpy(&caller, p->caller_cpus, sizeof caller);
    (void)pthread_setaffinity_np(pthread_self(), sizeof caller, &caller);
  }
#endif
  p->pinned = 0;
  p->threads = 0;
}
