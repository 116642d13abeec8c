/* Driver for the runtime tokenizer, run by tokenizer_test.py:
 *
 *   tokenizer_test SEGMENT encode [FLAGS]    stdin: records (u32 LE length, bytes);
 *                                            stdout: one line of ids per record
 *   tokenizer_test SEGMENT decode            stdin: lines of ids; stdout: one
 *                                            record per line (is_first on the
 *                                            first id after leading BOS ids)
 *   tokenizer_test SEGMENT split             stdin: records as for encode; stdout:
 *                                            the byte length of each piece the
 *                                            pre-tokenizer splits a record into
 *   tokenizer_test SEGMENT eog               the ids that end generation, one line
 *   tokenizer_test SEGMENT chat T FIRST [SYS] stdin: a user turn; stdout: the
 *                                            kiln_chat_prompt text of template T
 *   tokenizer_test SEGMENT time [REPEAT]     stdin: one text; prints
 *                                            "ids N bytes B seconds S" (best run)
 *   tokenizer_test SEGMENT check             init and argument checks on copies
 *                                            of SEGMENT; "N passed, N failed"
 * Exit status: 0 on success, 1 on a failed check or tokenizer error, 2 on usage. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "kiln/kiln_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint8_t *read_all(FILE *f, size_t *size) {
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  while (buf != NULL) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap)
      break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  *size = n;
  return buf;
}

static uint8_t *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  if (f == NULL)
    return NULL;
  buf = read_all(f, size);
  fclose(f);
  return buf;
}

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* Tokenizes with buffers sized by the API; *ids is malloc'ed. */
static kiln_status tokenize_alloc(const kiln_tokenizer *t, const uint8_t *text, size_t len,
                                  int special, int32_t **ids, int32_t *n) {
  size_t work_bytes = kiln_tokenize_work_bytes(t, len);
  int32_t max_ids = (int32_t)(3 * len + 5);
  void *work = malloc(work_bytes);
  kiln_status s;
  *ids = malloc(sizeof(int32_t) * (size_t)max_ids);
  if (work == NULL || *ids == NULL) {
    free(work);
    return KILN_ERR_ARGUMENT;
  }
  s = kiln_tokenize(t, (const char *)text, len, special, *ids, max_ids, n, work, work_bytes);
  free(work);
  return s;
}

static int mode_split(const kiln_tokenizer *t) {
  size_t size, pos = 0;
  uint8_t *in = read_all(stdin, &size);
  while (in != NULL && pos + 4 <= size) {
    size_t len = get_le32(in + pos), i = 0;
    pos += 4;
    if (len > size - pos) {
      fprintf(stderr, "truncated record\n");
      free(in);
      return 1;
    }
    while (i < len) {
      size_t end = kiln_pretokenize_next(t, (const char *)in + pos, len, i);
      printf(i ? " %zu" : "%zu", end - i);
      i = end;
    }
    printf("\n");
    pos += len;
  }
  free(in);
  return 0;
}

static int mode_eog(const kiln_tokenizer *t) {
  int32_t id, n = 0;
  for (id = -1; id <= kiln_tokenizer_n_tokens(t); ++id)
    if (kiln_tokenizer_is_eog(t, id))
      printf(n++ ? " %d" : "%d", (int)id);
  printf("\n");
  return 0;
}

static int mode_chat(uint32_t chat, int first, const char *system) {
  size_t size, n;
  char *user, *out;
  uint8_t *in = read_all(stdin, &size);
  kiln_status s;
  if (in == NULL || (user = malloc(size + 1)) == NULL)
    return 1;
  memcpy(user, in, size);
  user[size] = 0;
  free(in);
  s = kiln_chat_prompt(chat, first, system, user, NULL, 0, &n);
  out = malloc(n + 1);
  if (out == NULL || (s != KILN_OK && s != KILN_ERR_ARGUMENT) ||
      (n > 0 && kiln_chat_prompt(chat, first, system, user, out, n - 1, &n) != KILN_ERR_ARGUMENT) ||
      kiln_chat_prompt(chat, first, system, user, out, n, &n) != KILN_OK) {
    fprintf(stderr, "kiln_chat_prompt failed\n");
    return 1;
  }
  fwrite(out, 1, n, stdout);
  free(out);
  free(user);
  return 0;
}

static int mode_encode(const kiln_tokenizer *t, int special) {
  size_t size, pos = 0;
  uint8_t *in = read_all(stdin, &size);
  int rc = 0;
  while (in != NULL && pos + 4 <= size) {
    size_t len = get_le32(in + pos);
    int32_t *ids, n, i;
    kiln_status s;
    pos += 4;
    if (len > size - pos) {
      fprintf(stderr, "truncated record\n");
      rc = 1;
      break;
    }
    s = tokenize_alloc(t, in + pos, len, special, &ids, &n);
    pos += len;
    if (s != KILN_OK) {
      fprintf(stderr, "kiln_tokenize: %s\n", kiln_status_message(s));
      rc = 1;
    }
    for (i = 0; s == KILN_OK && i < n; ++i)
      printf(i ? " %d" : "%d", (int)ids[i]);
    printf("\n");
    free(ids);
  }
  free(in);
  return rc;
}

static int mode_decode(const kiln_tokenizer *t) {
  char *line = NULL;
  size_t line_cap = 0;
  char *piece = malloc(t->max_token_bytes + 1u);
  uint8_t *text = NULL;
  size_t text_cap = 0;
  int rc = 0;

  while (piece != NULL && getline(&line, &line_cap, stdin) > 0) {
    char *p = line, *end;
    size_t n_text = 0;
    int first = 1;
    uint8_t len[4];
    for (;;) {
      long id = strtol(p, &end, 10);
      size_t n;
      kiln_status s;
      if (end == p)
        break;
      p = end;
      if (first && id == t->bos)
        continue;
      s = kiln_token_piece(t, (int32_t)id, first, piece, t->max_token_bytes, &n);
      first = 0;
      if (s != KILN_OK) {
        fprintf(stderr, "kiln_token_piece(%ld): %s\n", id, kiln_status_message(s));
        rc = 1;
        continue;
      }
      if (n_text + n > text_cap) {
        text_cap = 2 * (n_text + n) + 64;
        text = realloc(text, text_cap);
      }
      memcpy(text + n_text, piece, n);
      n_text += n;
    }
    put_le32(len, (uint32_t)n_text);
    fwrite(len, 1, 4, stdout);
    if (n_text > 0)
      fwrite(text, 1, n_text, stdout);
  }
  free(line);
  free(piece);
  free(text);
  return rc;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mode_time(const kiln_tokenizer *t, int repeat) {
  size_t size;
  uint8_t *text = read_all(stdin, &size);
  size_t work_bytes = kiln_tokenize_work_bytes(t, size);
  int32_t max_ids = (int32_t)(3 * size + 5), n = 0;
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)max_ids);
  void *work = malloc(work_bytes);
  double best = 1e30;
  int r;
  if (text == NULL || ids == NULL || work == NULL)
    return 1;
  for (r = 0; r < repeat; ++r) {
    double t0 = now(), dt;
    kiln_status s = kiln_tokenize(t, (const char *)text, size, 0, ids, max_ids, &n, work, work_bytes);
    dt = now() - t0;
    if (s != KILN_OK) {
      fprintf(stderr, "kiln_tokenize: %s\n", kiln_status_message(s));
      return 1;
    }
    if (dt < best)
      best = dt;
  }
  printf("ids %d bytes %lu work_bytes %lu seconds %.6f\n", (int)n, (unsigned long)size,
         (unsigned long)work_bytes, best);
  free(text);
  free(ids);
  free(work);
  return 0;
}

/* ---- check mode ---------------------------------------------------------- */

#include "tally.h"

static kiln_status init_copy(const uint8_t *seg, size_t size, size_t at, uint8_t *buf) {
  kiln_tokenizer t;
  memcpy(buf + at, seg, size);
  return kiln_tokenizer_init(&t, buf + at, size);
}

/* Patches one u32 of a copy and returns what init says about it. */
static kiln_status init_patched(const uint8_t *seg, size_t size, uint8_t *buf, size_t off,
                                uint32_t value) {
  kiln_tokenizer t;
  memcpy(buf, seg, size);
  put_le32(buf + off, value);
  return kiln_tokenizer_init(&t, buf, size);
}

static void check_init(tally *c, const uint8_t *seg, size_t size) {
  uint8_t *buf = malloc(size + 8);
  uint32_t n_tokens = get_le32(seg + 8), n_merges = get_le32(seg + 12);
  uint32_t n_specials = get_le32(seg + 44), n_eog = get_le32(seg + 48);
  size_t token_offset = KILN_VOCAB_HEADER_BYTES;
  size_t sorted_tokens = token_offset + 4 * ((size_t)n_tokens + 1) + 8 * (size_t)n_tokens;
  size_t merge_offset = sorted_tokens + 4 * (size_t)n_tokens;
  size_t specials = merge_offset + 4 * (2 * (size_t)n_merges + 1), eog = specials + 4 * (size_t)n_specials;
  kiln_tokenizer t;
  size_t cut;
  int all_truncated = 1;

  if (buf == NULL)
    return;
  check(c, init_copy(seg, size, 1, buf) == KILN_OK, "init accepts an unaligned segment");
  check(c, kiln_tokenizer_init(&t, NULL, size) == KILN_ERR_ARGUMENT, "init NULL segment");
  check(c, kiln_tokenizer_init(NULL, seg, size) == KILN_ERR_ARGUMENT, "init NULL tokenizer");
  /* Every proper prefix is rejected as truncated (total_bytes covers it all). */
  for (cut = 0; cut < size; cut += (size < 4096 ? 1 : size / 4096 + 1))
    if (kiln_tokenizer_init(&t, seg, cut) != KILN_ERR_TRUNCATED)
      all_truncated = 0;
  if (kiln_tokenizer_init(&t, seg, size - 1) != KILN_ERR_TRUNCATED)
    all_truncated = 0;
  check(c, all_truncated, "every truncation is KILN_ERR_TRUNCATED");
  check(c, t.segment == NULL && t.n_tokens == 0, "failed init zeroes the tokenizer");

  check(c, init_patched(seg, size, buf, 0, 0x434F564Cu) == KILN_ERR_MAGIC, "bad magic");
  check(c, init_patched(seg, size, buf, 4, KILN_VOCAB_VERSION - 1) == KILN_ERR_VERSION,
        "bad version");
  check(c, init_patched(seg, size, buf, 8, 0) == KILN_ERR_BOUNDS, "zero tokens");
  check(c, init_patched(seg, size, buf, 8, 0x7FFFFFFFu) == KILN_ERR_BOUNDS, "huge n_tokens");
  check(c, init_patched(seg, size, buf, 12, 0xFFFFFFFFu) == KILN_ERR_BOUNDS, "huge n_merges");
  check(c, init_patched(seg, size, buf, 16, 2) == KILN_ERR_BOUNDS, "unknown model");
  check(c, init_patched(seg, size, buf, 20, 8) == KILN_ERR_BOUNDS, "unknown flag");
  check(c, init_patched(seg, size, buf, 24, n_tokens) == KILN_ERR_BOUNDS, "bos out of range");
  check(c, init_patched(seg, size, buf, 28, (uint32_t)-2) == KILN_ERR_BOUNDS, "eos below -1");
  check(c, init_patched(seg, size, buf, 32, n_tokens + 5) == KILN_ERR_BOUNDS, "unk out of range");
  check(c, init_patched(seg, size, buf, 36, KILN_VOCAB_PRE_GPT4O + 1) == KILN_ERR_BOUNDS,
        "unknown pre-tokenizer");
  if (get_le32(seg + 16) == KILN_VOCAB_MODEL_SPM)
    check(c, init_patched(seg, size, buf, 36, KILN_VOCAB_PRE_LLAMA3) == KILN_ERR_BOUNDS,
          "a pre-tokenizer for a SentencePiece vocab");
  else
    check(c, init_patched(seg, size, buf, 36, KILN_VOCAB_PRE_QWEN2) == KILN_OK,
          "a byte-BPE vocab with each pre-tokenizer");
  check(c, init_patched(seg, size, buf, 52, KILN_CHAT_PHI3 + 1) == KILN_ERR_BOUNDS,
        "unknown chat template");
  check(c, init_patched(seg, size, buf, 44, n_tokens + 1) == KILN_ERR_BOUNDS, "n_specials > n_tokens");
  check(c, init_patched(seg, size, buf, 48, n_tokens + 1) == KILN_ERR_BOUNDS, "n_eog > n_tokens");
  if (n_specials > 0) {
    /* A normal token (the first sorted one is never special in the test vocabs)
     * or one out of range as a special. */
    check(c, init_patched(seg, size, buf, specials, n_tokens) == KILN_ERR_BOUNDS,
          "special id out of range");
    check(c, init_patched(seg, size, buf, specials, get_le32(seg + sorted_tokens + 4)) ==
                 KILN_ERR_BOUNDS,
          "a normal token as special");
  }
  if (n_specials > 1) {
    /* The first and last specials swapped: shortest first, unless equal. */
    size_t last = specials + 4 * ((size_t)n_specials - 1);
    uint32_t a = get_le32(seg + specials), b = get_le32(seg + last);
    uint32_t len_a = get_le32(seg + token_offset + 4 * ((size_t)a + 1)) - get_le32(seg + token_offset + 4 * (size_t)a);
    uint32_t len_b = get_le32(seg + token_offset + 4 * ((size_t)b + 1)) - get_le32(seg + token_offset + 4 * (size_t)b);
    memcpy(buf, seg, size);
    put_le32(buf + specials, b);
    put_le32(buf + last, a);
    check(c, len_a == len_b || kiln_tokenizer_init(&t, buf, size) == KILN_ERR_BOUNDS,
          "specials shortest first");
  }
  if (n_eog > 0)
    check(c, init_patched(seg, size, buf, eog, n_tokens) == KILN_ERR_BOUNDS, "eog id out of range");
  if (n_eog > 1)
    check(c, init_patched(seg, size, buf, eog, get_le32(seg + eog + 4)) == KILN_ERR_BOUNDS,
          "eog ids not ascending");
  check(c, init_patched(seg, size, buf, 40, (uint32_t)size + 1) == KILN_ERR_TRUNCATED,
        "total_bytes past the end");
  check(c, init_patched(seg, size, buf, 40, (uint32_t)merge_offset) == KILN_ERR_BOUNDS,
        "total_bytes inside the arrays");
  check(c, init_patched(seg, size, buf, token_offset + 4 * (size_t)n_tokens, 0xFFFFFF00u) ==
               KILN_ERR_BOUNDS,
        "last token offset past the blob");
  if (n_tokens > 2)
    check(c, init_patched(seg, size, buf, token_offset + 8, get_le32(seg + token_offset + 12) + 1) ==
                 KILN_ERR_BOUNDS,
          "token offsets decreasing");
  check(c, init_patched(seg, size, buf, sorted_tokens, n_tokens) == KILN_ERR_BOUNDS,
        "sorted token id out of range");
  check(c, init_patched(seg, size, buf, sorted_tokens, get_le32(seg + sorted_tokens + 4 * ((size_t)n_tokens - 1))) ==
               KILN_ERR_BOUNDS || n_tokens < 2,
        "sorted tokens out of order");
  check(c, init_patched(seg, size, buf, merge_offset + 4 * (size_t)n_merges, 0xFFFFFF00u) ==
               KILN_ERR_BOUNDS,
        "last merge offset past the blob");
  if (n_merges > 1)
    check(c, init_patched(seg, size, buf, merge_offset + 4 * ((size_t)n_merges + 1),
                          get_le32(seg + merge_offset + 4 * (2 * (size_t)n_merges))) == KILN_ERR_BOUNDS,
          "sorted merges out of order");
  {
    /* add_bos without a BOS id. */
    memcpy(buf, seg, size);
    put_le32(buf + 20, get_le32(buf + 20) | KILN_VOCAB_ADD_BOS);
    put_le32(buf + 24, (uint32_t)-1);
    check(c, kiln_tokenizer_init(&t, buf, size) == KILN_ERR_BOUNDS, "add_bos without bos");
  }
  {
    /* Random single-byte corruption: init may accept (scores, blob bytes,
     * types...) or reject, but an accepted segment must tokenize and decode
     * without faults (run under a sanitizer to make that bite). */
    unsigned seed = 12345u;
    int i, survived = 1;
    static const char probe[] = "The quick brown fox -- jumps \xE2\x96\x81 over\n the lazy dog's \xFF\xC3 tail";
    for (i = 0; i < 300; ++i) {
      size_t at;
      seed = seed * 1103515245u + 12345u;
      at = (seed >> 8) % size;
      memcpy(buf, seg, size);
      buf[at] ^= (uint8_t)(1u << (seed >> 28 & 7u));
      if (kiln_tokenizer_init(&t, buf, size) == KILN_OK) {
        int32_t *ids, n, k;
        kiln_status s = tokenize_alloc(&t, (const uint8_t *)probe, sizeof probe - 1, 1, &ids, &n);
        char piece[64];
        for (k = 0; s == KILN_OK && k < n; ++k) {
          size_t m;
          if (kiln_token_piece(&t, ids[k], k == 1, piece, sizeof piece, &m) != KILN_OK &&
              m <= sizeof piece)
            survived = 0;
        }
        if (s != KILN_OK)
          survived = 0;
        free(ids);
      }
    }
    check(c, survived, "corrupted but accepted segments still work");
  }
  free(buf);
}

static void check_api(tally *c, const kiln_tokenizer *t) {
  static const char text[] = "Hello world, hello again.";
  size_t len = sizeof text - 1, need = kiln_tokenize_work_bytes(t, len), n;
  uint8_t *work = malloc(need + 8);
  int32_t ids[256], few[2], n_ids = -1, n_full = 0;
  char piece[256];
  kiln_status s;

  if (work == NULL)
    return;
  check(c, need > 0 && kiln_tokenize_work_bytes(t, (size_t)1 << 29) == 0, "work bytes limits");
  s = kiln_tokenize(t, text, len, 1, ids, 256, &n_full, work, need);
  check(c, s == KILN_OK && n_full > 2, "tokenize");
  check(c, kiln_tokenize(t, text, len, 1, ids, 256, &n_ids, work + 3, need) == KILN_OK && n_ids == n_full,
        "any work alignment");
  check(c, kiln_tokenize(t, text, len, 1, ids, 256, &n_ids, work, need - 1) == KILN_ERR_ARGUMENT,
        "work one byte short");
  check(c, kiln_tokenize(t, text, len, 1, ids, 256, &n_ids, NULL, need) == KILN_ERR_ARGUMENT,
        "work NULL");
  check(c, kiln_tokenize(t, NULL, 3, 1, ids, 256, &n_ids, work, need) == KILN_ERR_ARGUMENT, "text NULL");
  check(c, kiln_tokenize(t, text, len, 1, ids, 256, NULL, work, need) == KILN_ERR_ARGUMENT, "n_ids NULL");
  check(c, kiln_tokenize(t, text, len, 1, NULL, 5, &n_ids, work, need) == KILN_ERR_ARGUMENT, "ids NULL");
  few[0] = few[1] = -7;
  s = kiln_tokenize(t, text, len, 1, few, 1, &n_ids, work, need);
  check(c, s == KILN_ERR_ARGUMENT && n_ids == n_full && few[0] == ids[0] && few[1] == -7,
        "ids too small: count reported, nothing past max_ids written");
  s = kiln_tokenize(t, text, len, 1, NULL, 0, &n_ids, work, need);
  check(c, s == KILN_ERR_ARGUMENT && n_ids == n_full, "counting with max_ids 0");
  s = kiln_tokenize(t, NULL, 0, 0, ids, 256, &n_ids, work, kiln_tokenize_work_bytes(t, 0));
  check(c, s == KILN_OK && n_ids == 0, "empty text without specials gives nothing");
  s = kiln_tokenize(t, "", 0, 1, ids, 256, &n_ids, work, kiln_tokenize_work_bytes(t, 0));
  check(c, s == KILN_OK && n_ids == ((t->flags & KILN_VOCAB_ADD_BOS) ? 1 : 0) +
                                       ((t->flags & KILN_VOCAB_ADD_EOS) ? 1 : 0),
        "empty text with specials gives BOS/EOS only");

  check(c, kiln_tokenizer_bos(t) == t->bos && kiln_tokenizer_eos(t) == t->eos &&
               kiln_tokenizer_n_tokens(t) == (int32_t)t->n_tokens && kiln_tokenizer_bos(NULL) == -1,
        "accessors");
  check(c, kiln_token_piece(t, -1, 0, piece, sizeof piece, &n) == KILN_ERR_ARGUMENT, "piece id -1");
  check(c, kiln_token_piece(t, (int32_t)t->n_tokens, 0, piece, sizeof piece, &n) == KILN_ERR_ARGUMENT,
        "piece id n_tokens");
  check(c, kiln_token_text(t, (int32_t)t->n_tokens, &n) == NULL && kiln_token_text(t, 0, &n) != NULL,
        "token text range");
  {
    /* Find a token whose piece is at least 2 bytes and check the cap rule. */
    int32_t id;
    int done = 0;
    for (id = 0; id < (int32_t)t->n_tokens && !done; ++id) {
      size_t full;
      if (kiln_token_piece(t, id, 0, piece, sizeof piece, &full) == KILN_OK && full >= 2) {
        piece[full - 1] = 'X';
        s = kiln_token_piece(t, id, 0, piece, full - 1, &n);
        check(c, s == KILN_ERR_ARGUMENT && n == full && piece[full - 1] == 'X', "piece cap too small");
        s = kiln_token_piece(t, id, 0, NULL, 0, &n);
        check(c, s == KILN_ERR_ARGUMENT && n == full, "piece length query");
        done = 1;
      }
    }
    check(c, done, "some token has a multi-byte piece");
  }
  {
    int32_t id, ok = 1;
    for (id = 0; id < (int32_t)t->n_tokens; ++id)
      if (kiln_token_piece(t, id, 0, piece, t->max_token_bytes, &n) != KILN_OK)
        ok = 0;
    check(c, ok, "max_token_bytes is enough for every piece");
  }
  if (t->bos >= 0)
    check(c, kiln_token_piece(t, t->bos, 0, piece, sizeof piece, &n) == KILN_OK && n == 0,
          "BOS decodes to nothing");
  free(work);
}

static int mode_check(const kiln_tokenizer *t, const uint8_t *seg, size_t size) {
  tally c = {0, 0};
  check_init(&c, seg, size);
  check_api(&c, t);
  printf("%d passed, %d failed\n", c.passed, c.failed);
  return c.failed != 0;
}

int main(int argc, char **argv) {
  kiln_tokenizer t;
  size_t size = 0;
  uint8_t *seg;
  kiln_status s;
  int rc;

  if (argc < 3) {
    fprintf(stderr, "usage: %s SEGMENT encode [FLAGS] | split | eog | chat T FIRST [SYS] | decode | time [REPEAT] | check\n", argv[0]);
    return 2;
  }
  seg = read_file(argv[1], &size);
  if (seg == NULL) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  s = kiln_tokenizer_init(&t, seg, size);
  if (s != KILN_OK) {
    fprintf(stderr, "kiln_tokenizer_init: %s\n", kiln_status_message(s));
    free(seg);
    return 1;
  }
  if (strcmp(argv[2], "encode") == 0)
    rc = mode_encode(&t, argc > 3 ? atoi(argv[3]) : 0);
  else if (strcmp(argv[2], "split") == 0)
    rc = mode_split(&t);
  else if (strcmp(argv[2], "eog") == 0)
    rc = mode_eog(&t);
  else if (strcmp(argv[2], "chat") == 0 && argc >= 5)
    rc = mode_chat((uint32_t)atoi(argv[3]), atoi(argv[4]), argc > 5 ? argv[5] : NULL);
  else if (strcmp(argv[2], "decode") == 0)
    rc = mode_decode(&t);
  else if (strcmp(argv[2], "time") == 0)
    rc = mode_time(&t, argc > 3 ? atoi(argv[3]) : 5);
  else if (strcmp(argv[2], "check") == 0)
    rc = mode_check(&t, seg, size);
  else
    rc = 2;
  free(seg);
  return rc;
}
