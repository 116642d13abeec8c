/* Kiln runtime: a paged KV cache shared by several sessions.
 *
 * Pure C99: no heap, no globals, no I/O. The KV cache of `sessions`
 * sessions is one pool of `pages` physical pages of `page` positions each;
 * each session reaches its positions through a page table (logical page ->
 * physical page), so position i of session s is slot i % page of physical
 * page table[s][i / page]. The caller owns every array below (a generated
 * model keeps them in its struct with compile-time sizes) and the keys and
 * values themselves: this module keeps only the bookkeeping and never reads
 * or writes KV bytes.
 *
 * Prefix cache: a page is registered once a session has written all of its
 * positions. It is found by its parent (the physical page before it in the
 * prefix, -1 for a first page) and its token ids: when both match, the
 * whole prefix up to its end is equal, and so are the keys and values. A
 * session whose next tokens match maps the page instead of computing it
 * (kiln_kv_pages_adopt). Pages count the sessions mapping them, and a
 * shared page is copied, through the caller's copy function, before a
 * session writes into it.
 *
 * One step of a session, for n tokens at its position:
 *
 *   a = kiln_kv_pages_adopt(p, id, tokens, n);       skips a cached prefix
 *   a += kiln_kv_pages_adopt_part(p, id, tokens + a, n - a, copy, ctx);
 *   kiln_kv_pages_reserve(p, id, n - a, copy, ctx);  pages to write into
 *   compute tokens[a..n) at positions pos..pos + n - a - 1
 *   kiln_kv_pages_commit(p, id, tokens + a, n - a);
 *
 * A pool is valid when pages, page, sessions and span are >= 1, span * page
 * fits in an int32 and every pointer is set. The functions returning a
 * status give KILN_ERR_ARGUMENT for an invalid pool, a NULL pointer or a
 * bad count and KILN_ERR_SESSION for a bad or closed session id; a failure
 * changes nothing. Not thread-safe: the caller serializes calls on a pool. */
#ifndef KILN_KILN_KV_PAGES_H
#define KILN_KILN_KV_PAGES_H

#include <stdint.h>

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Copies the keys and values of every layer from physical page `from` to
 * physical page `to`. */
typedef void (*kiln_kv_copy_fn)(void *ctx, int32_t from, int32_t to);

typedef struct kiln_kv_pages {
  int32_t pages;       /* physical pages in the pool */
  int32_t page;        /* positions per page */
  int32_t sessions;    /* sessions open at one time, at most */
  int32_t span;        /* page-table entries per session: the most pages one session maps */
  int32_t *refs;       /* [pages] sessions mapping each page; 0: free */
  int32_t *parent;     /* [pages] a registered page's predecessor in its prefix; -1: a first page */
  uint32_t *hash;      /* [pages] of a registered page: hash of parent and tokens */
  uint8_t *registered; /* [pages] 1: full and findable by the prefix cache */
  int32_t *tokens;     /* [pages * page] the token ids whose keys and values each page holds */
  int32_t *table;      /* [sessions * span] physical page of each logical page; -1: none */
  int32_t *pos;        /* [sessions] positions each session holds; -1: closed */
} kiln_kv_pages;

/* Every page free and unregistered, every token record 0, every table entry
 * -1, every session closed. The caller has set the sizes and pointers; an
 * invalid pool is left alone. */
void kiln_kv_pages_init(kiln_kv_pages *p);

/* Opens the lowest closed session at position 0 and stores its id in *id
 * (written only on success). KILN_ERR_SESSION when all are open. */
kiln_status kiln_kv_session_open(kiln_kv_pages *p, int32_t *id);

/* Releases every page the session maps (a page no session maps any more is
 * free and unregistered) and closes it. */
kiln_status kiln_kv_session_close(kiln_kv_pages *p, int32_t id);

/* The session's position; -1 for a bad or closed id. */
int32_t kiln_kv_session_position(const kiln_kv_pages *p, int32_t id);

/* The session's span page-table entries; NULL for a bad or closed id. Valid
 * until the next call that changes the pool. */
const int32_t *kiln_kv_session_table(const kiln_kv_pages *p, int32_t id);

/* The prefix cache's lookup, before tokens[0..n) are computed at the
 * session's position. While that position starts a page, the next logical
 * page is unmapped and a token would remain after it, maps the registered
 * page (if any) whose parent is the session's page before that one (-1 at
 * position 0) and whose tokens are the next `page` tokens, and advances the
 * position by a page. The last token is never adopted: the caller computes
 * it for its logits. Returns the tokens adopted, a multiple of page; 0 for
 * an invalid pool, a bad or closed id, n < 0, or NULL tokens with n > 0. */
int32_t kiln_kv_pages_adopt(kiln_kv_pages *p, int32_t id, const int32_t *tokens, int32_t n);

/* After adopt, where the prefix cache ends inside a page: while the
 * session's position starts a page that it has not mapped, the longest run
 * of the next tokens (at least one token left to compute) that another
 * session holds at the same place, after the same registered page (or at
 * position 0), is copied into a free page (copy(ctx, theirs, free)) and the
 * position advanced past it. Returns the tokens copied: 0 when none match,
 * no page is free, or for bad arguments. Pages a shift wrote are never
 * copied from (their values were computed with the dropped positions). */
int32_t kiln_kv_pages_adopt_part(kiln_kv_pages *p, int32_t id, const int32_t *tokens, int32_t n,
                                 kiln_kv_copy_fn copy, void *ctx);

/* Makes positions pos..pos+n-1 of the session writable before the caller
 * computes them. Each logical page they touch ends up mapped by this session
 * alone and unregistered: an unmapped page gets a free page, a shared page
 * is replaced by a free page after copy(ctx, shared, free) and its token
 * record is copied too, and a registered page of its own is unregistered.
 * Free pages are taken lowest index first. KILN_ERR_CONTEXT_FULL when
 * pos + n > span * page, else KILN_ERR_POOL_FULL when too few pages are
 * free; both checked before anything changes. n = 0 does nothing. copy
 * must not be NULL. */
kiln_status kiln_kv_pages_reserve(kiln_kv_pages *p, int32_t id, int32_t n, kiln_kv_copy_fn copy,
                                  void *ctx);

/* After the caller computed tokens[0..n) at positions pos..pos+n-1: records
 * the tokens, advances the position by n and registers each page that became
 * full (parent: the physical page of the logical page before it, or -1),
 * but for pages holding values a shift moved and the pages after them: their
 * values were computed with the dropped positions in context.
 * KILN_ERR_ARGUMENT when reserve did not cover those positions (a page
 * unmapped, shared or registered). */
kiln_status kiln_kv_pages_commit(kiln_kv_pages *p, int32_t id, const int32_t *tokens, int32_t n);

/* A context shift's bookkeeping (keep the first `keep` positions, drop the
 * next `drop`, move the rest down): positions keep..pos-drop-1 made writable
 * as reserve does (copies of shared pages; KILN_ERR_POOL_FULL changes
 * nothing) and the token records of keep+drop..pos-1 moved down by drop.
 * The caller then moves the keys and values the same way, through the table
 * as it is now, and truncates to pos - drop. The moved positions, and what
 * the session computes after them, are not entered in the prefix cache.
 * KILN_ERR_ARGUMENT unless 0 <= keep, 0 <= drop and keep + drop <= pos. */
kiln_status kiln_kv_pages_shift(kiln_kv_pages *p, int32_t id, int32_t keep, int32_t drop,
                                kiln_kv_copy_fn copy, void *ctx);

/* Keeps the first n positions (0 <= n <= pos, else KILN_ERR_ARGUMENT):
 * releases the logical pages from ceil(n / page) on, reserved ones
 * included, and sets the position to n. A page kept in part stays mapped,
 * and registered if it was: its keys and values are intact until the next
 * reserve copies or unregisters it. */
kiln_status kiln_kv_pages_truncate(kiln_kv_pages *p, int32_t id, int32_t n);

/* Pages mapped by at least one session; -1 for an invalid pool. */
int32_t kiln_kv_pages_used(const kiln_kv_pages *p);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_KV_PAGES_H */
