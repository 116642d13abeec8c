/* Pass/fail counting shared by the runtime test programs. */
#ifndef KILN_TEST_RUNTIME_TALLY_H
#define KILN_TEST_RUNTIME_TALLY_H

#include <stdio.h>

typedef struct tally {
  int passed;
  int failed;
} tally;

static void check(tally *t, int ok, const char *what) {
  if (ok) {
    t->passed++;
    return;
  }
  t->failed++;
  printf("FAIL: %s\n", what);
}

#endif
