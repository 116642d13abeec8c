/* Paged KV cache bookkeeping with a prefix cache; see kiln_kv_pages.h.
 *
 * Invariants kept by every function:
 *  - refs[q] is the number of table entries, over all sessions, equal to q.
 *  - A session maps every logical page below ceil(pos / page); pages past
 *    that are reserved ones, mapped by it alone and unregistered.
 *  - A registered page holds keys and values for all its positions, and
 *    each session mapping it maps its parent just before it. So a parent
 *    lives as long as its children, and a parent id always names the page
 *    the child was registered after. A session's position lies past its
 *    registered pages, except one cut into by truncate, which stays intact
 *    until reserve copies or unregisters it.
 *  - A registered page's values are the ones its tokens give computed from
 *    the start, so its parent is registered too. A shift breaks this: the
 *    values it moves, and all the session computes after them, were
 *    computed with the dropped positions in context. It marks the first
 *    page it writes MOVED_VALUES, and commit registers no marked page and
 *    none after an unregistered one. (Between a shift and its truncate, a
 *    page past the moved range may still be registered under a page the
 *    shift wrote; the truncate releases it.) */
#include "kiln/kiln_kv_pages.h"

#include <stddef.h>
#include <string.h>

static int pool_valid(const kiln_kv_pages *p) {
  if (p == NULL || p->pages <= 0 || p->page <= 0 || p->sessions <= 0 || p->span <= 0)
    return 0;
  if ((int64_t)p->span * p->page > INT32_MAX)
    return 0; /* positions are int32 */
  if ((uint64_t)p->pages * (uint64_t)p->page > SIZE_MAX / sizeof(int32_t) ||
      (uint64_t)p->sessions * (uint64_t)p->span > SIZE_MAX / sizeof(int32_t))
    return 0; /* array indices are size_t */
  return p->refs != NULL && p->parent != NULL && p->hash != NULL && p->registered != NULL &&
         p->tokens != NULL && p->table != NULL && p->pos != NULL;
}

/* parent[] of a mapped, unregistered page holding values a shift moved:
 * never registered again. Cleared when the page is freed. */
#define MOVED_VALUES (-2)

static int session_valid(const kiln_kv_pages *p, int32_t id) {
  return id >= 0 && id < p->sessions && p->pos[id] >= 0;
}

static int32_t *table_of(const kiln_kv_pages *p, int32_t id) {
  return p->table + (size_t)id * (size_t)p->span;
}

static int32_t *tokens_of(const kiln_kv_pages *p, int32_t q) {
  return p->tokens + (size_t)q * (size_t)p->page;
}

/* FNV-1a over the bytes of each word, least significant first, so the
 * value does not depend on the host's byte order. */
static uint32_t fnv_word(uint32_t h, uint32_t w) {
  int i;

  for (i = 0; i < 4; i++) {
    h ^= (w >> (8 * i)) & 0xffu;
    h *= 16777619u;
  }
  return h;
}

static uint32_t page_hash(int32_t parent, const int32_t *tokens, int32_t page) {
  uint32_t h = 2166136261u;
  int32_t i;

  h = fnv_word(h, (uint32_t)parent);
  for (i = 0; i < page; i++)
    h = fnv_word(h, (uint32_t)tokens[i]);
  return h;
}

/* The lowest registered page with this parent and these tokens, or -1. A
 * linear scan: pools hold hundreds to a few thousand pages, and the hash
 * rejects nearly every other page with one compare. */
static int32_t find_registered(const kiln_kv_pages *p, int32_t parent, const int32_t *tokens) {
  uint32_t h = page_hash(parent, tokens, p->page);
  int32_t q;

  for (q = 0; q < p->pages; q++) {
    if (!p->registered[q] || p->hash[q] != h || p->parent[q] != parent)
      continue;
    if (memcmp(tokens_of(p, q), tokens, (size_t)p->page * sizeof(int32_t)) == 0)
      return q;
  }
  return -1;
}

static void unregister(kiln_kv_pages *p, int32_t q) {
  p->registered[q] = 0;
  p->parent[q] = -1;
  p->hash[q] = 0;
}

static void release(kiln_kv_pages *p, int32_t q) {
  if (--p->refs[q] == 0)
    unregister(p, q);
}

/* Releases logical pages from `from` on. */
static void release_from(kiln_kv_pages *p, int32_t id, int32_t from) {
  int32_t *t = table_of(p, id);
  int32_t lp;

  for (lp = from; lp < p->span; lp++) {
    if (t[lp] >= 0) {
      release(p, t[lp]);
      t[lp] = -1;
    }
  }
}

void kiln_kv_pages_init(kiln_kv_pages *p) {
  int32_t i;

  if (!pool_valid(p))
    return;
  for (i = 0; i < p->pages; i++) {
    p->refs[i] = 0;
    unregister(p, i);
  }
  memset(p->tokens, 0, (size_t)p->pages * (size_t)p->page * sizeof(int32_t));
  for (i = 0; i < p->sessions; i++) {
    int32_t *t = table_of(p, i), lp;
    for (lp = 0; lp < p->span; lp++)
      t[lp] = -1;
    p->pos[i] = -1;
  }
}

kiln_status kiln_kv_session_open(kiln_kv_pages *p, int32_t *id) {
  int32_t i;

  if (!pool_valid(p) || id == NULL)
    return KILN_ERR_ARGUMENT;
  for (i = 0; i < p->sessions; i++) {
    if (p->pos[i] < 0) {
      p->pos[i] = 0; /* close left its table empty */
      *id = i;
      return KILN_OK;
    }
  }
  return KILN_ERR_SESSION;
}

kiln_status kiln_kv_session_close(kiln_kv_pages *p, int32_t id) {
  if (!pool_valid(p))
    return KILN_ERR_ARGUMENT;
  if (!session_valid(p, id))
    return KILN_ERR_SESSION;
  release_from(p, id, 0);
  p->pos[id] = -1;
  return KILN_OK;
}

int32_t kiln_kv_session_position(const kiln_kv_pages *p, int32_t id) {
  if (!pool_valid(p) || !session_valid(p, id))
    return -1;
  return p->pos[id];
}

const int32_t *kiln_kv_session_table(const kiln_kv_pages *p, int32_t id) {
  if (!pool_valid(p) || !session_valid(p, id))
    return NULL;
  return table_of(p, id);
}

int32_t kiln_kv_pages_adopt(kiln_kv_pages *p, int32_t id, const int32_t *tokens, int32_t n) {
  int32_t *t;
  int32_t done = 0;

  if (!pool_valid(p) || !session_valid(p, id) || n < 0 || (tokens == NULL && n > 0))
    return 0;
  t = table_of(p, id);
  for (;;) {
    int32_t pos = p->pos[id], lp = pos / p->page, parent, q;

    /* n - done > page: at least one token must be left to compute. */
    if (pos % p->page != 0 || lp >= p->span || t[lp] >= 0 || n - done <= p->page)
      break;
    parent = lp > 0 ? t[lp - 1] : -1;
    if (lp > 0 && parent < 0)
      break; /* cannot happen while the invariants hold; -1 would match a first page */
    q = find_registered(p, parent, tokens + done);
    if (q < 0)
      break;
    t[lp] = q;
    p->refs[q]++;
    p->pos[id] = pos + p->page;
    done += p->page;
  }
  return done;
}

/* The lowest free page from `from` on, or p->pages when there is none. */
static int32_t free_page(const kiln_kv_pages *p, int32_t from) {
  while (from < p->pages && p->refs[from] != 0)
    from++;
  return from;
}

/* Free page q made a copy of page `from` (its keys and values by the
 * caller's copy, its token records here) and mapped once; free pages are
 * already unregistered. */
static void take_copy(kiln_kv_pages *p, int32_t q, int32_t from, kiln_kv_copy_fn copy,
                      void *ctx) {
  copy(ctx, from, q);
  memcpy(tokens_of(p, q), tokens_of(p, from), (size_t)p->page * sizeof(int32_t));
  p->refs[q] = 1;
}

int32_t kiln_kv_pages_adopt_part(kiln_kv_pages *p, int32_t id, const int32_t *tokens, int32_t n,
                                 kiln_kv_copy_fn copy, void *ctx) {
  const int32_t *t;
  int32_t pos, lp, prev, s, best = 0, from = -1, q;

  if (!pool_valid(p) || !session_valid(p, id) || n < 2 || tokens == NULL || copy == NULL)
    return 0;
  t = table_of(p, id);
  pos = p->pos[id];
  lp = pos / p->page;
  prev = lp > 0 ? t[lp - 1] : -1;
  /* Values are clean after a registered page (or at the start): a page a
   * shift wrote, and those after it, never follow one. */
  if (pos % p->page != 0 || lp >= p->span || t[lp] >= 0 || (lp > 0 && (prev < 0 ||
                                                                      !p->registered[prev])))
    return 0;
  for (s = 0; s < p->sessions; s++) {
    const int32_t *t2 = table_of(p, s);
    int32_t held, k = 0;

    if (s == id || p->pos[s] <= lp * p->page || (lp > 0 && t2[lp - 1] != prev) || t2[lp] < 0 ||
        p->parent[t2[lp]] == MOVED_VALUES)
      continue;
    held = p->pos[s] - lp * p->page < p->page ? p->pos[s] - lp * p->page : p->page;
    /* k < n: a token must be left to compute. */
    while (k < held && k < n - 1 && tokens_of(p, t2[lp])[k] == tokens[k])
      k++;
    if (k > best)
      best = k, from = t2[lp];
  }
  if (best == 0)
    return 0;
  q = free_page(p, 0);
  if (q == p->pages)
    return 0; /* no free page: the tokens are computed instead */
  take_copy(p, q, from, copy, ctx);
  table_of(p, id)[lp] = q;
  p->pos[id] = pos + best;
  return best;
}

/* Logical pages first..last of the session mapped by it alone and
 * unregistered: a free page for an unmapped one, a copy for a shared one.
 * KILN_ERR_POOL_FULL, with nothing changed, when too few pages are free. */
static kiln_status own_pages(kiln_kv_pages *p, int32_t id, int32_t first, int32_t last,
                             kiln_kv_copy_fn copy, void *ctx) {
  int32_t *t = table_of(p, id);
  int32_t lp, q, need = 0, free_pages = 0, next = 0;

  /* Count first so that a full pool changes nothing. */
  for (lp = first; lp <= last; lp++)
    if (t[lp] < 0 || p->refs[t[lp]] > 1)
      need++;
  for (q = free_page(p, 0); q < p->pages && free_pages < need; q = free_page(p, q + 1))
    free_pages++;
  if (free_pages < need)
    return KILN_ERR_POOL_FULL;

  for (lp = first; lp <= last; lp++) {
    int32_t old = t[lp];

    if (old >= 0 && p->refs[old] == 1) {
      if (p->registered[old])
        unregister(p, old); /* its content is about to change */
      continue;
    }
    q = next = free_page(p, next); /* counted above, so one is there */
    if (old >= 0) {
      /* Shared: the other sessions keep the old page as it is. */
      take_copy(p, q, old, copy, ctx);
      p->refs[old]--;
    } else {
      p->refs[q] = 1; /* free pages are already unregistered */
    }
    t[lp] = q;
  }
  return KILN_OK;
}

kiln_status kiln_kv_pages_reserve(kiln_kv_pages *p, int32_t id, int32_t n, kiln_kv_copy_fn copy,
                                  void *ctx) {
  int32_t pos;

  if (!pool_valid(p) || n < 0 || copy == NULL)
    return KILN_ERR_ARGUMENT;
  if (!session_valid(p, id))
    return KILN_ERR_SESSION;
  pos = p->pos[id];
  if ((int64_t)pos + n > (int64_t)p->span * p->page)
    return KILN_ERR_CONTEXT_FULL;
  if (n == 0)
    return KILN_OK;
  return own_pages(p, id, pos / p->page, (pos + n - 1) / p->page, copy, ctx);
}

kiln_status kiln_kv_pages_shift(kiln_kv_pages *p, int32_t id, int32_t keep, int32_t drop,
                                kiln_kv_copy_fn copy, void *ctx) {
  const int32_t *t;
  int32_t pos, i;
  kiln_status s;

  if (!pool_valid(p) || copy == NULL)
    return KILN_ERR_ARGUMENT;
  if (!session_valid(p, id))
    return KILN_ERR_SESSION;
  pos = p->pos[id];
  if (keep < 0 || drop < 0 || drop > pos - keep)
    return KILN_ERR_ARGUMENT;
  if (drop == 0 || keep == pos - drop)
    return KILN_OK; /* nothing moves: truncate alone drops the tail */
  s = own_pages(p, id, keep / p->page, (pos - drop - 1) / p->page, copy, ctx);
  if (s != KILN_OK)
    return s;
  t = table_of(p, id);
  p->parent[t[keep / p->page]] = MOVED_VALUES; /* own_pages left it unregistered */
  for (i = keep; i < pos - drop; i++) {
    tokens_of(p, t[i / p->page])[i % p->page] =
        tokens_of(p, t[(i + drop) / p->page])[(i + drop) % p->page];
  }
  return KILN_OK;
}

kiln_status kiln_kv_pages_commit(kiln_kv_pages *p, int32_t id, const int32_t *tokens, int32_t n) {
  int32_t *t;
  int32_t pos, first, last, lp, i;

  if (!pool_valid(p) || n < 0 || (tokens == NULL && n > 0))
    return KILN_ERR_ARGUMENT;
  if (!session_valid(p, id))
    return KILN_ERR_SESSION;
  pos = p->pos[id];
  if ((int64_t)pos + n > (int64_t)p->span * p->page)
    return KILN_ERR_ARGUMENT;
  if (n == 0)
    return KILN_OK;
  t = table_of(p, id);
  first = pos / p->page;
  last = (pos + n - 1) / p->page;
  /* What reserve leaves: each page mapped by this session alone, unregistered. */
  for (lp = first; lp <= last; lp++)
    if (t[lp] < 0 || p->refs[t[lp]] != 1 || p->registered[t[lp]])
      return KILN_ERR_ARGUMENT;

  for (i = 0; i < n; i++) {
    int32_t at = pos + i;
    tokens_of(p, t[at / p->page])[at % p->page] = tokens[i];
  }
  p->pos[id] = pos + n;
  for (lp = first; lp <= last && (lp + 1) * p->page <= pos + n; lp++) {
    int32_t q = t[lp], parent = lp > 0 ? t[lp - 1] : -1;

    /* Values a shift moved, or computed after them: their tokens do not give them. */
    if (p->parent[q] == MOVED_VALUES || (parent >= 0 && !p->registered[parent]))
      break;
    p->parent[q] = parent;
    p->hash[q] = page_hash(parent, tokens_of(p, q), p->page);
    p->registered[q] = 1;
  }
  return KILN_OK;
}

kiln_status kiln_kv_pages_truncate(kiln_kv_pages *p, int32_t id, int32_t n) {
  if (!pool_valid(p))
    return KILN_ERR_ARGUMENT;
  if (!session_valid(p, id))
    return KILN_ERR_SESSION;
  if (n < 0 || n > p->pos[id])
    return KILN_ERR_ARGUMENT;
  release_from(p, id, n / p->page + (n % p->page != 0));
  p->pos[id] = n;
  return KILN_OK;
}

int32_t kiln_kv_pages_used(const kiln_kv_pages *p) {
  int32_t q, used = 0;

  if (!pool_valid(p))
    return -1;
  for (q = 0; q < p->pages; q++)
    if (p->refs[q] > 0)
      used++;
  return used;
}
