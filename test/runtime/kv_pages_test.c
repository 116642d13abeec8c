/* Tests for the paged KV cache bookkeeping (kiln_kv_pages.h). No framework:
 * each check prints on failure and main reports the totals.
 *
 * The test plays the model: it keeps its own record of the tokens each
 * session was fed, stands in for keys and values with one number per slot
 * made from the token there and the value before it (as real keys and
 * values depend, through attention, on those before them), and after each
 * step checks the pool against that record: every position of every
 * session must read the number its own steps left there, whichever page it
 * reaches it through, and every registered page the number its tokens give
 * when computed from the start. A context shift moves values without
 * recomputing them, so after one the two differ. */
#include "kiln/kiln_kv_pages.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally.h"

enum { MAX_PAGES = 16, MAX_PAGE = 4, MAX_SESSIONS = 4, MAX_SPAN = 6 };
enum { MAX_POSITIONS = MAX_SPAN * MAX_PAGE };

typedef struct fixture {
  kiln_kv_pages p;
  int32_t refs[MAX_PAGES], parent[MAX_PAGES];
  uint32_t hash[MAX_PAGES];
  uint8_t registered[MAX_PAGES];
  int32_t tokens[MAX_PAGES * MAX_PAGE];
  int32_t table[MAX_SESSIONS * MAX_SPAN];
  int32_t pos[MAX_SESSIONS];
  uint32_t kv[MAX_PAGES * MAX_PAGE]; /* the stand-in keys and values */
  /* The test's own record: length -1 for a closed session. */
  int32_t history[MAX_SESSIONS][MAX_POSITIONS];
  uint32_t value[MAX_SESSIONS][MAX_POSITIONS]; /* what each position must hold */
  int32_t length[MAX_SESSIONS];
  int copies;
  int32_t copy_from, copy_to;
  int32_t copied[8][2]; /* the first (from, to) pairs since logged was set to 0 */
  int logged;
} fixture;

static void fixture_init(fixture *f, int32_t pages, int32_t page, int32_t sessions, int32_t span) {
  int32_t s;

  memset(f, 0xA5, sizeof *f); /* init must not rely on zeroed storage */
  f->p.pages = pages;
  f->p.page = page;
  f->p.sessions = sessions;
  f->p.span = span;
  f->p.refs = f->refs;
  f->p.parent = f->parent;
  f->p.hash = f->hash;
  f->p.registered = f->registered;
  f->p.tokens = f->tokens;
  f->p.table = f->table;
  f->p.pos = f->pos;
  kiln_kv_pages_init(&f->p);
  memset(f->kv, 0, sizeof f->kv);
  for (s = 0; s < MAX_SESSIONS; s++)
    f->length[s] = -1;
  f->copies = 0;
  f->copy_from = f->copy_to = -1;
  f->logged = 0;
}

static void copy_page(void *ctx, int32_t from, int32_t to) {
  fixture *f = (fixture *)ctx;

  memcpy(f->kv + to * f->p.page, f->kv + from * f->p.page, (size_t)f->p.page * sizeof f->kv[0]);
  f->copies++;
  f->copy_from = from;
  f->copy_to = to;
  if (f->logged < 8) {
    f->copied[f->logged][0] = from;
    f->copied[f->logged][1] = to;
    f->logged++;
  }
}

enum { KV_SEED = 0x2545F491 };

/* The stand-in value of token tok after the value `before` (KV_SEED at
 * position 0). */
static uint32_t kv_next(uint32_t before, int32_t tok) {
  return (before ^ (uint32_t)tok) * 0x9E3779B1u + 0x7F4A7C15u;
}

/* The value at position i when tokens 0..i are computed from the start. */
static uint32_t kv_value(const int32_t *history, int32_t i) {
  uint32_t v = KV_SEED;
  int32_t j;

  for (j = 0; j <= i; j++)
    v = kv_next(v, history[j]);
  return v;
}

static int32_t table_at(const fixture *f, int32_t s, int32_t lp) {
  return f->table[s * f->p.span + lp];
}

static int32_t open_session(tally *t, fixture *f) {
  int32_t id = -1;

  check(t, kiln_kv_session_open(&f->p, &id) == KILN_OK, "open a session");
  if (id >= 0 && id < f->p.sessions)
    f->length[id] = 0;
  return id;
}

static void close_session(tally *t, fixture *f, int32_t id) {
  check(t, kiln_kv_session_close(&f->p, id) == KILN_OK, "close a session");
  f->length[id] = -1;
}

/* Records token tok at position at of the session, and the value it gets
 * when computed after what the session holds below at. */
static void record(fixture *f, int32_t id, int32_t at, int32_t tok) {
  f->history[id][at] = tok;
  f->value[id][at] = kv_next(at > 0 ? f->value[id][at - 1] : KV_SEED, tok);
}

/* Writes the stand-in values of tokens[0..n) at the session's position
 * through its table, as a model computing them would, and records them. */
static void compute(fixture *f, int32_t id, const int32_t *tokens, int32_t n) {
  int32_t i;

  for (i = 0; i < n; i++) {
    int32_t at = f->length[id] + i, q = table_at(f, id, at / f->p.page);

    record(f, id, at, tokens[i]);
    if (q >= 0)
      f->kv[q * f->p.page + at % f->p.page] = f->value[id][at];
  }
}

/* Records n tokens adopted at the session's position: their pages must hold
 * what the session would have computed itself. */
static void record_adopted(fixture *f, int32_t id, const int32_t *tokens, int32_t n) {
  int32_t i;

  for (i = 0; i < n; i++)
    record(f, id, f->length[id] + i, tokens[i]);
  f->length[id] += n;
}

/* One step: adopt, reserve the rest, compute it, commit. Returns reserve's
 * status; *adopted gets adopt's result. */
static kiln_status feed(fixture *f, int32_t id, const int32_t *tokens, int32_t n,
                        int32_t *adopted) {
  int32_t a = kiln_kv_pages_adopt(&f->p, id, tokens, n);
  kiln_status st;

  if (adopted != NULL)
    *adopted = a;
  record_adopted(f, id, tokens, a);
  st = kiln_kv_pages_reserve(&f->p, id, n - a, copy_page, f);
  if (st != KILN_OK)
    return st;
  compute(f, id, tokens + a, n - a);
  st = kiln_kv_pages_commit(&f->p, id, tokens + a, n - a);
  if (st == KILN_OK)
    f->length[id] += n - a;
  return st;
}

static void truncate_session(tally *t, fixture *f, int32_t id, int32_t n) {
  check(t, kiln_kv_pages_truncate(&f->p, id, n) == KILN_OK, "truncate");
  f->length[id] = n;
}

/* After kiln_kv_pages_shift, before the caller's part: the session's token
 * records read its history with keep+drop..pos-1 moved down by drop. */
static int records_shifted(const fixture *f, int32_t id, int32_t keep, int32_t drop) {
  int32_t i, q;

  for (i = 0; i < f->length[id] - drop; i++) {
    q = table_at(f, id, i / f->p.page);
    if (q < 0 ||
        f->tokens[q * f->p.page + i % f->p.page] != f->history[id][i < keep ? i : i + drop])
      return 0;
  }
  return 1;
}

/* The caller's part of a context shift after kiln_kv_pages_shift: the keys
 * and values of keep+drop..pos-1 moved down by drop through the table as
 * shift left it, then a truncate to pos - drop; the record moves the same
 * way. 0 when a position is unmapped or truncate fails. */
static int finish_shift(fixture *f, int32_t id, int32_t keep, int32_t drop) {
  int32_t len = f->length[id], i;

  for (i = keep; i + drop < len; i++) {
    int32_t to = table_at(f, id, i / f->p.page), from = table_at(f, id, (i + drop) / f->p.page);

    if (to < 0 || from < 0)
      return 0;
    f->kv[to * f->p.page + i % f->p.page] = f->kv[from * f->p.page + (i + drop) % f->p.page];
    f->history[id][i] = f->history[id][i + drop];
    f->value[id][i] = f->value[id][i + drop];
  }
  f->length[id] = len - drop;
  return kiln_kv_pages_truncate(&f->p, id, len - drop) == KILN_OK;
}

/* A registered page may be adopted by any session, so all of its slots must
 * hold the values of the prefix its parents' token records spell out. */
static int registered_page_ok(const fixture *f, int32_t q) {
  int32_t chain[MAX_SPAN], seq[MAX_POSITIONS], depth = 0, d, j, r;

  for (r = q; r >= 0; r = f->parent[r]) {
    if (depth == f->p.span || !f->registered[r])
      return 0;
    chain[depth++] = r;
  }
  for (d = 0; d < depth; d++)
    memcpy(seq + d * f->p.page, f->tokens + chain[depth - 1 - d] * f->p.page,
           (size_t)f->p.page * sizeof seq[0]);
  for (j = 0; j < f->p.page; j++)
    if (f->kv[q * f->p.page + j] != kv_value(seq, (depth - 1) * f->p.page + j))
      return 0;
  return 1;
}

/* Every property of the pool that follows from the test's record and the
 * tables, worked out here without the module. */
static int state_ok(const fixture *f) {
  const kiln_kv_pages *p = &f->p;
  int32_t s, lp, i, q, mapped[MAX_PAGES], used = 0;
  int ok = 1;

  memset(mapped, 0, sizeof mapped);
  for (s = 0; s < p->sessions; s++) {
    int32_t len = f->length[s], kept = len < 0 ? 0 : (len + p->page - 1) / p->page;

    if (p->pos[s] != len) {
      printf("  session %d: position %d, fed %d\n", (int)s, (int)p->pos[s], (int)len);
      ok = 0;
    }
    for (lp = 0; lp < p->span; lp++) {
      q = table_at(f, s, lp);
      if (q < 0) {
        if (lp < kept) {
          printf("  session %d: logical page %d unmapped below its position\n", (int)s, (int)lp);
          ok = 0;
        }
        continue;
      }
      if (q >= p->pages || len < 0) {
        printf("  session %d: entry %d is %d\n", (int)s, (int)lp, (int)q);
        ok = 0;
        continue;
      }
      mapped[q]++;
      if (lp >= kept && (p->refs[q] != 1 || p->registered[q])) {
        printf("  session %d: reserved page %d shared or registered\n", (int)s, (int)q);
        ok = 0;
      }
      if (p->registered[q] && p->parent[q] != (lp > 0 ? table_at(f, s, lp - 1) : -1)) {
        printf("  session %d: registered page %d under another parent\n", (int)s, (int)q);
        ok = 0;
      }
    }
    for (i = 0; i < len; i++) {
      q = table_at(f, s, i / p->page);
      if (q < 0)
        continue;
      if (f->kv[q * p->page + i % p->page] != f->value[s][i] ||
          f->tokens[q * p->page + i % p->page] != f->history[s][i]) {
        printf("  session %d: position %d reads another prefix's values\n", (int)s, (int)i);
        ok = 0;
      }
    }
  }
  for (q = 0; q < p->pages; q++) {
    if (p->registered[q] && !registered_page_ok(f, q)) {
      printf("  registered page %d does not hold its prefix's values\n", (int)q);
      ok = 0;
    }
    if (p->refs[q] != mapped[q]) {
      printf("  page %d: refs %d, mapped %d times\n", (int)q, (int)p->refs[q], (int)mapped[q]);
      ok = 0;
    }
    if (mapped[q] == 0 && (p->registered[q] || p->parent[q] != -1)) {
      printf("  free page %d still registered\n", (int)q);
      ok = 0;
    }
    used += mapped[q] > 0;
  }
  if (kiln_kv_pages_used(p) != used) {
    printf("  used %d, want %d\n", (int)kiln_kv_pages_used(p), (int)used);
    ok = 0;
  }
  return ok;
}

/* A fixture as it was, to show a refused call changed nothing: its pool's
 * arrays, refs through kv, side by side in a fixture. */
typedef struct snapshot {
  fixture f;
} snapshot;

static void take(snapshot *s, const fixture *f) { s->f = *f; }

static int same(const snapshot *a, const fixture *f) {
  const size_t from = offsetof(fixture, refs), to = offsetof(fixture, history);
  return memcmp((const char *)&a->f + from, (const char *)f + from, to - from) == 0;
}

/* Prompt P: 10 tokens, 2.5 pages of 4. */
static const int32_t prompt[10] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 32};

enum { PAGE = 4, SPAN = 4 };

static void test_init_and_sessions(tally *t) {
  static const char session_message[] = "no such open session, or no session free";
  static const char pool_message[] = "the KV page pool has no free page";
  fixture f;
  int32_t id, q, s, tok = 5;
  int ok = 1;

  fixture_init(&f, 8, PAGE, 3, SPAN);
  for (q = 0; q < 8; q++)
    ok &= f.refs[q] == 0 && f.registered[q] == 0 && f.parent[q] == -1;
  for (q = 0; q < 3 * SPAN; q++)
    ok &= f.table[q] == -1;
  for (s = 0; s < 3; s++)
    ok &= f.pos[s] == -1;
  check(t, ok && kiln_kv_pages_used(&f.p) == 0, "init: all free, unmapped, closed");

  for (s = 0; s < 3; s++)
    check(t, open_session(t, &f) == s, "open: the lowest closed session");
  id = 77;
  check(t, kiln_kv_session_open(&f.p, &id) == KILN_ERR_SESSION && id == 77,
        "open: KILN_ERR_SESSION when all are open, id untouched");
  check(t,
        kiln_kv_session_position(&f.p, 2) == 0 &&
            kiln_kv_session_table(&f.p, 2) == f.table + 2 * SPAN,
        "an open session: position 0, its table row");
  check(t,
        kiln_kv_session_position(&f.p, 3) == -1 && kiln_kv_session_position(&f.p, -1) == -1 &&
            kiln_kv_session_table(&f.p, 3) == NULL && kiln_kv_session_table(&f.p, -1) == NULL,
        "a bad id: position -1, table NULL");

  close_session(t, &f, 1);
  check(t, kiln_kv_session_close(&f.p, 1) == KILN_ERR_SESSION, "close: a closed id");
  check(t,
        kiln_kv_session_close(&f.p, -1) == KILN_ERR_SESSION &&
            kiln_kv_session_close(&f.p, 3) == KILN_ERR_SESSION,
        "close: an id out of range");
  check(t, kiln_kv_session_position(&f.p, 1) == -1 && kiln_kv_session_table(&f.p, 1) == NULL,
        "a closed id: position -1, table NULL");
  check(t,
        kiln_kv_pages_reserve(&f.p, 1, 1, copy_page, &f) == KILN_ERR_SESSION &&
            kiln_kv_pages_commit(&f.p, 1, &tok, 1) == KILN_ERR_SESSION &&
            kiln_kv_pages_truncate(&f.p, 1, 0) == KILN_ERR_SESSION &&
            kiln_kv_pages_reserve(&f.p, 3, 1, copy_page, &f) == KILN_ERR_SESSION,
        "reserve, commit, truncate: KILN_ERR_SESSION for a closed or bad id");
  check(t,
        kiln_kv_pages_adopt(&f.p, 1, prompt, 10) == 0 &&
            kiln_kv_pages_adopt(&f.p, -1, prompt, 10) == 0,
        "adopt: 0 for a closed or bad id");
  check(t, open_session(t, &f) == 1, "open: reuses the closed session");
  for (s = 0; s < 3; s++)
    close_session(t, &f, s);
  check(t, open_session(t, &f) == 0, "open after closing all: session 0");
  check(t, state_ok(&f), "sessions: state");

  check(t, strcmp(kiln_status_message(KILN_ERR_SESSION), session_message) == 0,
        "KILN_ERR_SESSION's message");
  check(t, strcmp(kiln_status_message(KILN_ERR_POOL_FULL), pool_message) == 0,
        "KILN_ERR_POOL_FULL's message");
}

static void test_arguments(tally *t) {
  fixture f;
  snapshot before;
  int32_t id, tok = 5;
  kiln_kv_pages bad;

  check(t,
        kiln_kv_session_open(NULL, &id) == KILN_ERR_ARGUMENT &&
            kiln_kv_session_close(NULL, 0) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_reserve(NULL, 0, 1, copy_page, NULL) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_commit(NULL, 0, &tok, 1) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_truncate(NULL, 0, 0) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_adopt(NULL, 0, prompt, 10) == 0 && kiln_kv_pages_used(NULL) == -1 &&
            kiln_kv_session_position(NULL, 0) == -1 && kiln_kv_session_table(NULL, 0) == NULL,
        "a NULL pool is refused");
  kiln_kv_pages_init(NULL);

  fixture_init(&f, 8, PAGE, 2, SPAN);
  bad = f.p;
  bad.page = 0;
  check(t, kiln_kv_session_open(&bad, &id) == KILN_ERR_ARGUMENT && kiln_kv_pages_used(&bad) == -1,
        "page 0 is refused");
  bad = f.p;
  bad.sessions = -1;
  check(t, kiln_kv_session_open(&bad, &id) == KILN_ERR_ARGUMENT, "negative sessions are refused");
  bad = f.p;
  bad.span = 0x10000;
  bad.page = 0x10000;
  check(t, kiln_kv_session_open(&bad, &id) == KILN_ERR_ARGUMENT,
        "span * page past int32 is refused");
  bad = f.p;
  bad.hash = NULL;
  check(t, kiln_kv_session_open(&bad, &id) == KILN_ERR_ARGUMENT, "a NULL array is refused");
  check(t, kiln_kv_session_open(&f.p, NULL) == KILN_ERR_ARGUMENT, "open: NULL id is refused");

  id = open_session(t, &f);
  take(&before, &f);
  check(t,
        kiln_kv_pages_reserve(&f.p, id, -1, copy_page, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_reserve(&f.p, id, 1, NULL, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_commit(&f.p, id, &tok, -1) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_commit(&f.p, id, NULL, 1) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_adopt(&f.p, id, prompt, -1) == 0 &&
            kiln_kv_pages_adopt(&f.p, id, NULL, 10) == 0,
        "negative counts, NULL tokens or copy are refused");
  check(t, kiln_kv_pages_commit(&f.p, id, &tok, 1) == KILN_ERR_ARGUMENT,
        "commit without reserve is refused");
  check(t,
        kiln_kv_pages_truncate(&f.p, id, 1) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_truncate(&f.p, id, -1) == KILN_ERR_ARGUMENT,
        "truncate past the position or below 0 is refused");
  check(t, same(&before, &f), "refused calls change nothing");

  check(t, kiln_kv_pages_reserve(&f.p, id, 3, copy_page, &f) == KILN_OK, "reserve 3");
  compute(&f, id, prompt, 3);
  check(t, kiln_kv_pages_commit(&f.p, id, prompt, 5) == KILN_ERR_ARGUMENT,
        "commit past what reserve covered (into the next page) is refused");
  check(t,
        kiln_kv_pages_commit(&f.p, id, prompt, 2) == KILN_OK &&
            kiln_kv_pages_commit(&f.p, id, prompt + 2, 1) == KILN_OK,
        "commit of a reservation in two parts");
  f.length[id] = 3;
  check(t,
        kiln_kv_pages_commit(&f.p, id, prompt, 0) == KILN_OK &&
            kiln_kv_pages_reserve(&f.p, id, 0, copy_page, &f) == KILN_OK,
        "n = 0 is fine");
  check(t, state_ok(&f), "arguments: state");
}

/* P into one session: 3 pages, the 2 full ones registered. */
static int32_t feed_prompt(tally *t, fixture *f) {
  int32_t a, id = open_session(t, f);

  check(t, feed(f, id, prompt, 10, &a) == KILN_OK && a == 0,
        "P into an empty cache: nothing adopted");
  return id;
}

/* A fresh pool of `pages` pages and `sessions` sessions where A holds P and B
 * (returned) has adopted A's two full pages: B at 8. */
static int32_t adopted_prefix(tally *t, fixture *f, int32_t pages, int32_t sessions) {
  int32_t b;

  fixture_init(f, pages, PAGE, sessions, SPAN);
  (void)feed_prompt(t, f);
  b = open_session(t, f);
  check(t, kiln_kv_pages_adopt(&f->p, b, prompt, 10) == 8, "B adopts 8 of P");
  record_adopted(f, b, prompt, 8);
  return b;
}

static void test_prompt_and_adopt(tally *t) {
  fixture f;
  int32_t a, b, c, n;

  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);
  check(t,
        table_at(&f, a, 0) == 0 && table_at(&f, a, 1) == 1 && table_at(&f, a, 2) == 2 &&
            table_at(&f, a, 3) == -1 && kiln_kv_pages_used(&f.p) == 3,
        "2.5 pages map pages 0, 1, 2");
  check(t, f.registered[0] && f.registered[1] && !f.registered[2], "the 2 full pages registered");
  check(t, f.parent[0] == -1 && f.parent[1] == 0, "parents: -1, then page 0");
  check(t, f.refs[0] == 1 && f.refs[1] == 1 && f.refs[2] == 1, "refs 1 each");
  check(t, memcmp(f.tokens, prompt, sizeof prompt) == 0, "token records hold P");
  check(t, state_ok(&f), "P: state");

  /* The same prompt again: 2 pages adopted, only the half page computed. */
  b = open_session(t, &f);
  n = kiln_kv_pages_adopt(&f.p, b, prompt, 10);
  check(t, n == 8 && kiln_kv_session_position(&f.p, b) == 8, "same P: 8 tokens adopted");
  check(t, table_at(&f, b, 0) == 0 && table_at(&f, b, 1) == 1 && f.refs[0] == 2 && f.refs[1] == 2,
        "same P: pages 0 and 1 shared, refs 2");
  check(t, kiln_kv_pages_used(&f.p) == 3, "adopting takes no page");
  check(t, kiln_kv_pages_commit(&f.p, b, prompt + 8, 2) == KILN_ERR_ARGUMENT,
        "commit into an unreserved page is refused");
  record_adopted(&f, b, prompt, 8);
  check(t,
        kiln_kv_pages_reserve(&f.p, b, 2, copy_page, &f) == KILN_OK &&
            kiln_kv_pages_used(&f.p) == 4 && table_at(&f, b, 2) == 3 && f.copies == 0,
        "same P: the rest takes one page, no copy");
  compute(&f, b, prompt + 8, 2);
  check(t, kiln_kv_pages_commit(&f.p, b, prompt + 8, 2) == KILN_OK, "same P: commit");
  f.length[b] = 10;
  check(t, state_ok(&f), "same P: state");

  /* Exactly 2 pages: the page with the last token is computed, not adopted. */
  c = open_session(t, &f);
  check(t, feed(&f, c, prompt, 8, &n) == KILN_OK && n == 4, "P[0..8): 4 adopted, not 8");
  check(t, table_at(&f, c, 0) == 0 && table_at(&f, c, 1) == 4 && f.refs[0] == 3 && f.refs[1] == 2,
        "P[0..8): page 0 shared, page 1 its own");
  check(t, kiln_kv_pages_adopt(&f.p, 3, prompt, 4) == 0, "adopt into a closed session: 0");
  close_session(t, &f, c);
  c = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, c, prompt, 4) == 0, "one page of tokens: nothing adopted");
  check(t, kiln_kv_pages_adopt(&f.p, c, prompt, 5) == 4, "a page and a token: one page adopted");
  record_adopted(&f, c, prompt, 4);
  check(t, state_ok(&f), "P[0..8): state");
}

static void test_partial_matches(tally *t) {
  fixture f;
  int32_t a, b, c, n, other[10], shifted[10], z[5] = {91, 92, 93, 94, 95};
  int32_t second[6];

  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);
  (void)a;

  /* Page 2 differs in one token: page 1 only. */
  memcpy(other, prompt, sizeof other);
  other[5] = 99;
  b = open_session(t, &f);
  check(t, feed(&f, b, other, 10, &n) == KILN_OK && n == 4,
        "a different token in page 2: 4 adopted");
  check(t, table_at(&f, b, 0) == 0 && table_at(&f, b, 1) != 1, "page 1 shared, page 2 not");

  /* Page 2's tokens at position 0: their parent is not -1. */
  memcpy(shifted, prompt + 4, 6 * sizeof prompt[0]);
  shifted[6] = shifted[7] = shifted[8] = shifted[9] = 7;
  c = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, c, shifted, 10) == 0, "page 2's tokens as a first page: 0");
  close_session(t, &f, c);

  /* Page 2's tokens after another first page: the parent differs. */
  c = open_session(t, &f);
  check(t, feed(&f, c, z, 4, &n) == KILN_OK && n == 0 && f.registered[table_at(&f, c, 0)],
        "another first page, registered");
  memcpy(second, prompt + 4, 4 * sizeof prompt[0]);
  second[4] = second[5] = 7;
  check(t, kiln_kv_pages_adopt(&f.p, c, second, 6) == 0, "page 2's tokens under another parent: 0");
  check(t, feed(&f, c, second, 6, &n) == KILN_OK && n == 0, "computed instead");

  /* Not at a page boundary, or the next page already reserved: nothing. */
  close_session(t, &f, c);
  c = open_session(t, &f);
  check(t, feed(&f, c, z, 1, &n) == KILN_OK, "one token");
  check(t, kiln_kv_pages_adopt(&f.p, c, prompt, 10) == 0, "mid-page: 0");
  truncate_session(t, &f, c, 0);
  check(t, kiln_kv_pages_reserve(&f.p, c, 8, copy_page, &f) == KILN_OK, "reserve 2 pages ahead");
  check(t, kiln_kv_pages_adopt(&f.p, c, prompt, 10) == 0, "the next page reserved: 0");
  check(t, state_ok(&f), "partial matches: state");
  n = kiln_kv_pages_used(&f.p);
  truncate_session(t, &f, c, 0);
  check(t, kiln_kv_pages_used(&f.p) == n - 2, "truncate releases reserved pages");
  check(t, kiln_kv_pages_adopt(&f.p, c, prompt, 10) == 8, "then P adopts 8");
  record_adopted(&f, c, prompt, 8);
  check(t, state_ok(&f), "partial matches: final state");
}

static void test_copy_on_write(tally *t) {
  fixture f;
  int32_t a, b, c, n, a_table[SPAN], page1[PAGE];
  const int32_t fresh[2] = {61, 62};
  int32_t b_prompt[10];

  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);
  b = open_session(t, &f);
  check(t, feed(&f, b, prompt, 10, &n) == KILN_OK && n == 8, "B adopts pages 0 and 1");
  memcpy(a_table, f.table + a * SPAN, sizeof a_table);
  memcpy(page1, f.tokens + 1 * PAGE, sizeof page1);

  truncate_session(t, &f, b, 6);
  check(t,
        table_at(&f, b, 1) == 1 && table_at(&f, b, 2) == -1 && f.refs[1] == 2 &&
            kiln_kv_pages_used(&f.p) == 3,
        "truncate into the shared page: it stays mapped, page 3 freed");
  check(t, kiln_kv_pages_commit(&f.p, b, fresh, 2) == KILN_ERR_ARGUMENT,
        "commit into the shared page without reserve is refused");
  check(t, kiln_kv_pages_reserve(&f.p, b, 2, copy_page, &f) == KILN_OK,
        "reserve in the shared page");
  check(t, f.copies == 1 && f.copy_from == 1 && f.copy_to == 3, "copy once, (1, 3)");
  check(t,
        table_at(&f, b, 1) == 3 && f.refs[1] == 1 && f.refs[3] == 1 && !f.registered[3] &&
            f.registered[1],
        "B maps the copy; page 1 is A's alone, still registered");
  check(t, memcmp(f.table + a * SPAN, a_table, sizeof a_table) == 0, "A's table unchanged");
  check(t, memcmp(f.tokens + 3 * PAGE, page1, sizeof page1) == 0,
        "the token record follows the copy");
  compute(&f, b, fresh, 2);
  check(t, kiln_kv_pages_commit(&f.p, b, fresh, 2) == KILN_OK, "B writes its own tokens");
  f.length[b] = 8;
  check(t, memcmp(f.tokens + 1 * PAGE, page1, sizeof page1) == 0, "A's token record unchanged");
  check(t, f.registered[3] && f.parent[3] == 0, "B's full copy registered under page 0");
  check(t, state_ok(&f), "copy on write: state");

  /* Both branches are now findable. */
  c = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, c, prompt, 10) == 8 && table_at(&f, c, 1) == 1,
        "P adopts A's page 1");
  close_session(t, &f, c);
  memcpy(b_prompt, prompt, sizeof b_prompt);
  b_prompt[6] = fresh[0];
  b_prompt[7] = fresh[1];
  c = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, c, b_prompt, 10) == 8 && table_at(&f, c, 1) == 3,
        "B's tokens adopt B's page");
  record_adopted(&f, c, b_prompt, 8);
  check(t, state_ok(&f), "copy on write: final state");
}

static void test_unregister(tally *t) {
  fixture f;
  int32_t a, c, n;
  const int32_t other = 77;

  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);

  /* Cutting at a page boundary keeps the page below registered. */
  truncate_session(t, &f, a, 8);
  check(t,
        kiln_kv_pages_reserve(&f.p, a, 1, copy_page, &f) == KILN_OK && f.registered[1] &&
            f.copies == 0,
        "a write past a full page leaves it registered");
  compute(&f, a, &other, 1);
  check(t, kiln_kv_pages_commit(&f.p, a, &other, 1) == KILN_OK, "commit past it");
  f.length[a] = 9;

  /* Into a registered page no one shares: unregistered, not copied. */
  truncate_session(t, &f, a, 6);
  check(t, f.registered[1], "truncation alone keeps it registered");
  check(t, kiln_kv_pages_commit(&f.p, a, &other, 1) == KILN_ERR_ARGUMENT,
        "commit into it without reserve is refused");
  check(t, kiln_kv_pages_reserve(&f.p, a, 1, copy_page, &f) == KILN_OK, "reserve in page 1");
  check(t, !f.registered[1] && f.parent[1] == -1 && table_at(&f, a, 1) == 1 && f.copies == 0,
        "it is unregistered in place, no copy");
  compute(&f, a, &other, 1);
  check(t, kiln_kv_pages_commit(&f.p, a, &other, 1) == KILN_OK, "A writes another token");
  f.length[a] = 7;
  c = open_session(t, &f);
  check(t, feed(&f, c, prompt, 10, &n) == KILN_OK && n == 4, "a third session adopts page 0 only");
  check(t, state_ok(&f), "unregister: state");
}

/* A hash match alone is not enough: with the hash left as it was, a page
 * whose token record or parent no longer matches (as after a collision)
 * must not be adopted. */
static void test_exact_compare(tally *t) {
  fixture f;
  int32_t b, saved;

  fixture_init(&f, 8, PAGE, 2, SPAN);
  (void)feed_prompt(t, &f);
  b = open_session(t, &f);
  saved = f.tokens[1 * PAGE + 3];
  f.tokens[1 * PAGE + 3] = saved + 1;
  check(t, kiln_kv_pages_adopt(&f.p, b, prompt, 10) == 4,
        "a token differs, the hash does not: not adopted");
  f.tokens[1 * PAGE + 3] = saved;
  truncate_session(t, &f, b, 0);
  f.parent[1] = 2;
  check(t, kiln_kv_pages_adopt(&f.p, b, prompt, 10) == 4,
        "the parent differs, the hash does not: not adopted");
  f.parent[1] = 0;
  truncate_session(t, &f, b, 0);
  check(t, kiln_kv_pages_adopt(&f.p, b, prompt, 10) == 8, "restored: adopted");
}

static void test_full(tally *t) {
  fixture f;
  snapshot before;
  int32_t a, b, c, n;

  fixture_init(&f, 5, PAGE, 3, SPAN);
  a = feed_prompt(t, &f);
  b = open_session(t, &f);
  check(t, feed(&f, b, prompt, 10, &n) == KILN_OK && n == 8, "B adopts 8");
  c = open_session(t, &f);
  check(t, feed(&f, c, prompt + 8, 1, &n) == KILN_OK && kiln_kv_pages_used(&f.p) == 5, "pool full");

  check(t, kiln_kv_pages_reserve(&f.p, b, 2, copy_page, &f) == KILN_OK,
        "a reservation inside B's own page needs no free page");
  take(&before, &f);
  check(t, kiln_kv_pages_reserve(&f.p, b, 3, copy_page, &f) == KILN_ERR_POOL_FULL,
        "a new page: KILN_ERR_POOL_FULL");
  check(t, same(&before, &f) && f.copies == 0, "POOL_FULL changes nothing");
  check(t, kiln_kv_pages_reserve(&f.p, b, 7, copy_page, &f) == KILN_ERR_CONTEXT_FULL,
        "past span * page: KILN_ERR_CONTEXT_FULL, before the pool is counted");
  check(t, same(&before, &f), "CONTEXT_FULL changes nothing");

  /* A copy needs a free page too. */
  truncate_session(t, &f, b, 6);
  check(t,
        kiln_kv_pages_reserve(&f.p, c, 4, copy_page, &f) == KILN_OK &&
            kiln_kv_pages_used(&f.p) == 5,
        "C takes the page B freed");
  take(&before, &f);
  check(t, kiln_kv_pages_reserve(&f.p, b, 1, copy_page, &f) == KILN_ERR_POOL_FULL,
        "a shared page with no free page: KILN_ERR_POOL_FULL");
  check(t, same(&before, &f) && f.copies == 0, "no copy, nothing changed");
  check(t, state_ok(&f), "full: state");

  /* Up to capacity exactly. */
  close_session(t, &f, c);
  close_session(t, &f, b);
  check(t,
        kiln_kv_pages_reserve(&f.p, a, 6, copy_page, &f) == KILN_OK &&
            kiln_kv_pages_used(&f.p) == 4,
        "A reserves up to span * page");
  take(&before, &f);
  check(t,
        kiln_kv_pages_reserve(&f.p, a, 7, copy_page, &f) == KILN_ERR_CONTEXT_FULL &&
            same(&before, &f),
        "one more: KILN_ERR_CONTEXT_FULL");
  truncate_session(t, &f, a, 10);
  check(t, state_ok(&f), "full: final state");
}

static void test_close(tally *t) {
  fixture f;
  int32_t a, b, c, n;
  const int32_t q[3] = {41, 42, 43};

  fixture_init(&f, 8, PAGE, 3, SPAN);
  a = feed_prompt(t, &f);
  b = open_session(t, &f);
  check(t, feed(&f, b, prompt, 10, &n) == KILN_OK && n == 8 && kiln_kv_pages_used(&f.p) == 4,
        "A and B: 4 pages");
  close_session(t, &f, a);
  check(t,
        kiln_kv_pages_used(&f.p) == 3 && f.refs[0] == 1 && f.refs[1] == 1 && f.refs[2] == 0 &&
            !f.registered[2] && f.registered[0] && f.registered[1],
        "closing A frees its own page; the shared ones stay, registered");
  c = open_session(t, &f);
  check(t, c == a, "A's id reused");
  check(t, feed(&f, c, q, 3, &n) == KILN_OK && n == 0 && table_at(&f, c, 0) == 2,
        "the freed page is taken again");
  close_session(t, &f, c);
  c = open_session(t, &f);
  check(t, feed(&f, c, prompt, 10, &n) == KILN_OK && n == 8, "B's pages are still found");
  close_session(t, &f, b);
  close_session(t, &f, c);
  check(t, kiln_kv_pages_used(&f.p) == 0, "all closed: no page used");
  check(t, f.registered[0] == 0 && f.registered[1] == 0, "and none registered");
  c = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, c, prompt, 10) == 0, "nothing left to adopt");
  check(t, state_ok(&f), "close: state");
}

/* 14 tokens: 3.5 pages of 4, P first. */
static const int32_t text[14] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34, 41, 42};

static void test_shift_arguments(tally *t) {
  fixture f;
  snapshot before;
  int32_t a, b, n;
  kiln_kv_pages bad;

  fixture_init(&f, 8, PAGE, 3, SPAN);
  a = feed_prompt(t, &f);
  b = open_session(t, &f);
  check(t, feed(&f, b, prompt, 10, &n) == KILN_OK && n == 8, "B adopts pages 0 and 1");
  (void)a;
  take(&before, &f);
  check(t,
        kiln_kv_pages_shift(&f.p, b, -1, 1, copy_page, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_shift(&f.p, b, 0, -1, copy_page, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_shift(&f.p, b, 4, 7, copy_page, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_shift(&f.p, b, 11, 0, copy_page, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_shift(&f.p, b, 1, INT32_MAX, copy_page, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_shift(&f.p, b, INT32_MAX, INT32_MAX, copy_page, &f) == KILN_ERR_ARGUMENT,
        "shift: keep or drop below 0, or keep + drop past the position, is refused");
  bad = f.p;
  bad.page = 0;
  check(t,
        kiln_kv_pages_shift(&f.p, b, 0, 2, NULL, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_shift(NULL, b, 0, 2, copy_page, &f) == KILN_ERR_ARGUMENT &&
            kiln_kv_pages_shift(&bad, b, 0, 2, copy_page, &f) == KILN_ERR_ARGUMENT,
        "shift: NULL copy or an invalid pool is refused");
  check(t,
        kiln_kv_pages_shift(&f.p, 2, 0, 0, copy_page, &f) == KILN_ERR_SESSION &&
            kiln_kv_pages_shift(&f.p, -1, 0, 0, copy_page, &f) == KILN_ERR_SESSION &&
            kiln_kv_pages_shift(&f.p, 3, 0, 0, copy_page, &f) == KILN_ERR_SESSION,
        "shift: KILN_ERR_SESSION for a closed or bad id");
  check(t, same(&before, &f) && f.copies == 0, "refused shifts change nothing");

  /* Nothing moves, so nothing is copied even where B's pages are shared. */
  check(t, kiln_kv_pages_shift(&f.p, b, 2, 0, copy_page, &f) == KILN_OK, "drop 0");
  check(t, same(&before, &f) && f.copies == 0, "drop 0 changes nothing");
  check(t,
        kiln_kv_pages_shift(&f.p, b, 0, 10, copy_page, &f) == KILN_OK &&
            kiln_kv_pages_shift(&f.p, b, 10, 0, copy_page, &f) == KILN_OK,
        "drop everything, keep everything");
  check(t, kiln_kv_pages_shift(&f.p, b, 5, 5, copy_page, &f) == KILN_OK,
        "keep == pos - drop, inside a shared page");
  check(t, same(&before, &f) && f.copies == 0, "keep == pos - drop changes nothing");
  truncate_session(t, &f, b, 5);
  check(t,
        table_at(&f, b, 1) == 1 && table_at(&f, b, 2) == -1 && f.refs[1] == 2 && f.registered[0] &&
            f.registered[1] && f.copies == 0,
        "then truncate to pos - drop: the shared pages stay shared and registered");
  check(t, state_ok(&f), "shift that moves nothing: state");
}

static void test_shift_own(tally *t) {
  fixture f;
  snapshot before;
  int32_t a, b, n, b_text[9];
  const int32_t more[5] = {51, 52, 53, 54, 55};

  fixture_init(&f, 8, PAGE, 2, SPAN);
  a = open_session(t, &f);
  check(t, feed(&f, a, text, 14, &n) == KILN_OK && n == 0, "A: 14 tokens, pages 0 to 3");
  take(&before, &f);
  check(t, kiln_kv_pages_shift(&f.p, a, 5, 3, copy_page, &f) == KILN_OK,
        "shift keep 5 drop 3 in A's own pages");
  check(t,
        f.copies == 0 && memcmp(f.table, before.f.table, sizeof f.table) == 0 &&
            memcmp(f.refs, before.f.refs, sizeof f.refs) == 0,
        "own pages: no copy, no new page");
  check(t, records_shifted(&f, a, 5, 3), "token records of 8..13 moved down to 5..10");
  check(t, f.registered[0] && !f.registered[1] && !f.registered[2],
        "pages 1 and 2, written, unregistered; page 0, below keep's page, registered");
  check(t, finish_shift(&f, a, 5, 3) && table_at(&f, a, 3) == -1 && f.refs[3] == 0,
        "truncate to 11 frees page 3");
  check(t, state_ok(&f), "shift in own pages: state");

  b = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, b, text, 14) == 4 && table_at(&f, b, 0) == 0,
        "the old text adopts page 0 only");
  truncate_session(t, &f, b, 0);
  check(t, kiln_kv_pages_adopt(&f.p, b, f.history[a], 11) == 4,
        "A's shifted text adopts page 0 only");
  truncate_session(t, &f, b, 0);

  /* Values from keep on were computed with the dropped tokens in their
   * context, and so are all A computes after them: their tokens do not
   * give them, so no page holding them may be registered. */
  check(t, feed(&f, a, more, 5, &n) == KILN_OK && n == 0, "A goes on to 16");
  check(t,
        !f.registered[table_at(&f, a, 1)] && !f.registered[table_at(&f, a, 2)] &&
            !f.registered[table_at(&f, a, 3)],
        "pages filled after the shift are not registered");
  check(t, state_ok(&f), "after the shift: state");
  check(t, feed(&f, b, f.history[a], 16, &n) == KILN_OK && n == 4,
        "A's whole text adopts page 0 only");
  check(t, state_ok(&f), "after the shift: final state");

  /* keep on a page boundary: the page filled after it is not registered. */
  fixture_init(&f, 8, PAGE, 2, SPAN);
  a = feed_prompt(t, &f);
  check(t, kiln_kv_pages_shift(&f.p, a, 4, 4, copy_page, &f) == KILN_OK, "shift keep 4 drop 4");
  check(t, records_shifted(&f, a, 4, 4) && f.registered[0] && !f.registered[1],
        "tokens 8, 9 moved to 4, 5; page 1 unregistered");
  check(t, finish_shift(&f, a, 4, 4) && f.refs[2] == 0, "truncate to 6 frees page 2");
  check(t, feed(&f, a, more, 2, &n) == KILN_OK && !f.registered[table_at(&f, a, 1)],
        "page 1 filled after the shift: not registered");
  memcpy(b_text, f.history[a], 8 * sizeof b_text[0]);
  b_text[8] = 99;
  b = open_session(t, &f);
  check(t, feed(&f, b, b_text, 9, &n) == KILN_OK && n == 4, "A's text adopts page 0 only");
  check(t, state_ok(&f), "keep on a page boundary: state");

  /* Truncated back to keep, A computes from an unshifted context again. */
  truncate_session(t, &f, a, 4);
  check(t, feed(&f, a, prompt + 4, 6, &n) == KILN_OK && f.registered[table_at(&f, a, 1)],
        "truncated to keep: a full page is registered again");
  close_session(t, &f, b);
  b = open_session(t, &f);
  check(t, feed(&f, b, prompt, 10, &n) == KILN_OK && n == 8, "P adopts 8 again");
  check(t, state_ok(&f), "truncated to keep: state");
}

static void test_shift_shared(tally *t) {
  fixture f;
  int32_t a, b, c, d, n, a_table[SPAN], a_tokens[4 * PAGE];

  fixture_init(&f, 12, PAGE, 4, SPAN);
  a = open_session(t, &f);
  check(t, feed(&f, a, text, 14, &n) == KILN_OK && n == 0, "A: 14 tokens, pages 0 to 3");
  b = open_session(t, &f);
  check(t, feed(&f, b, text, 14, &n) == KILN_OK && n == 12 && table_at(&f, b, 3) == 4,
        "B adopts pages 0 to 2, computes page 4");
  memcpy(a_table, f.table + a * SPAN, sizeof a_table);
  memcpy(a_tokens, f.tokens, sizeof a_tokens);
  f.logged = 0;
  check(t, kiln_kv_pages_shift(&f.p, b, 4, 1, copy_page, &f) == KILN_OK,
        "B: shift keep 4 drop 1 over shared pages 1, 2 and its own page 4");
  check(t,
        f.copies == 2 && f.logged == 2 && f.copied[0][0] == 1 && f.copied[0][1] == 5 &&
            f.copied[1][0] == 2 && f.copied[1][1] == 6,
        "copy (1, 5) and (2, 6): the shared pages written, nothing else");
  check(t,
        table_at(&f, b, 0) == 0 && table_at(&f, b, 1) == 5 && table_at(&f, b, 2) == 6 &&
            table_at(&f, b, 3) == 4,
        "B maps the copies; page 0, below keep's page, and its own page 4 stay");
  check(t,
        f.refs[0] == 2 && f.refs[1] == 1 && f.refs[2] == 1 && f.refs[5] == 1 && f.refs[6] == 1 &&
            f.registered[0] && f.registered[1] && f.registered[2] && !f.registered[5] &&
            !f.registered[6] && !f.registered[4],
        "A's pages keep their registration, B's copies have none");
  check(t,
        memcmp(f.table + a * SPAN, a_table, sizeof a_table) == 0 &&
            memcmp(f.tokens, a_tokens, sizeof a_tokens) == 0,
        "A's table and token records unchanged");
  check(t, records_shifted(&f, b, 4, 1), "B's token records of 5..13 moved down to 4..12");
  check(t, finish_shift(&f, b, 4, 1) && table_at(&f, b, 3) == 4, "B truncates to 13");
  check(t, state_ok(&f), "shift over shared pages: state");

  /* Written up to position 4, page 1's first: pages 0 and 1 are copied,
   * shared page 2 is only read. */
  c = open_session(t, &f);
  check(t, feed(&f, c, text, 14, &n) == KILN_OK && n == 12 && table_at(&f, c, 3) == 7,
        "C adopts pages 0 to 2, computes page 7");
  f.logged = 0;
  n = f.copies;
  check(t, kiln_kv_pages_shift(&f.p, c, 1, 9, copy_page, &f) == KILN_OK, "C: shift keep 1 drop 9");
  check(t,
        f.copies == n + 2 && f.copied[0][0] == 0 && f.copied[0][1] == 8 && f.copied[1][0] == 1 &&
            f.copied[1][1] == 9,
        "copy (0, 8) and (1, 9), not page 2 that is only read");
  check(t,
        table_at(&f, c, 0) == 8 && table_at(&f, c, 1) == 9 && table_at(&f, c, 2) == 2 &&
            f.refs[2] == 2 && f.registered[2],
        "page 2 still shared with A, registered");
  check(t, records_shifted(&f, c, 1, 9) && finish_shift(&f, c, 1, 9), "C truncates to 5");
  check(t, table_at(&f, c, 2) == -1 && f.refs[2] == 1 && f.refs[7] == 0,
        "C's pages past 5 released");
  check(t,
        memcmp(f.table + a * SPAN, a_table, sizeof a_table) == 0 &&
            memcmp(f.tokens, a_tokens, sizeof a_tokens) == 0,
        "A's table and token records still unchanged");
  check(t, state_ok(&f), "shift over shared pages: state after C");

  d = open_session(t, &f);
  check(t,
        kiln_kv_pages_adopt(&f.p, d, text, 14) == 12 && table_at(&f, d, 0) == 0 &&
            table_at(&f, d, 1) == 1 && table_at(&f, d, 2) == 2,
        "A's pages are still found");
  record_adopted(&f, d, text, 12);
  check(t, state_ok(&f), "shift over shared pages: final state");
}

static void test_shift_full(tally *t) {
  fixture f;
  snapshot before;
  int32_t a, b, n;

  fixture_init(&f, 5, PAGE, 2, SPAN);
  a = open_session(t, &f);
  check(t, feed(&f, a, text, 14, &n) == KILN_OK, "A: pages 0 to 3");
  b = open_session(t, &f);
  check(t, feed(&f, b, text, 14, &n) == KILN_OK && n == 12 && kiln_kv_pages_used(&f.p) == 5,
        "B adopts 12 and takes the last page");
  (void)a;
  take(&before, &f);
  check(t, kiln_kv_pages_shift(&f.p, b, 0, 1, copy_page, &f) == KILN_ERR_POOL_FULL,
        "3 shared pages to copy, none free: KILN_ERR_POOL_FULL");
  check(t, same(&before, &f) && f.copies == 0, "POOL_FULL changes nothing, copies nothing");
  check(t, kiln_kv_pages_shift(&f.p, b, 9, 1, copy_page, &f) == KILN_ERR_POOL_FULL,
        "1 shared page to copy: KILN_ERR_POOL_FULL");
  check(t, same(&before, &f) && f.copies == 0, "nothing changed, nothing copied");
  check(t, kiln_kv_pages_shift(&f.p, b, 12, 1, copy_page, &f) == KILN_OK && f.copies == 0,
        "a shift inside B's own page needs no free page");
  check(t, records_shifted(&f, b, 12, 1) && finish_shift(&f, b, 12, 1), "B truncates to 13");
  check(t, state_ok(&f), "full: state");
}

/* One step as the header gives it: adopt, adopt_part, reserve the rest,
 * compute it, commit. Returns reserve's status; *adopted and *copied get
 * what adopt and adopt_part took. */
static kiln_status feed_part(fixture *f, int32_t id, const int32_t *tokens, int32_t n,
                             int32_t *adopted, int32_t *copied) {
  int32_t a = kiln_kv_pages_adopt(&f->p, id, tokens, n), c;

  record_adopted(f, id, tokens, a);
  c = kiln_kv_pages_adopt_part(&f->p, id, tokens + a, n - a, copy_page, f);
  record_adopted(f, id, tokens + a, c);
  *adopted = a;
  *copied = c;
  return feed(f, id, tokens + a + c, n - a - c, NULL);
}

/* P, then 31 to 35: page 2 shares A's 2 tokens and goes on. */
static const int32_t p_on[13] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34, 35};

static void test_adopt_part(tally *t) {
  fixture f;
  snapshot before;
  int32_t a, b, c, n, m, q, a_table[SPAN], a_tokens[3 * PAGE];
  uint32_t a_kv[3 * PAGE];

  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);
  b = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, b, p_on, 12) == 8, "B adopts A's 2 full pages");
  record_adopted(&f, b, p_on, 8);
  memcpy(a_table, f.table + a * SPAN, sizeof a_table);
  memcpy(a_tokens, f.tokens, sizeof a_tokens);
  memcpy(a_kv, f.kv, sizeof a_kv);
  take(&before, &f);
  f.logged = 0;
  n = kiln_kv_pages_adopt_part(&f.p, b, p_on + 8, 4, copy_page, &f);
  q = table_at(&f, b, 2);
  check(t, n == 2 && kiln_kv_session_position(&f.p, b) == 10,
        "adopt_part: the 2 tokens A holds of page 2 copied, B at 10");
  check(t,
        f.copies == 1 && f.logged == 1 && f.copied[0][0] == 2 && f.copied[0][1] == q && q >= 3 &&
            before.f.refs[q] == 0,
        "copy once, (A's page 2, a free page B now maps)");
  check(t,
        f.refs[q] == 1 && !f.registered[q] && f.refs[2] == 1 && kiln_kv_pages_used(&f.p) == 4,
        "B maps that page alone, unregistered; page 2 stays A's alone");
  check(t,
        memcmp(f.table + a * SPAN, a_table, sizeof a_table) == 0 &&
            memcmp(f.tokens, a_tokens, sizeof a_tokens) == 0 &&
            memcmp(f.kv, a_kv, sizeof a_kv) == 0,
        "A's table, tokens and values unchanged");
  check(t,
        memcmp(f.tokens + q * PAGE, prompt + 8, 2 * sizeof prompt[0]) == 0 &&
            memcmp(f.kv + q * PAGE, f.kv + 2 * PAGE, 2 * sizeof f.kv[0]) == 0,
        "B's page holds A's tokens and values of positions 8, 9");
  record_adopted(&f, b, p_on + 8, 2);
  check(t, state_ok(&f), "adopt_part: state (B's copied positions read B's own values)");

  /* The rest goes into B's own page: no second copy, and it registers full. */
  check(t,
        kiln_kv_pages_reserve(&f.p, b, 2, copy_page, &f) == KILN_OK && f.copies == 1 &&
            table_at(&f, b, 2) == q && kiln_kv_pages_used(&f.p) == 4,
        "reserve the rest: B's page already its own, no copy, no new page");
  compute(&f, b, p_on + 10, 2);
  check(t, kiln_kv_pages_commit(&f.p, b, p_on + 10, 2) == KILN_OK, "commit the rest");
  f.length[b] = 12;
  check(t, f.registered[q] && f.parent[q] == 1, "B's page, now full, registered under page 1");
  check(t, state_ok(&f), "adopt_part then commit: state");
  c = open_session(t, &f);
  check(t,
        feed_part(&f, c, p_on, 13, &n, &m) == KILN_OK && n == 12 && m == 0 &&
            table_at(&f, c, 2) == q && f.refs[q] == 2,
        "a third session adopts B's page whole");
  check(t, state_ok(&f), "adopt_part then adopt: state");

  /* The run leaves the last token to compute. */
  b = adopted_prefix(t, &f, 8, 4);
  check(t,
        kiln_kv_pages_adopt_part(&f.p, b, prompt + 8, 2, copy_page, &f) == 1 &&
            kiln_kv_session_position(&f.p, b) == 9 && f.copies == 1,
        "n = 2, equal to the common run: 1 copied");
  record_adopted(&f, b, prompt + 8, 1);
  check(t, feed(&f, b, prompt + 9, 1, &n) == KILN_OK && n == 0 && f.copies == 1,
        "the last token computed into B's copy");
  check(t, state_ok(&f), "last token: state");
}

/* P[0..8), then 31 32 33: 3 tokens of page 2. */
static const int32_t p_three[11] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33};

static void test_adopt_part_longest(tally *t) {
  fixture f;
  int32_t a, b, c, d, n, m, q;
  const int32_t p_one[10] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 40};
  const int32_t p_two[12] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 50, 51};

  /* A holds 2 tokens of page 2, C 3 and D 1: C's run is the longest. */
  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);
  c = open_session(t, &f);
  check(t, feed(&f, c, p_three, 11, &n) == KILN_OK && n == 8 && table_at(&f, c, 2) == 3,
        "C: P[0..8) adopted, 31 32 33 in page 3");
  d = open_session(t, &f);
  check(t, feed(&f, d, p_one, 10, &n) == KILN_OK && n == 8 && table_at(&f, d, 2) == 4,
        "D: P[0..8) adopted, 31 40 in page 4");
  b = open_session(t, &f);
  check(t, a < c && c < d && d < b, "sessions A, C, D, B in that order");
  f.logged = 0;
  check(t, feed_part(&f, b, p_on, 13, &n, &m) == KILN_OK && n == 8 && m == 3,
        "B: 8 adopted, the 3 C holds copied");
  q = table_at(&f, b, 2);
  check(t, f.logged == 1 && f.copied[0][0] == 3 && f.copied[0][1] == q && q > 4,
        "copy once, from C's page 3 to a page that was free");
  check(t, f.registered[q] && f.parent[q] == 1, "B's copy, filled, registered under page 1");
  check(t, state_ok(&f), "longest run: state");

  /* Equal runs: the contract names no session, so any of them will do. */
  fixture_init(&f, 8, PAGE, 4, SPAN);
  (void)feed_prompt(t, &f);
  c = open_session(t, &f);
  check(t, feed(&f, c, p_three, 11, &n) == KILN_OK && table_at(&f, c, 2) == 3, "C: page 3");
  d = open_session(t, &f);
  check(t, feed(&f, d, p_three, 11, &n) == KILN_OK && table_at(&f, d, 2) == 4,
        "D: the same tokens in its own page 4");
  b = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, b, p_on, 13) == 8, "B adopts 8");
  record_adopted(&f, b, p_on, 8);
  f.logged = 0;
  check(t,
        kiln_kv_pages_adopt_part(&f.p, b, p_on + 8, 5, copy_page, &f) == 3 && f.logged == 1 &&
            (f.copied[0][0] == 3 || f.copied[0][0] == 4),
        "C and D hold 3: 3 copied, from one of their pages");
  record_adopted(&f, b, p_on + 8, 3);
  check(t, state_ok(&f), "a tie of 3: state");
  close_session(t, &f, b);
  b = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, b, p_two, 12) == 8, "B again, adopts 8");
  record_adopted(&f, b, p_two, 8);
  f.logged = 0;
  check(t,
        kiln_kv_pages_adopt_part(&f.p, b, p_two + 8, 4, copy_page, &f) == 2 && f.logged == 1 &&
            f.copied[0][0] >= 2 && f.copied[0][0] <= 4,
        "A, C and D hold 31 32: 2 copied, from one of their pages");
  q = table_at(&f, b, 2);
  check(t, q >= 0 && f.refs[q] == 1 && !f.registered[q], "B's page its own, unregistered");
  record_adopted(&f, b, p_two + 8, 2);
  check(t, state_ok(&f), "a tie of 2: state");
}

/* Position 0: no parent to agree on; the other session's first page need
 * not be full. */
static void test_adopt_part_first_page(tally *t) {
  fixture f;
  int32_t a, b, c, n, m, q;

  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = open_session(t, &f);
  check(t, feed(&f, a, prompt, 2, &n) == KILN_OK && !f.registered[0], "A: 11 12, page 0 not full");
  b = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, b, prompt, 10) == 0, "nothing registered to adopt");
  f.logged = 0;
  check(t,
        kiln_kv_pages_adopt_part(&f.p, b, prompt, 10, copy_page, &f) == 2 &&
            kiln_kv_session_position(&f.p, b) == 2 && f.logged == 1 && f.copied[0][0] == 0,
        "at position 0: A's 2 tokens copied from its page 0");
  q = table_at(&f, b, 0);
  check(t, q > 0 && f.copied[0][1] == q && f.refs[q] == 1 && !f.registered[q] && f.refs[0] == 1,
        "into a page that was free, which B maps alone, unregistered");
  record_adopted(&f, b, prompt, 2);
  check(t, state_ok(&f), "at position 0: state");
  check(t, feed(&f, b, prompt + 2, 8, &n) == KILN_OK && n == 0 && f.copies == 1,
        "B computes the rest");
  check(t,
        f.registered[q] && f.parent[q] == -1 && f.registered[table_at(&f, b, 1)] &&
            f.parent[table_at(&f, b, 1)] == q,
        "B's first page, filled, registered as a first page; its second after it");
  check(t, state_ok(&f), "at position 0, filled: state");

  /* One page of tokens is not adopted (its last token is computed), but 3
   * are copied; B's full page beats A's 2 tokens. */
  c = open_session(t, &f);
  f.logged = 0;
  check(t, feed_part(&f, c, prompt, 4, &n, &m) == KILN_OK && n == 0 && m == 3,
        "C: one page of tokens, 0 adopted, 3 copied");
  check(t, f.logged == 1 && f.copied[0][0] == q, "from B's full page, not A's 2 tokens");
  check(t, state_ok(&f), "a page of tokens: state");
  (void)a;
}

/* adopt_part of tokens[0..n) for session id returns 0, changes nothing and
 * copies nothing (the fixture has copied nothing yet). */
static int part_refused(fixture *f, int32_t id, const int32_t *tokens, int32_t n) {
  snapshot before;
  take(&before, f);
  return kiln_kv_pages_adopt_part(&f->p, id, tokens, n, copy_page, f) == 0 && same(&before, f) &&
         f->copies == 0;
}

static void test_adopt_part_none(tally *t) {
  fixture f;
  snapshot before;
  int32_t a, b, c, n, m;
  const int32_t none[3] = {77, 78, 79}, late[2] = {32, 31}, mid[2] = {32, 33};
  const int32_t b_text[9] = {11, 12, 13, 14, 99, 21, 22, 23, 24};
  const int32_t other_first[10] = {91, 92, 93, 94, 21, 22, 23, 24, 31, 32};
  kiln_kv_pages bad;

  /* Bad arguments, where B at position 0 would otherwise copy 3 of P. */
  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);
  b = open_session(t, &f);
  bad = f.p;
  bad.page = 0;
  take(&before, &f);
  check(t,
        kiln_kv_pages_adopt_part(&f.p, 2, prompt, 4, copy_page, &f) == 0 &&
            kiln_kv_pages_adopt_part(&f.p, -1, prompt, 4, copy_page, &f) == 0 &&
            kiln_kv_pages_adopt_part(&f.p, 4, prompt, 4, copy_page, &f) == 0,
        "adopt_part: 0 for a closed or bad id");
  check(t,
        kiln_kv_pages_adopt_part(&f.p, b, NULL, 4, copy_page, &f) == 0 &&
            kiln_kv_pages_adopt_part(&f.p, b, prompt, 4, NULL, &f) == 0 &&
            kiln_kv_pages_adopt_part(NULL, b, prompt, 4, copy_page, &f) == 0 &&
            kiln_kv_pages_adopt_part(&bad, b, prompt, 4, copy_page, &f) == 0,
        "adopt_part: 0 for NULL tokens, NULL copy or an invalid pool");
  check(t,
        kiln_kv_pages_adopt_part(&f.p, b, prompt, 1, copy_page, &f) == 0 &&
            kiln_kv_pages_adopt_part(&f.p, b, prompt, 0, copy_page, &f) == 0 &&
            kiln_kv_pages_adopt_part(&f.p, b, prompt, -1, copy_page, &f) == 0,
        "adopt_part: 0 for n < 2");
  check(t, same(&before, &f) && f.copies == 0, "refused adopt_parts change nothing");

  /* B at 8, after A's pages 0 and 1. */
  check(t, kiln_kv_pages_adopt(&f.p, b, prompt, 10) == 8, "B adopts 8");
  record_adopted(&f, b, prompt, 8);
  check(t, part_refused(&f, b, none, 3) && part_refused(&f, b, late, 2),
        "no session holds the first token there: 0, nothing changed");
  check(t, feed(&f, b, prompt + 8, 1, &n) == KILN_OK, "B computes 31: at 9, mid-page");
  check(t, part_refused(&f, b, mid, 2),
        "mid-page: 0 though A holds 32 at the same position, nothing changed");
  truncate_session(t, &f, b, 8);
  check(t, kiln_kv_pages_reserve(&f.p, b, 1, copy_page, &f) == KILN_OK, "B reserves page 2");
  check(t, part_refused(&f, b, prompt + 8, 2),
        "the next page already mapped: 0, nothing changed");
  truncate_session(t, &f, b, 8);
  check(t, state_ok(&f), "no match: state");

  /* C holds 31 32 at page 2 under other pages than B's. */
  close_session(t, &f, a);
  c = open_session(t, &f);
  check(t, feed(&f, c, other_first, 10, &n) == KILN_OK && n == 0, "C: another first page");
  check(t, part_refused(&f, b, prompt + 8, 2),
        "the same tokens after another previous page: 0, nothing changed");
  check(t, state_ok(&f), "another previous page: state");

  /* B's page 1 is its own and unregistered (a shift wrote it). */
  fixture_init(&f, 8, PAGE, 4, SPAN);
  (void)feed_prompt(t, &f);
  b = open_session(t, &f);
  check(t, feed(&f, b, b_text, 9, &n) == KILN_OK && n == 4, "B: page 0 adopted, 5 computed");
  check(t,
        kiln_kv_pages_shift(&f.p, b, 4, 1, copy_page, &f) == KILN_OK && finish_shift(&f, b, 4, 1),
        "B drops 99: at 8 with 21 22 23 24 in its page 1");
  check(t, !f.registered[table_at(&f, b, 1)], "B's page 1 unregistered");
  check(t, part_refused(&f, b, prompt + 8, 2),
        "after an unregistered page of its own: 0, nothing changed");
  check(t, state_ok(&f), "unregistered previous page: state");

  /* No free page: the tokens are computed instead. */
  b = adopted_prefix(t, &f, 4, 3);
  c = open_session(t, &f);
  check(t, feed(&f, c, none, 1, &n) == KILN_OK && kiln_kv_pages_used(&f.p) == 4, "pool full");
  check(t, part_refused(&f, b, prompt + 8, 2),
        "no free page: 0, nothing changed or copied");
  close_session(t, &f, c);
  check(t,
        feed_part(&f, b, prompt + 8, 2, &n, &m) == KILN_OK && n == 0 && m == 1 && f.copies == 1,
        "a page freed: 1 copied");
  check(t, state_ok(&f), "no free page: state");
}

/* Values a shift moved were computed with the dropped positions in
 * context: no page a shift wrote is copied from, whatever its tokens. */
static void test_adopt_part_shifted(tally *t) {
  fixture f;
  int32_t a, b, c, n, m;
  const int32_t after_shift[10] = {11, 12, 13, 14, 21, 22, 23, 24, 32, 50};
  const int32_t first[3] = {11, 13, 50};
  const int32_t later[13] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 99, 98};

  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = feed_prompt(t, &f);
  check(t,
        kiln_kv_pages_shift(&f.p, a, 8, 1, copy_page, &f) == KILN_OK && finish_shift(&f, a, 8, 1),
        "A drops 31: holds P[0..8) 32, its 32 computed after 31");
  b = open_session(t, &f);
  check(t, kiln_kv_pages_adopt(&f.p, b, after_shift, 10) == 8, "B adopts 8");
  record_adopted(&f, b, after_shift, 8);
  check(t, part_refused(&f, b, after_shift + 8, 2),
        "A's shifted page matches 32 but is not copied from: 0, nothing changed, nothing copied");
  c = open_session(t, &f);
  check(t, feed(&f, c, after_shift, 9, &n) == KILN_OK && n == 8, "C computes 32 after P[0..8)");
  f.logged = 0;
  check(t,
        kiln_kv_pages_adopt_part(&f.p, b, after_shift + 8, 2, copy_page, &f) == 1 &&
            f.logged == 1 && f.copied[0][0] == table_at(&f, c, 2),
        "then 1 copied, from C's page, not A's");
  record_adopted(&f, b, after_shift + 8, 1);
  check(t, state_ok(&f), "shifted page: state");

  /* At position 0: A's first page, written by a shift, is not copied from
   * either, though its position 0 lay below keep. */
  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = open_session(t, &f);
  check(t, feed(&f, a, prompt, 3, &n) == KILN_OK, "A: 11 12 13");
  check(t,
        kiln_kv_pages_shift(&f.p, a, 1, 1, copy_page, &f) == KILN_OK && finish_shift(&f, a, 1, 1),
        "A drops 12: holds 11 13");
  b = open_session(t, &f);
  check(t, part_refused(&f, b, first, 3) && part_refused(&f, b, first, 2),
        "A's shifted first page is not copied from: 0, nothing changed, nothing copied");

  /* A shift in a later page leaves the pages before it clean. */
  fixture_init(&f, 8, PAGE, 4, SPAN);
  a = open_session(t, &f);
  check(t, feed(&f, a, text, 14, &n) == KILN_OK, "A: 14 tokens, pages 0 to 3");
  check(t,
        kiln_kv_pages_shift(&f.p, a, 12, 1, copy_page, &f) == KILN_OK &&
            finish_shift(&f, a, 12, 1),
        "A drops 41: the shift writes page 3 only");
  b = open_session(t, &f);
  f.logged = 0;
  check(t,
        feed_part(&f, b, later, 13, &n, &m) == KILN_OK && n == 8 && m == 3 && f.logged == 1 &&
            f.copied[0][0] == 2,
        "B: 8 adopted, 3 copied from A's page 2, which the shift did not write");
  check(t, state_ok(&f), "a shift in a later page: state");
}

/* Test-local generator (xorshift64*). */
static uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);

static uint32_t next_u32(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (uint32_t)((rng * UINT64_C(2685821657736338717)) >> 32);
}

/* Pages the test expects making positions at..at+n-1 writable to need,
 * from the tables alone. */
static int32_t pages_needed(const fixture *f, int32_t id, int32_t at, int32_t n,
                            int32_t *free_pages) {
  int32_t mapped[MAX_PAGES], s, lp, q, need = 0;

  memset(mapped, 0, sizeof mapped);
  for (s = 0; s < f->p.sessions; s++)
    for (lp = 0; lp < f->p.span; lp++)
      if (table_at(f, s, lp) >= 0)
        mapped[table_at(f, s, lp)]++;
  for (*free_pages = 0, q = 0; q < f->p.pages; q++)
    *free_pages += mapped[q] == 0;
  for (lp = at / f->p.page; n > 0 && lp <= (at + n - 1) / f->p.page; lp++)
    need += table_at(f, id, lp) < 0 || mapped[table_at(f, id, lp)] > 1;
  return need;
}

/* Logical pages from ceil(n / page) on are released by a truncate to n,
 * and with them the marks of the pages a shift wrote first. */
static uint32_t marks_kept(uint32_t marks, int32_t n, int32_t page) {
  return marks & ((1u << ((n + page - 1) / page)) - 1u);
}

/* What kiln_kv_pages_adopt_part must copy for tokens[0..n), worked out from
 * the record and the tables: at a page start the session has not mapped,
 * after a page it computed clean (no shift wrote it or a page before it),
 * the longest run of tokens another session holds in its next page after
 * the same physical page, short of the last token, from a page neither a
 * shift nor what followed one wrote; 0 with no free page. marks[s] has bit
 * lp set when a shift wrote logical page lp of session s first. */
static int32_t part_expected(const fixture *f, int32_t id, const int32_t *tokens, int32_t n,
                             const uint32_t *marks) {
  int32_t page = f->p.page, at = f->length[id], lp = at / page, s, best = 0, free_pages;

  if (n < 2 || at % page != 0 || lp >= f->p.span || table_at(f, id, lp) >= 0 ||
      (marks[id] & ((1u << lp) - 1u)) != 0)
    return 0;
  for (s = 0; s < f->p.sessions; s++) {
    int32_t held, k = 0;

    if (s == id || f->length[s] <= at || (marks[s] & ((2u << lp) - 1u)) != 0 ||
        (lp > 0 && table_at(f, s, lp - 1) != table_at(f, id, lp - 1)))
      continue;
    held = f->length[s] - at < page ? f->length[s] - at : page;
    while (k < held && k < n - 1 && f->history[s][at + k] == tokens[k])
      k++;
    best = k > best ? k : best;
  }
  (void)pages_needed(f, id, at, 0, &free_pages);
  return free_pages > 0 ? best : 0;
}

/* Random sessions over prompts that often share prefixes; the state is
 * checked after every step. */
static void test_random(tally *t) {
  enum { STEPS = 20000, PAGES = 12, RPAGE = 3, SESSIONS = 4, RSPAN = 6 };
  static const int32_t bases[3][RSPAN * RPAGE] = {
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9},
      {1, 2, 3, 4, 5, 6, 9, 9, 9, 9, 9, 9, 1, 1, 1, 1, 1, 1},
      {3, 3, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9}};
  fixture f;
  int32_t step, id, n, a, c, i, need, free_pages, adopted = 0, full = 0, shifts = 0, shift_full = 0;
  int32_t parts = 0, toks[RSPAN * RPAGE];
  uint32_t marks[SESSIONS] = {0, 0, 0, 0};
  int bad = 0;

  fixture_init(&f, PAGES, RPAGE, SESSIONS, RSPAN);
  for (step = 0; step < STEPS && !bad; step++) {
    uint32_t r = next_u32();
    kiln_status st;

    id = (int32_t)(r % SESSIONS);
    r /= SESSIONS;
    if (f.length[id] < 0) {
      int32_t want = 0, got = -1;
      while (f.length[want] >= 0)
        want++;
      bad |= kiln_kv_session_open(&f.p, &got) != KILN_OK || got != want;
      f.length[got] = 0;
      marks[got] = 0;
    } else if (r % 10 == 0) {
      bad |= kiln_kv_session_close(&f.p, id) != KILN_OK;
      f.length[id] = -1;
      marks[id] = 0;
    } else if (r % 10 < 3) {
      n = (int32_t)(next_u32() % (uint32_t)(f.length[id] + 1));
      bad |= kiln_kv_pages_truncate(&f.p, id, n) != KILN_OK;
      f.length[id] = n;
      marks[id] = marks_kept(marks[id], n, RPAGE);
    } else if (r % 10 == 3) {
      int32_t len = f.length[id], keep, drop, copies = f.copies;
      snapshot before;

      keep = (int32_t)(next_u32() % (uint32_t)(len + 1));
      drop =
          next_u32() % 8 == 0 ? len - keep + 1 : (int32_t)(next_u32() % (uint32_t)(len - keep + 1));
      take(&before, &f);
      st = kiln_kv_pages_shift(&f.p, id, keep, drop, copy_page, &f);
      if (drop > len - keep) {
        bad |= st != KILN_ERR_ARGUMENT || !same(&before, &f) || f.copies != copies;
      } else if (drop == 0 || keep == len - drop) {
        bad |= st != KILN_OK || !same(&before, &f) || f.copies != copies;
        bad |= !finish_shift(&f, id, keep, drop);
        marks[id] = marks_kept(marks[id], len - drop, RPAGE);
      } else if (pages_needed(&f, id, keep, len - drop - keep, &free_pages) > free_pages) {
        bad |= st != KILN_ERR_POOL_FULL || !same(&before, &f) || f.copies != copies;
        shift_full++;
      } else {
        bad |= st != KILN_OK || !records_shifted(&f, id, keep, drop) ||
               !finish_shift(&f, id, keep, drop);
        marks[id] = marks_kept(marks[id] | 1u << (keep / RPAGE), len - drop, RPAGE);
        shifts++;
      }
    } else {
      const int32_t *base = bases[next_u32() % 3];
      int32_t at = f.length[id], copies, want;
      snapshot before;

      n = 1 + (int32_t)(next_u32() % 8);
      for (i = 0; i < n; i++)
        toks[i] = at + i < RSPAN * RPAGE && next_u32() % 16 != 0 ? base[at + i]
                                                                 : (int32_t)(next_u32() % 4);
      a = kiln_kv_pages_adopt(&f.p, id, toks, n);
      if (a < 0 || a >= n || a % RPAGE != 0 || (a > 0 && at % RPAGE != 0)) {
        printf("  step %d: adopted %d of %d at %d\n", (int)step, (int)a, (int)n, (int)at);
        bad = 1;
        break;
      }
      adopted += a;
      record_adopted(&f, id, toks, a);
      want = part_expected(&f, id, toks + a, n - a, marks);
      copies = f.copies;
      take(&before, &f);
      c = kiln_kv_pages_adopt_part(&f.p, id, toks + a, n - a, copy_page, &f);
      if (c != want || f.copies != copies + (c > 0) || (c == 0 && !same(&before, &f)) ||
          (c > 0 && (table_at(&f, id, f.length[id] / RPAGE) != f.copy_to ||
                     f.refs[f.copy_to] != 1 || f.registered[f.copy_to]))) {
        printf("  step %d: adopt_part copied %d of %d at %d, want %d\n", (int)step, (int)c,
               (int)(n - a), (int)f.length[id], (int)want);
        bad = 1;
        break;
      }
      parts += c > 0;
      record_adopted(&f, id, toks + a, c);
      a += c;
      /* pages_needed reads the table, so only within capacity. */
      need = at + n > RSPAN * RPAGE ? -1 : pages_needed(&f, id, f.length[id], n - a, &free_pages);
      take(&before, &f);
      st = kiln_kv_pages_reserve(&f.p, id, n - a, copy_page, &f);
      if (need < 0) {
        bad |= st != KILN_ERR_CONTEXT_FULL || !same(&before, &f);
        full++;
      } else if (need > free_pages) {
        bad |= st != KILN_ERR_POOL_FULL || !same(&before, &f);
        full++;
      } else if (st != KILN_OK) {
        bad = 1;
      } else {
        compute(&f, id, toks + a, n - a);
        bad |= kiln_kv_pages_commit(&f.p, id, toks + a, n - a) != KILN_OK;
        f.length[id] += n - a;
      }
    }
    if (!state_ok(&f)) {
      printf("  after step %d\n", (int)step);
      bad = 1;
    }
  }
  check(t, !bad, "random sessions keep every prefix's values");
  check(t, adopted > 1000 && full > 100 && f.copies > 100,
        "random sessions adopt, copy and fill the pool often");
  check(t, shifts > 300 && shift_full > 20, "random sessions shift often, some into a full pool");
  check(t, parts > 100, "random sessions copy part of a page often");
}

int main(void) {
  tally t = {0, 0};

  test_init_and_sessions(&t);
  test_arguments(&t);
  test_prompt_and_adopt(&t);
  test_partial_matches(&t);
  test_copy_on_write(&t);
  test_unregister(&t);
  test_exact_compare(&t);
  test_full(&t);
  test_close(&t);
  test_shift_arguments(&t);
  test_shift_own(&t);
  test_shift_shared(&t);
  test_shift_full(&t);
  test_adopt_part(&t);
  test_adopt_part_longest(&t);
  test_adopt_part_first_page(&t);
  test_adopt_part_none(&t);
  test_adopt_part_shifted(&t);
  test_random(&t);

  printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
