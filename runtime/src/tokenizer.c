/* Runtime tokenizer over the vocab segment (layout in kiln_tokenizer.h).
 *
 * Both algorithms keep the text as a doubly linked list of symbols in the
 * caller's work buffer, plus a binary heap holding, for every symbol whose pair
 * with its right neighbour is mergeable, that symbol's index. The heap is
 * indexed (each symbol knows its slot), so a merge updates the two affected
 * pairs in place and the heap never holds stale entries: O(n log n) overall and
 * at most one heap slot per symbol. Popping the best pair (score or rank, then
 * leftmost) gives the same merge order as llama.cpp's lazy priority queue.
 * Byte-BPE text is first split into pieces by pretokenize.c; the chat
 * templates are in chat.c. */
#include "kiln/kiln_tokenizer.h"

#include "tokenizer_internal.h"

#include <string.h>

/* 3 bytes of text per input byte (' ' becomes U+2581) plus the prefix keep
 * every offset below 2^31. */
#define MAX_TEXT_BYTES ((size_t)1 << 28)

static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float load_f32(const uint8_t *p) {
  uint32_t bits = load_le32(p);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint32_t u32_at(const uint8_t *array, uint32_t i) { return load_le32(array + 4u * (size_t)i); }

/* ---- vocabulary lookups ------------------------------------------------ */

static const uint8_t *token_bytes(const kiln_tokenizer *t, uint32_t id, size_t *len) {
  uint32_t begin = u32_at(t->token_offset, id);
  *len = u32_at(t->token_offset, id + 1u) - begin;
  return t->blob + begin;
}

static const uint8_t *merge_bytes(const kiln_tokenizer *t, uint32_t rank, size_t *len) {
  uint32_t begin = u32_at(t->merge_offset, rank);
  *len = u32_at(t->merge_offset, rank + 1u) - begin;
  return t->blob + begin;
}

/* memcmp order, a proper prefix first. */
static int compare_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  if (c != 0)
    return c;
  return alen < blen ? -1 : alen > blen;
}

/* Compares m with the concatenation a + " " + b without building it. */
static int compare_pair(const uint8_t *m, size_t mlen, const uint8_t *a, size_t alen,
                        const uint8_t *b, size_t blen) {
  size_t klen = alen + 1u + blen;
  size_t n = mlen < klen ? mlen : klen;
  int c = memcmp(m, a, n < alen ? n : alen);
  if (c != 0)
    return c;
  if (n > alen) {
    if (m[alen] != ' ')
      return m[alen] < ' ' ? -1 : 1;
    if (n > alen + 1u) {
      c = memcmp(m + alen + 1u, b, n - alen - 1u);
      if (c != 0)
        return c;
    }
  }
  return mlen < klen ? -1 : mlen > klen;
}

/* First entry of sorted_tokens not below the key; equal texts are stored
 * highest id first, matching llama.cpp's text->id map where the last wins. */
static int32_t find_token(const kiln_tokenizer *t, const uint8_t *key, size_t klen) {
  uint32_t lo = 0, hi = t->n_tokens;
  size_t len;
  const uint8_t *p;

  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u;
    p = token_bytes(t, u32_at(t->sorted_tokens, mid), &len);
    if (compare_bytes(p, len, key, klen) < 0)
      lo = mid + 1u;
    else
      hi = mid;
  }
  if (lo == t->n_tokens)
    return -1;
  p = token_bytes(t, u32_at(t->sorted_tokens, lo), &len);
  return compare_bytes(p, len, key, klen) == 0 ? (int32_t)u32_at(t->sorted_tokens, lo) : -1;
}

/* Rank of the merge "a b", or -1; equal texts are stored lowest rank first. */
static int32_t find_merge(const kiln_tokenizer *t, const uint8_t *a, size_t alen, const uint8_t *b,
                          size_t blen) {
  uint32_t lo = 0, hi = t->n_merges;
  size_t len;
  const uint8_t *p;

  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u;
    p = merge_bytes(t, u32_at(t->sorted_merges, mid), &len);
    if (compare_pair(p, len, a, alen, b, blen) < 0)
      lo = mid + 1u;
    else
      hi = mid;
  }
  if (lo == t->n_merges)
    return -1;
  p = merge_bytes(t, u32_at(t->sorted_merges, lo), &len);
  return compare_pair(p, len, a, alen, b, blen) == 0 ? (int32_t)u32_at(t->sorted_merges, lo) : -1;
}

/* GPT-2 bytes_to_unicode: printable Latin-1 maps to itself, the other 68
 * bytes to U+0100.. in byte order. */
static uint32_t byte_to_codepoint(uint8_t b) {
  if ((b >= 0x21u && b <= 0x7Eu) || (b >= 0xA1u && b <= 0xACu) || b >= 0xAEu)
    return b;
  if (b <= 0x20u)
    return 0x100u + b;
  if (b <= 0xA0u)
    return 0x100u + 33u + (b - 0x7Fu);
  return 0x143u; /* 0xAD */
}

/* Inverse of byte_to_codepoint; -1 for code points outside the alphabet. */
static int codepoint_to_byte(uint32_t cp) {
  if ((cp >= 0x21u && cp <= 0x7Eu) || (cp >= 0xA1u && cp <= 0xACu) || (cp >= 0xAEu && cp <= 0xFFu))
    return (int)cp;
  if (cp >= 0x100u && cp <= 0x120u)
    return (int)(cp - 0x100u);
  if (cp >= 0x121u && cp <= 0x142u)
    return (int)(cp - 0x121u + 0x7Fu);
  if (cp == 0x143u)
    return 0xAD;
  return -1;
}

/* The alphabet stays below U+0800: one or two UTF-8 bytes. */
static size_t put_codepoint(uint8_t *out, uint32_t cp) {
  if (cp < 0x80u) {
    out[0] = (uint8_t)cp;
    return 1;
  }
  out[0] = (uint8_t)(0xC0u | cp >> 6);
  out[1] = (uint8_t)(0x80u | (cp & 0x3Fu));
  return 2;
}

/* ---- init ---------------------------------------------------------------- */

static int sorted_ok(const kiln_tokenizer *t, const uint8_t *order, uint32_t n, int merges) {
  uint32_t i;
  const uint8_t *prev = NULL;
  size_t prev_len = 0;

  for (i = 0; i < n; ++i) {
    uint32_t id = u32_at(order, i);
    const uint8_t *p;
    size_t len;
    if (id >= n)
      return 0;
    p = merges ? merge_bytes(t, id, &len) : token_bytes(t, id, &len);
    if (prev != NULL && compare_bytes(prev, prev_len, p, len) > 0)
      return 0;
    prev = p;
    prev_len = len;
  }
  return 1;
}

/* Offsets non-decreasing and ending inside the blob. */
static int offsets_ok(const uint8_t *offsets, uint32_t n, uint32_t blob_bytes) {
  uint32_t i, prev = 0;
  for (i = 0; i <= n; ++i) {
    uint32_t o = u32_at(offsets, i);
    if (o < prev || o > blob_bytes)
      return 0;
    prev = o;
  }
  return 1;
}

static int id_ok(int32_t id, uint32_t n_tokens) { return id == -1 || (id >= 0 && (uint32_t)id < n_tokens); }

/* Special tokens: control or user-defined, non-empty, longest text first;
 * end-of-generation ids ascending. Notes each special's first byte. */
static int specials_ok(kiln_tokenizer *t) {
  uint32_t i, prev_len = UINT32_MAX;
  for (i = 0; i < t->n_specials; ++i) {
    uint32_t id = u32_at(t->specials, i), type, len;
    if (id >= t->n_tokens)
      return 0;
    type = u32_at(t->type, id);
    len = u32_at(t->token_offset, id + 1u) - u32_at(t->token_offset, id);
    if ((type != KILN_TOKEN_CONTROL && type != KILN_TOKEN_USER_DEFINED) || len == 0u ||
        len > prev_len)
      return 0;
    prev_len = len;
    {
      uint8_t b = t->blob[u32_at(t->token_offset, id)];
      t->special_first[b >> 3] = (uint8_t)(t->special_first[b >> 3] | 1u << (b & 7u));
    }
  }
  for (i = 0; i < t->n_eog; ++i)
    if (u32_at(t->eog, i) >= t->n_tokens || (i > 0 && u32_at(t->eog, i) <= u32_at(t->eog, i - 1)))
      return 0;
  return 1;
}

static kiln_status check_segment(kiln_tokenizer *t, const uint8_t *s, size_t size) {
  uint64_t arrays, total;
  uint32_t i, blob_bytes;

  if (size < KILN_VOCAB_HEADER_BYTES)
    return KILN_ERR_TRUNCATED;
  if (memcmp(s, "KVOC", 4) != 0)
    return KILN_ERR_MAGIC;
  if (load_le32(s + 4) != KILN_VOCAB_VERSION)
    return KILN_ERR_VERSION;
  t->segment = s;
  t->n_tokens = load_le32(s + 8);
  t->n_merges = load_le32(s + 12);
  t->model = load_le32(s + 16);
  t->flags = load_le32(s + 20);
  t->bos = (int32_t)load_le32(s + 24);
  t->eos = (int32_t)load_le32(s + 28);
  t->unk = (int32_t)load_le32(s + 32);
  total = load_le32(s + 40);
  t->n_specials = load_le32(s + 44);
  t->n_eog = load_le32(s + 48);
  t->chat = load_le32(s + 52);
  if (total > size)
    return KILN_ERR_TRUNCATED;
  t->pre = load_le32(s + 36);
  if (t->model > KILN_VOCAB_MODEL_BPE || (t->flags & ~7u) != 0u || t->pre > KILN_VOCAB_PRE_GPT4O ||
      (t->model == KILN_VOCAB_MODEL_SPM && t->pre != 0u) || t->chat > KILN_CHAT_PHI3)
    return KILN_ERR_BOUNDS;
  if (t->n_tokens == 0u || t->n_tokens > (uint32_t)INT32_MAX || t->n_merges > (uint32_t)INT32_MAX ||
      t->n_specials > t->n_tokens || t->n_eog > t->n_tokens)
    return KILN_ERR_BOUNDS;
  if (!id_ok(t->bos, t->n_tokens) || !id_ok(t->eos, t->n_tokens) || !id_ok(t->unk, t->n_tokens))
    return KILN_ERR_BOUNDS;
  if (((t->flags & KILN_VOCAB_ADD_BOS) && t->bos < 0) || ((t->flags & KILN_VOCAB_ADD_EOS) && t->eos < 0))
    return KILN_ERR_BOUNDS;
  /* n_tokens, n_merges < 2^31: this cannot wrap in 64 bits. */
  arrays = KILN_VOCAB_HEADER_BYTES + 4u * ((uint64_t)t->n_tokens * 4u + 1u) +
           4u * ((uint64_t)t->n_merges * 2u + 1u) + 4u * ((uint64_t)t->n_specials + t->n_eog);
  if (arrays > total)
    return KILN_ERR_BOUNDS;
  t->token_offset = s + KILN_VOCAB_HEADER_BYTES;
  t->score = t->token_offset + 4u * ((size_t)t->n_tokens + 1u);
  t->type = t->score + 4u * (size_t)t->n_tokens;
  t->sorted_tokens = t->type + 4u * (size_t)t->n_tokens;
  t->merge_offset = t->sorted_tokens + 4u * (size_t)t->n_tokens;
  t->sorted_merges = t->merge_offset + 4u * ((size_t)t->n_merges + 1u);
  t->specials = t->sorted_merges + 4u * (size_t)t->n_merges;
  t->eog = t->specials + 4u * (size_t)t->n_specials;
  t->blob = t->eog + 4u * (size_t)t->n_eog;
  blob_bytes = (uint32_t)(total - arrays);
  if (!offsets_ok(t->token_offset, t->n_tokens, blob_bytes) ||
      !offsets_ok(t->merge_offset, t->n_merges, blob_bytes))
    return KILN_ERR_BOUNDS;
  if (!sorted_ok(t, t->sorted_tokens, t->n_tokens, 0) || !sorted_ok(t, t->sorted_merges, t->n_merges, 1))
    return KILN_ERR_BOUNDS;

  if (!specials_ok(t))
    return KILN_ERR_BOUNDS;
  t->max_token_bytes = 0;
  for (i = 0; i < t->n_tokens; ++i) {
    uint32_t len = u32_at(t->token_offset, i + 1u) - u32_at(t->token_offset, i);
    if (len > t->max_token_bytes)
      t->max_token_bytes = len;
  }
  for (i = 0; i < 256u; ++i) {
    static const char hex[] = "0123456789ABCDEF";
    uint8_t key[6];
    size_t n;
    if (t->model == KILN_VOCAB_MODEL_SPM) {
      memcpy(key, "<0x", 3);
      key[3] = (uint8_t)hex[i >> 4];
      key[4] = (uint8_t)hex[i & 15u];
      key[5] = '>';
      n = 6;
    } else {
      n = put_codepoint(key, byte_to_codepoint((uint8_t)i));
    }
    t->byte_token[i] = find_token(t, key, n);
  }
  return KILN_OK;
}

kiln_status kiln_tokenizer_init(kiln_tokenizer *t, const uint8_t *segment, size_t size) {
  kiln_status s;

  if (t == NULL)
    return KILN_ERR_ARGUMENT;
  memset(t, 0, sizeof *t);
  if (segment == NULL)
    return KILN_ERR_ARGUMENT;
  s = check_segment(t, segment, size);
  if (s != KILN_OK)
    memset(t, 0, sizeof *t);
  return s;
}

int32_t kiln_tokenizer_bos(const kiln_tokenizer *t) { return t != NULL ? t->bos : -1; }
int32_t kiln_tokenizer_eos(const kiln_tokenizer *t) { return t != NULL ? t->eos : -1; }
int32_t kiln_tokenizer_n_tokens(const kiln_tokenizer *t) { return t != NULL ? (int32_t)t->n_tokens : 0; }
uint32_t kiln_tokenizer_chat(const kiln_tokenizer *t) { return t != NULL ? t->chat : KILN_CHAT_NONE; }

int kiln_tokenizer_is_eog(const kiln_tokenizer *t, int32_t id) {
  uint32_t i;
  if (t == NULL || t->segment == NULL || id < 0)
    return 0;
  for (i = 0; i < t->n_eog; ++i)
    if (u32_at(t->eog, i) == (uint32_t)id)
      return 1;
  return 0;
}

const char *kiln_token_text(const kiln_tokenizer *t, int32_t id, size_t *len) {
  size_t n;
  const uint8_t *p;

  if (t == NULL || len == NULL || id < 0 || (uint32_t)id >= t->n_tokens)
    return NULL;
  p = token_bytes(t, (uint32_t)id, &n);
  *len = n;
  return (const char *)p;
}

/* ---- encoding ------------------------------------------------------------ */

/* Symbols tile the work text, so a symbol's length is the gap to the next
 * one's offset (or to the end) and need not be stored. */
typedef struct symbol {
  uint32_t off;      /* first byte in the work text */
  int32_t prev, next;
  union {
    float score;     /* SPM: score of the piece this symbol + next would form */
    uint32_t rank;   /* BPE: rank of the merge of this symbol and next */
  } key;
  int32_t slot;      /* index in the heap, -1 when the pair is not mergeable */
} symbol;

typedef struct encoder {
  const kiln_tokenizer *t;
  symbol *sym;
  int32_t *heap;
  int32_t heap_n;
  uint8_t *text;
  uint32_t text_n;   /* bytes of work text in use */
  int32_t *ids;
  int32_t max_ids;
  int32_t n_ids;
} encoder;

static uint32_t sym_len(const encoder *e, int32_t i) {
  int32_t next = e->sym[i].next;
  return (next >= 0 ? e->sym[next].off : e->text_n) - e->sym[i].off;
}

static void emit(encoder *e, int32_t id) {
  if (e->n_ids < e->max_ids)
    e->ids[e->n_ids] = id;
  e->n_ids++;
}

/* Whether pair a should merge before pair b: best key, then leftmost. */
static int before(const encoder *e, int32_t a, int32_t b) {
  const symbol *x = &e->sym[a], *y = &e->sym[b];
  if (e->t->model == KILN_VOCAB_MODEL_SPM) {
    if (x->key.score != y->key.score)
      return x->key.score > y->key.score;
  } else if (x->key.rank != y->key.rank) {
    return x->key.rank < y->key.rank;
  }
  return a < b;
}

static void heap_place(encoder *e, int32_t slot, int32_t s) {
  e->heap[slot] = s;
  e->sym[s].slot = slot;
}

static void heap_up(encoder *e, int32_t slot) {
  int32_t s = e->heap[slot];
  while (slot > 0) {
    int32_t parent = (slot - 1) / 2;
    if (!before(e, s, e->heap[parent]))
      break;
    heap_place(e, slot, e->heap[parent]);
    slot = parent;
  }
  heap_place(e, slot, s);
}

static void heap_down(encoder *e, int32_t slot) {
  int32_t s = e->heap[slot];
  for (;;) {
    int32_t child = 2 * slot + 1;
    if (child >= e->heap_n)
      break;
    if (child + 1 < e->heap_n && before(e, e->heap[child + 1], e->heap[child]))
      child++;
    if (!before(e, e->heap[child], s))
      break;
    heap_place(e, slot, e->heap[child]);
    slot = child;
  }
  heap_place(e, slot, s);
}

static void heap_remove(encoder *e, int32_t s) {
  int32_t slot = e->sym[s].slot, last;
  if (slot < 0)
    return;
  e->sym[s].slot = -1;
  last = e->heap[--e->heap_n];
  if (last == s)
    return;
  heap_place(e, slot, last);
  heap_up(e, slot);
  heap_down(e, e->sym[last].slot);
}

/* Recomputes whether symbol s and its right neighbour can merge, and with
 * which key, and files s in the heap accordingly. */
static void update_pair(encoder *e, int32_t s) {
  symbol *x = &e->sym[s];
  int32_t r = x->next, found;

  if (r < 0) {
    found = -1;
  } else if (e->t->model == KILN_VOCAB_MODEL_SPM) {
    found = find_token(e->t, e->text + x->off, e->sym[r].off - x->off + sym_len(e, r));
    if (found >= 0)
      x->key.score = load_f32(e->t->score + 4u * (size_t)found);
  } else {
    found = find_merge(e->t, e->text + x->off, e->sym[r].off - x->off, e->text + e->sym[r].off,
                       sym_len(e, r));
    if (found >= 0)
      x->key.rank = (uint32_t)found;
  }
  if (found < 0) {
    heap_remove(e, s);
  } else if (x->slot < 0) {
    heap_place(e, e->heap_n++, s);
    heap_up(e, x->slot);
  } else {
    heap_up(e, x->slot);
    heap_down(e, x->slot);
  }
}

/* Merges until no pair is mergeable; symbols 0..n-1 are chained already. */
static void merge_all(encoder *e, int32_t n) {
  int32_t i;

  e->heap_n = 0;
  for (i = 0; i + 1 < n; ++i)
    update_pair(e, i);
  while (e->heap_n > 0) {
    int32_t left = e->heap[0];
    symbol *l = &e->sym[left];
    int32_t right = l->next;
    symbol *r = &e->sym[right];

    heap_remove(e, left);
    heap_remove(e, right);
    l->next = r->next;
    if (r->next >= 0)
      e->sym[r->next].prev = left;
    if (l->prev >= 0)
      update_pair(e, l->prev);
    update_pair(e, left);
  }
}

static void chain(encoder *e, int32_t i, uint32_t off, int last) {
  symbol *s = &e->sym[i];
  s->off = off;
  s->prev = i - 1;
  s->next = last ? -1 : i + 1;
  s->slot = -1;
}

/* Length of the character at p: what the lead byte announces (as llama.cpp's
 * unicode_len_utf8) if that many bytes follow and all are continuation bytes,
 * else 1. llama.cpp takes the announced length blindly, which can swallow the
 * start of a following U+2581 and then decode as bytes instead of a space;
 * checking keeps byte fallback lossless and agrees on all valid UTF-8. */
static uint32_t char_len(const uint8_t *p, uint32_t avail) {
  static const uint8_t announced[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  uint32_t n = announced[p[0] >> 4], k;
  if (n > avail)
    return 1;
  for (k = 1; k < n; ++k)
    if ((p[k] & 0xC0u) != 0x80u)
      return 1;
  return n;
}

static void encode_spm(encoder *e, const uint8_t *text, size_t len) {
  const kiln_tokenizer *t = e->t;
  uint32_t n = 0, off = 0;
  int32_t count = 0, i;
  size_t k;

  if (len == 0)
    return;
  if (t->flags & KILN_VOCAB_ADD_SPACE_PREFIX) {
    memcpy(e->text, "\xE2\x96\x81", 3);
    n = 3;
  }
  for (k = 0; k < len; ++k) {
    if (text[k] == ' ') {
      memcpy(e->text + n, "\xE2\x96\x81", 3);
      n += 3;
    } else {
      e->text[n++] = text[k];
    }
  }
  e->text_n = n;
  while (off < n) {
    uint32_t c = char_len(e->text + off, n - off);
    chain(e, count, off, off + c == n);
    off += c;
    count++;
  }
  merge_all(e, count);

  for (i = 0; i >= 0; i = e->sym[i].next) {
    const uint8_t *p = e->text + e->sym[i].off;
    uint32_t b, len_i = sym_len(e, i);
    int32_t id = find_token(t, p, len_i);
    if (id >= 0) {
      emit(e, id);
      continue;
    }
    for (b = 0; b < len_i && t->byte_token[p[b]] >= 0; ++b)
      ;
    if (b == len_i) {
      for (b = 0; b < len_i; ++b)
        emit(e, t->byte_token[p[b]]);
    } else if (t->unk >= 0) {
      emit(e, t->unk);
    }
  }
}

static void encode_bpe_word(encoder *e, const uint8_t *word, size_t len) {
  const kiln_tokenizer *t = e->t;
  uint32_t off = 0;
  int32_t i;

  for (i = 0; (size_t)i < len; ++i) {
    uint32_t n = (uint32_t)put_codepoint(e->text + off, byte_to_codepoint(word[i]));
    chain(e, i, off, (size_t)i + 1 == len);
    off += n;
  }
  e->text_n = off;
  merge_all(e, (int32_t)len);

  for (i = 0; i >= 0; i = e->sym[i].next) {
    const uint8_t *p = e->text + e->sym[i].off;
    uint32_t k, c, n = sym_len(e, i);
    int32_t id = find_token(t, p, n);
    if (id >= 0) {
      emit(e, id);
      continue;
    }
    /* Not a piece (merges and tokens disagree): one id per character. */
    for (k = 0; k < n; k += c) {
      c = p[k] < 0x80u ? 1u : 2u;
      id = find_token(t, p + k, c);
      if (id >= 0)
        emit(e, id);
      else if (t->unk >= 0)
        emit(e, t->unk);
    }
  }
}

static void encode_bpe(encoder *e, const uint8_t *text, size_t len) {
  size_t i = 0;
  while (i < len) {
    size_t end = kiln_piece_end(e->t->pre, text, len, i);
    encode_bpe_word(e, text + i, end - i);
    i = end;
  }
}

/* SPM: the prefix plus at most one symbol per input byte (a space's U+2581 is
 * one character); BPE: at most one per byte of a word. */
static size_t max_symbols(size_t len) { return len + 1u; }

size_t kiln_tokenize_work_bytes(const kiln_tokenizer *t, size_t len) {
  const size_t per_byte = sizeof(symbol) + sizeof(int32_t) + 3u;
  (void)t; /* one size fits both models */
  /* The second limit only bites where size_t is 32 bits. */
  if (len > MAX_TEXT_BYTES || len >= (SIZE_MAX - 16u) / per_byte)
    return 0;
  /* Alignment slack, symbols with their heap slots, and the work text. */
  return 8u + max_symbols(len) * (sizeof(symbol) + sizeof(int32_t)) + 3u * (len + 1u);
}

/* The special token whose text starts at text[i], the longest, or -1; control
 * tokens only with `control`. */
static int32_t special_at(const kiln_tokenizer *t, const uint8_t *text, size_t len, size_t i,
                          int control) {
  uint32_t k;
  if (!(t->special_first[text[i] >> 3] & 1u << (text[i] & 7u)))
    return -1;
  for (k = 0; k < t->n_specials; ++k) {
    uint32_t id = u32_at(t->specials, k);
    size_t n;
    const uint8_t *p = token_bytes(t, id, &n);
    if (n <= len - i && memcmp(p, text + i, n) == 0 &&
        (control || u32_at(t->type, id) == KILN_TOKEN_USER_DEFINED))
      return (int32_t)id;
  }
  return -1;
}

static void encode_text(encoder *e, const uint8_t *text, size_t len) {
  if (e->t->model == KILN_VOCAB_MODEL_SPM)
    encode_spm(e, text, len);
  else
    encode_bpe(e, text, len);
}

kiln_status kiln_tokenize(const kiln_tokenizer *t, const char *text, size_t len, int flags,
                          int32_t *ids, int32_t max_ids, int32_t *n_ids, void *work,
                          size_t work_bytes) {
  encoder e;
  uint8_t *base;
  const uint8_t *in = (const uint8_t *)text;
  size_t n_sym, start = 0, i = 0, need = kiln_tokenize_work_bytes(t, len);

  if (n_ids != NULL)
    *n_ids = 0;
  if (t == NULL || t->segment == NULL || n_ids == NULL || max_ids < 0 || (ids == NULL && max_ids > 0) ||
      (text == NULL && len > 0) || work == NULL || need == 0 || work_bytes < need)
    return KILN_ERR_ARGUMENT;

  base = (uint8_t *)work;
  base += (size_t)(-(uintptr_t)base & 7u);
  n_sym = max_symbols(len);
  e.t = t;
  e.sym = (symbol *)(void *)base;
  e.heap = (int32_t *)(void *)(base + n_sym * sizeof(symbol));
  e.text = base + n_sym * (sizeof(symbol) + sizeof(int32_t));
  e.heap_n = 0;
  e.text_n = 0;
  e.ids = ids;
  e.max_ids = max_ids;
  e.n_ids = 0;

  if ((flags & KILN_TOKENIZE_ADD_SPECIAL) && (t->flags & KILN_VOCAB_ADD_BOS))
    emit(&e, t->bos);
  /* The text between special tokens is encoded fragment by fragment. */
  while (i < len) {
    int32_t sp = special_at(t, in, len, i, flags & KILN_TOKENIZE_PARSE_SPECIAL);
    size_t n;
    if (sp < 0) {
      i++;
      continue;
    }
    encode_text(&e, in + start, i - start);
    emit(&e, sp);
    (void)token_bytes(t, (uint32_t)sp, &n);
    i += n;
    start = i;
  }
  encode_text(&e, in + start, len - start);
  if ((flags & KILN_TOKENIZE_ADD_SPECIAL) && (t->flags & KILN_VOCAB_ADD_EOS))
    emit(&e, t->eos);

  *n_ids = e.n_ids;
  return e.n_ids <= max_ids ? KILN_OK : KILN_ERR_ARGUMENT;
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct writer {
  uint8_t *out; /* NULL while measuring */
  size_t n;
  int drop_space;
} writer;

static void put(writer *w, uint8_t b) {
  if (w->drop_space) {
    w->drop_space = 0;
    if (b == ' ')
      return;
  }
  if (w->out != NULL)
    w->out[w->n] = b;
  w->n++;
}

static int hex_digit(uint8_t c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/* The byte of a "<0xXX>" piece, or -1. */
static int byte_piece(const uint8_t *p, size_t len) {
  int hi, lo;
  if (len != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
    return -1;
  hi = hex_digit(p[3]);
  lo = hex_digit(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
}

static void decode_normal(const kiln_tokenizer *t, const uint8_t *p, size_t len, writer *w) {
  size_t k = 0;
  while (k < len) {
    if (t->model == KILN_VOCAB_MODEL_SPM) {
      if (len - k >= 3 && memcmp(p + k, "\xE2\x96\x81", 3) == 0) {
        put(w, ' ');
        k += 3;
        continue;
      }
    } else if (p[k] < 0x80u || (len - k >= 2 && (p[k] & 0xE0u) == 0xC0u && (p[k + 1] & 0xC0u) == 0x80u)) {
      uint32_t cp = p[k] < 0x80u ? p[k] : (uint32_t)(p[k] & 0x1Fu) << 6 | (p[k + 1] & 0x3Fu);
      int b = codepoint_to_byte(cp);
      if (b >= 0) {
        put(w, (uint8_t)b);
        k += p[k] < 0x80u ? 1u : 2u;
        continue;
      }
    }
    /* Outside the alphabet: kept as it is. */
    put(w, p[k]);
    k++;
  }
}

static void decode_token(const kiln_tokenizer *t, int32_t id, writer *w) {
  size_t len, k;
  const uint8_t *p = token_bytes(t, (uint32_t)id, &len);
  int32_t type = (int32_t)u32_at(t->type, (uint32_t)id);
  int b;

  switch (type) {
  case KILN_TOKEN_NORMAL:
    decode_normal(t, p, len, w);
    break;
  case KILN_TOKEN_BYTE:
    b = byte_piece(p, len);
    if (b >= 0)
      put(w, (uint8_t)b);
    else
      decode_normal(t, p, len, w);
    break;
  case KILN_TOKEN_UNKNOWN:
  case KILN_TOKEN_USER_DEFINED:
    for (k = 0; k < len; ++k)
      put(w, p[k]);
    break;
  default: /* control, unused and types this runtime does not know: nothing */
    break;
  }
}

kiln_status kiln_token_piece(const kiln_tokenizer *t, int32_t id, int is_first, char *out,
                             size_t cap, size_t *n) {
  writer w;
  int drop;

  if (n != NULL)
    *n = 0;
  if (t == NULL || t->segment == NULL || n == NULL || id < 0 || (uint32_t)id >= t->n_tokens ||
      (out == NULL && cap > 0))
    return KILN_ERR_ARGUMENT;
  drop = is_first && t->model == KILN_VOCAB_MODEL_SPM && (t->flags & KILN_VOCAB_ADD_SPACE_PREFIX);
  w.out = NULL;
  w.n = 0;
  w.drop_space = drop;
  decode_token(t, id, &w);
  *n = w.n;
  if (w.n > cap)
    return KILN_ERR_ARGUMENT;
  w.out = (uint8_t *)out;
  w.n = 0;
  w.drop_space = drop;
  decode_token(t, id, &w);
  return KILN_OK;
}
