/* Byte-BPE pre-tokenizers: where each of the regex patterns GPT-2, Llama 3,
 * Qwen2, SmolLM and GPT-4o split text before merging ends a piece, written out
 * by hand over UTF-8 and the Unicode tables (C99 has no regex). kiln_tokenize
 * calls kiln_piece_end per piece; kiln_pretokenize_next exposes the same. */
#include "kiln/kiln_tokenizer.h"

#include "tokenizer_internal.h"
#include "unicode_tables.h"

/* Classes of \p{L}, \p{N}, \s (Unicode White_Space) and everything else. */
enum { CLASS_END = 0, CLASS_SPACE = 1, CLASS_LETTER = 2, CLASS_NUMBER = 4, CLASS_OTHER = 8 };

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cp < r[mid][0])
      hi = mid;
    else if (cp > r[mid][1])
      lo = mid + 1;
    else
      return 1;
  }
  return 0;
}

static int is_white_space(uint32_t cp) {
  return (cp >= 0x09u && cp <= 0x0Du) || cp == 0x20u || cp == 0x85u || cp == 0xA0u ||
         cp == 0x1680u || (cp >= 0x2000u && cp <= 0x200Au) || cp == 0x2028u || cp == 0x2029u ||
         cp == 0x202Fu || cp == 0x205Fu || cp == 0x3000u;
}

/* The class of the character at s[i] (i < end) and its length in *n: a
 * well-formed UTF-8 sequence, or one byte of anything else (class other). */
static int class_at(const uint8_t *s, size_t end, size_t i, size_t *n) {
  uint8_t c = s[i];
  uint32_t cp;
  size_t k, len = c < 0x80u ? 1 : (c & 0xE0u) == 0xC0u ? 2 : (c & 0xF0u) == 0xE0u ? 3
                                 : (c & 0xF8u) == 0xF0u ? 4 : 0;
  *n = 1;
  if (len == 1) {
    if (c == ' ' || (c >= '\t' && c <= '\r'))
      return CLASS_SPACE;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      return CLASS_LETTER;
    return c >= '0' && c <= '9' ? CLASS_NUMBER : CLASS_OTHER;
  }
  if (len == 0 || end - i < len)
    return CLASS_OTHER;
  cp = c & (0x7Fu >> len);
  for (k = 1; k < len; ++k) {
    if ((s[i + k] & 0xC0u) != 0x80u)
      return CLASS_OTHER;
    cp = cp << 6 | (s[i + k] & 0x3Fu);
  }
  /* Overlong forms, surrogates and values past U+10FFFF are not characters. */
  if ((len == 2 && cp < 0x80u) || (len == 3 && cp < 0x800u) || (len == 4 && cp < 0x10000u) ||
      (cp >= 0xD800u && cp <= 0xDFFFu) || cp > 0x10FFFFu)
    return CLASS_OTHER;
  *n = len;
  if (is_white_space(cp))
    return CLASS_SPACE;
  if (in_ranges(kiln_letter_ranges, sizeof kiln_letter_ranges / sizeof kiln_letter_ranges[0], cp))
    return CLASS_LETTER;
  if (in_ranges(kiln_number_ranges, sizeof kiln_number_ranges / sizeof kiln_number_ranges[0], cp))
    return CLASS_NUMBER;
  return CLASS_OTHER;
}

static int class_of(const uint8_t *s, size_t end, size_t i) {
  size_t n;
  return i < end ? class_at(s, end, i, &n) : CLASS_END;
}

/* End of the run of characters of the classes in `mask` from i. */
static size_t run_end(const uint8_t *s, size_t end, size_t i, int mask) {
  size_t n;
  while (i < end && (class_at(s, end, i, &n) & mask))
    i += n;
  return i;
}

/* 's 't 're 've 'm 'll 'd at i (ASCII letters of either case when `any_case`):
 * the end of the match, or i. */
static size_t contraction_end(const uint8_t *s, size_t end, size_t i, int any_case) {
  uint8_t a, b;
  if (s[i] != '\'' || i + 1 >= end)
    return i;
  a = s[i + 1];
  b = i + 2 < end ? s[i + 2] : 0;
  if (any_case) {
    a = a >= 'A' && a <= 'Z' ? (uint8_t)(a + 32) : a;
    b = b >= 'A' && b <= 'Z' ? (uint8_t)(b + 32) : b;
  }
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return i + 3;
  return i;
}

/* A whitespace run from i to k: all of it at the end of the text, else all
 * but its last character (left for the word after), a single one whole. */
static size_t space_end(const uint8_t *s, size_t end, size_t i, size_t k) {
  size_t last = i, next = i, n;
  if (k == end)
    return k;
  while (next < k) {
    last = next;
    (void)class_at(s, end, next, &n);
    next += n;
  }
  return last > i ? last : k;
}

/* GPT-2's pattern over s[i..end):
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S),
 * a lone whitespace character before a word being a piece of its own. */
static size_t gpt2_end(const uint8_t *s, size_t end, size_t i) {
  size_t j = contraction_end(s, end, i, 0), n;
  int c;
  if (j > i)
    return j;
  c = class_at(s, end, i, &n);
  if (s[i] == ' ' && (class_of(s, end, i + 1) & (CLASS_LETTER | CLASS_NUMBER | CLASS_OTHER))) {
    j = i + 1;
    c = class_of(s, end, j);
  }
  if (c != CLASS_SPACE)
    return run_end(s, end, j, c);
  return space_end(s, end, i, run_end(s, end, i, CLASS_SPACE));
}

/* What Llama 3's and GPT-4o's patterns share past their words, from i (not a
 * letter): \p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (GPT-4o's punctuation run also takes '/' after it). */
static size_t llama3_rest(const uint8_t *s, size_t end, size_t i, int max_digits, int slash) {
  size_t j, n, k, newline;
  int c = class_at(s, end, i, &n), d;
  if (c == CLASS_NUMBER) {
    for (j = i, d = 0; d < max_digits && class_at(s, end, j, &n) == CLASS_NUMBER; ++d) {
      j += n;
      if (j == end)
        break;
    }
    return j;
  }
  j = s[i] == ' ' && class_of(s, end, i + 1) == CLASS_OTHER ? i + 1 : i;
  if (class_of(s, end, j) == CLASS_OTHER) {
    j = run_end(s, end, j, CLASS_OTHER);
    while (j < end && (s[j] == '\r' || s[j] == '\n' || (slash && s[j] == '/')))
      j++;
    return j;
  }
  /* Whitespace: through its last line break, else as GPT-2 splits it. */
  k = run_end(s, end, i, CLASS_SPACE);
  for (newline = k; newline > i && s[newline - 1] != '\r' && s[newline - 1] != '\n'; --newline)
    ;
  return newline > i ? newline : space_end(s, end, i, k);
}

/* Whether the character at i may start Llama 3's and GPT-4o's optional
 * [^\r\n\p{L}\p{N}] before a word. */
static int word_prefix(const uint8_t *s, size_t i, int c) {
  return c != CLASS_LETTER && c != CLASS_NUMBER && s[i] != '\r' && s[i] != '\n';
}

/* Llama 3's pattern (max_digits 3), and Qwen2's (max_digits 1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t llama3_end(const uint8_t *s, size_t end, size_t i, int max_digits) {
  size_t j = contraction_end(s, end, i, 1), n;
  int c;
  if (j > i)
    return j;
  c = class_at(s, end, i, &n);
  if (c == CLASS_LETTER)
    return run_end(s, end, i, CLASS_LETTER);
  if (word_prefix(s, i, c) && class_of(s, end, i + n) == CLASS_LETTER)
    return run_end(s, end, i + n, CLASS_LETTER);
  return llama3_rest(s, end, i, max_digits, 0);
}

/* The end of the run from i of letters other than the ASCII ones from `lo`
 * to lo + 25: GPT-4o's "upper case" letters (lo 'a') or "lower case" ones
 * (lo 'A'), as llama.cpp reads its pattern's \p{Lu}... and \p{Ll}... classes. */
static size_t case_run_end(const uint8_t *s, size_t end, size_t i, uint8_t lo) {
  size_t n;
  while (i < end && class_at(s, end, i, &n) == CLASS_LETTER && !(s[i] >= lo && s[i] <= lo + 25))
    i += n;
  return i;
}

/* An optional case-insensitive contraction at i: the end of the word. */
static size_t word_suffix(const uint8_t *s, size_t end, size_t i) {
  return i < end ? contraction_end(s, end, i, 1) : i;
}

/* GPT-4o's first word form at j, upper* lower+ contraction?: its end, or j.
 * The upper run gives back characters from its end until a lower one can
 * start (non-ASCII letters are both). */
static size_t gpt4o_word1(const uint8_t *s, size_t end, size_t j) {
  size_t m = case_run_end(s, end, j, 'a'), w;
  for (;;) {
    if ((w = case_run_end(s, end, m, 'A')) > m)
      return word_suffix(s, end, w);
    if (m == j)
      return j;
    do
      --m;
    while ((s[m] & 0xC0u) == 0x80u);
  }
}

/* GPT-4o's second word form at j, upper+ lower* contraction?: its end, or j. */
static size_t gpt4o_word2(const uint8_t *s, size_t end, size_t j) {
  size_t u = case_run_end(s, end, j, 'a');
  return u > j ? word_suffix(s, end, case_run_end(s, end, u, 'A')) : j;
}

/* GPT-4o's pattern (llama.cpp's reading of it):
 * [^\r\n\p{L}\p{N}]?upper*lower+(?i:'s|...)?|[^\r\n\p{L}\p{N}]?upper+lower*(?i:'s|...)?|
 * \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t gpt4o_end(const uint8_t *s, size_t end, size_t i) {
  size_t n, k;
  const int c = class_at(s, end, i, &n), prefix = word_prefix(s, i, c);
  if (prefix && (k = gpt4o_word1(s, end, i + n)) > i + n)
    return k;
  if ((k = gpt4o_word1(s, end, i)) > i)
    return k;
  if (prefix && (k = gpt4o_word2(s, end, i + n)) > i + n)
    return k;
  if ((k = gpt4o_word2(s, end, i)) > i)
    return k;
  return llama3_rest(s, end, i, 3, 1);
}

/* The end of the piece that starts at i. */
size_t kiln_piece_end(uint32_t pre, const uint8_t *s, size_t len, size_t i) {
  size_t n, bound;
  switch (pre) {
  case KILN_VOCAB_PRE_LLAMA3:
    return llama3_end(s, len, i, 3);
  case KILN_VOCAB_PRE_QWEN2:
    return llama3_end(s, len, i, 1);
  case KILN_VOCAB_PRE_GPT4O:
    return gpt4o_end(s, len, i);
  case KILN_VOCAB_PRE_SMOLLM:
    /* Each digit alone, then GPT-2's pattern between digits. */
    if (class_at(s, len, i, &n) == CLASS_NUMBER)
      return i + n;
    for (bound = i; bound < len && class_at(s, len, bound, &n) != CLASS_NUMBER; bound += n)
      ;
    return gpt2_end(s, bound, i);
  default:
    return gpt2_end(s, len, i);
  }
}

size_t kiln_pretokenize_next(const kiln_tokenizer *t, const char *text, size_t len, size_t start) {
  if (t == NULL || t->segment == NULL || t->model != KILN_VOCAB_MODEL_BPE || text == NULL ||
      start >= len)
    return len;
  return kiln_piece_end(t->pre, (const uint8_t *)text, len, start);
}

