/* The runtime's thread pool (runtime/src/pool.c): every share of a job runs
 * once, on any pool size; kiln_pool_pin puts the caller and each worker on a
 * CPU of its own (each share's thread asks sched_getcpu), refuses more threads
 * than CPUs without binding anything, and kiln_pool_stop gives the caller its
 * own CPU set back. */
#define _GNU_SOURCE
#include "kiln/kiln_pool.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "tally.h"

#define SHARES 12

typedef struct job {
  int32_t runs[SHARES];
  int32_t cpu[SHARES];
} job;

static void record(void *ctx, int32_t s0, int32_t s1) {
  job *j = (job *)ctx;
  int32_t s;
  for (s = s0; s < s1; ++s) {
    __atomic_add_fetch(&j->runs[s], 1, __ATOMIC_SEQ_CST);
    j->cpu[s] = sched_getcpu();
  }
}

static int every_share_once(kiln_pool *p, job *j) {
  int32_t s;
  memset(j, 0, sizeof *j);
  kiln_pool_parallel_for(p, record, j, SHARES);
  for (s = 0; s < SHARES; ++s)
    if (j->runs[s] != 1)
      return 0;
  return 1;
}

int main(void) {
  tally t = {0, 0};
  cpu_set_t before, during, after;
  kiln_pool pool;
  job j;
  int32_t threads, n, cpus;
  char what[128];

  sched_getaffinity(0, sizeof before, &before);
  cpus = CPU_COUNT(&before);
  for (threads = 1; threads <= 4; ++threads) {
    check(&t, kiln_pool_start(&pool, threads) == KILN_OK, "start");
    snprintf(what, sizeof what, "%d threads: every share runs once", (int)threads);
    for (n = 0; n < 50; ++n)
      if (!every_share_once(&pool, &j))
        break;
    check(&t, n == 50, what);
    kiln_pool_stop(&pool);
  }

  /* More threads than CPUs: refused, nothing bound. */
  check(&t, kiln_pool_start(&pool, cpus + 1) == KILN_OK, "start past the CPUs");
  check(&t, kiln_pool_pin(&pool) == KILN_ERR_ARGUMENT, "pin past the CPUs: KILN_ERR_ARGUMENT");
  sched_getaffinity(0, sizeof during, &during);
  check(&t, CPU_EQUAL(&before, &during), "a refused pin leaves the caller's CPUs");
  kiln_pool_stop(&pool);

  /* As many threads as CPUs, at most 4: each on its own. A system that lets
   * no thread choose its CPUs (kiln_pool_pin's KILN_ERR_CPU) ends the test. */
  if (sched_setaffinity(0, sizeof before, &before) != 0) {
    printf("SKIP: this system binds no thread to CPUs\n%d passed, %d failed\n", t.passed,
           t.failed);
    return t.failed != 0;
  }
  threads = cpus < 4 ? cpus : 4;
  check(&t, kiln_pool_start(&pool, threads) == KILN_OK, "start");
  check(&t, kiln_pool_pin(&pool) == KILN_OK, "pin");
  check(&t, kiln_pool_pin(&pool) == KILN_ERR_ARGUMENT, "a second pin is refused");
  sched_getaffinity(0, sizeof during, &during);
  check(&t, CPU_COUNT(&during) == 1, "the caller is bound to one CPU");
  for (n = 0; n + 1 < threads; ++n) {
    cpu_set_t worker, both;
    pthread_getaffinity_np(pool.workers[n], sizeof worker, &worker);
    CPU_AND(&both, &worker, &during);
    snprintf(what, sizeof what, "worker %d is bound to one CPU, not the caller's", (int)n + 1);
    check(&t, CPU_COUNT(&worker) == 1 && CPU_COUNT(&both) == 0, what);
    CPU_OR(&during, &during, &worker);
  }
  for (n = 0; n < 50; ++n) {
    int32_t s, k, distinct = 1;
    if (!every_share_once(&pool, &j))
      break;
    /* Thread k runs shares [k * SHARES / threads, (k + 1) * SHARES / threads). */
    for (k = 0; k < threads; ++k)
      for (s = k * SHARES / threads; s < (k + 1) * SHARES / threads; ++s)
        distinct &= j.cpu[s] == j.cpu[k * SHARES / threads] &&
                    (k == 0 || j.cpu[s] != j.cpu[0]) && CPU_ISSET(j.cpu[s], &before);
    if (!distinct)
      break;
  }
  snprintf(what, sizeof what, "%d pinned threads: every share once, each thread on its own CPU",
           (int)threads);
  check(&t, n == 50, what);
  kiln_pool_stop(&pool);
  sched_getaffinity(0, sizeof after, &after);
  check(&t, CPU_EQUAL(&before, &after), "stop gives the caller its CPUs back");

  printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed != 0;
}
