/*
 * evalab._mtkernel: the two inner loops of BLEU/chrF, WER's word splitting and TER's
 * normaliser in C (optional; pure-Python fallbacks with identical results live in
 * evalab.text.mt, evalab.metrics._ngrams, evalab.text.asr and evalab.text.tercom).
 *
 * mteval_split(line, cjk=False) -> list[str]
 *     Rules 1-4 of mteval-v13a (as sacrebleu's TokenizerRegexp), then str.split(); with
 *     cjk, every CJK character is padded with spaces first (sacrebleu's TokenizerZh).
 *     Every rule is a left-to-right scan over non-overlapping two-character windows,
 *     which is exactly what re.sub does with these fixed-width patterns.
 *
 * tercom_tokens(lines, normalized, no_punct, asian_support, case_sensitive) -> list[list[str]]
 *     The tokens of every line as sacrebleu's TercomTokenizer gives them for the line
 *     right-stripped: lowercased unless case_sensitive (str.lower() for a line with a
 *     non-ASCII character that changes, ASCII letters here otherwise); with normalized, the line breaks joined, four XML entities unescaped, then the Western
 *     rules on " " + line + " " and, with asian_support, CJK characters and punctuation
 *     padded; with no_punct, .,?:;!"() removed (and, with asian_support, CJK and
 *     full-width punctuation); then str.split(). Each rule is one pass over the line.
 *
 * tercom_encode(lines, vocab, normalized, no_punct, asian_support, case_sensitive, twice)
 *     -> (bytes, bytes)
 *     The same tokens as int64 ids through the Vocab (new tokens added), with the
 *     nlines + 1 offsets; with twice, each line's tokens are joined by single spaces and
 *     normalised again first (sacrebleu normalises references twice).
 *
 * Vocab()
 *     A token -> id table keyed by code points (no str object per token).
 *
 * encode_lines(lines, vocab, zh, add=True) -> (bytes, bytes)
 *     The whole Tokenizer13a (zh=False: unescaping and padding, then the rules) or
 *     TokenizerZh (zh=True: strip, CJK padding, the rules) of every line, each token
 *     mapped to an int64 id through the Vocab (a new token gets id len(vocab); with
 *     add=False an unknown token gets -1 and the Vocab is left unchanged).
 *     Returns the ids and the nlines + 1 segment offsets as native int64 bytes.
 *
 * encode_words(lines, vocab, any_space) -> (bytes, bytes)
 *     The same for jiwer 4's default words (evalab.text.asr.word_tokens of a prepared
 *     line): runs of two or more whitespace characters (str.isspace) and single spaces
 *     separate words, a single other whitespace character stays inside its word, the ends
 *     are stripped; with any_space every ASCII whitespace character counts as a space.
 *     Every word is added to the Vocab.
 *
 * pack_chars(texts, keep_whitespace) -> (bytes, bytes)
 *     The code points of every text as uint32 (whitespace, as str.split() sees it,
 *     dropped unless kept), with the nseg + 1 offsets as int64.
 *
 * match_counts(hyps, hyp_offs, refs, ref_offs, max_order, out_per_refs, out_maxs)
 *     Token ids (int32, uint32 or int64) of the hypotheses of every system and of each
 *     reference stream, with segment offsets (int64, nseg + 1). For every system i,
 *     segment s and order n (1..max_order):
 *       out_per_refs[i][s, j, n-1] = sum over hyp n-grams g of min(c_hyp(g), c_ref_j(g))
 *       out_maxs[i][s, n-1]        = sum over hyp n-grams g of min(c_hyp(g), max_j c_ref_j(g))
 *     (chrF picks the best reference per segment; BLEU clips by the maximum count in any
 *     single reference.) n-grams are compared exactly; the hash only chooses the slot.
 *
 * match_counts_shared(hyps, hyp_offs, refs, ref_offs, max_order, out_per_refs, out_maxs)
 *     The same numbers, with each segment's reference n-grams counted once and every
 *     system's hypotheses looked up in them: faster from about three systems on.
 */
#define PY_SSIZE_T_CLEAN
#include "_kernels.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tokenizer */

static inline int is_pad(Py_UCS4 c)
{
    /* [{-~[-` -&(-+:-@/] */
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static inline int is_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }
static inline int is_pc(Py_UCS4 c) { return c == '.' || c == ','; }

/* sacrebleu's TokenizerZh ranges, as evalab.text.mt._ZH_RANGES (see the note there) */
static const Py_UCS4 ZH_RANGES[][2] = {
    {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A},
    {0xFA70, 0xFAD9}, {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF},
    {0x3000, 0x303F}, {0x31C0, 0x31EF}, {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F},
    {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F}, {0x2600, 0x26FF}, {0x2700, 0x27BF},
    {0x3200, 0x32FF}, {0x3300, 0x33FF},
};

static int is_zh(Py_UCS4 c)
{
    if (c < 0x2001 || c > 0xFFEF)
        return 0;
    for (size_t r = 0; r < sizeof(ZH_RANGES) / sizeof(ZH_RANGES[0]); r++)
        if (c >= ZH_RANGES[r][0] && c <= ZH_RANGES[r][1])
            return 1;
    return 0;
}

/* Working buffers: each pass reads one and writes the other (see run_passes). */
typedef struct {
    Py_UCS4 *a, *b;
    Py_ssize_t cap;
} Work;

/* Grows both buffers to hold `need` code points, keeping what they hold: 0, or -1 with
 * MemoryError set. */
static int work_reserve(Work *w, Py_ssize_t need)
{
    if (need <= w->cap)
        return 0;
    if (GROW(w->a, need) < 0 || GROW(w->b, need) < 0)
        return -1;
    w->cap = need;
    return 0;
}

/* The code points of `str` in b, and room for the two padding spaces. */
static int work_load(Work *w, PyObject *str, Py_ssize_t *n)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(str);
    if (work_reserve(w, len + 8) < 0)
        return -1;
    if (len && !PyUnicode_AsUCS4(str, w->b, len, 0))
        return -1;
    *n = len;
    return 0;
}

static void work_free(Work *w)
{
    PyMem_Free(w->a);
    PyMem_Free(w->b);
}

/* str.replace(pat, rep) in place for an ASCII pattern and a replacement that is one
 * character (rep > 0) or nothing (rep == 0): non-overlapping, left to right. */
static Py_ssize_t replace_pass(Py_UCS4 *s, Py_ssize_t n, const char *pat, Py_UCS4 rep)
{
    Py_ssize_t m = (Py_ssize_t)strlen(pat), k = 0, i = 0;
    while (i < n) {
        Py_ssize_t q = 0;
        while (q < m && i + q < n && s[i + q] == (Py_UCS4)(unsigned char)pat[q])
            q++;
        if (q == m) {
            if (rep)
                s[k++] = rep;
            i += m;
        } else {
            s[k++] = s[i++];
        }
    }
    return k;
}

typedef struct {
    const char *pat;
    Py_UCS4 rep;
} Replace;

/* The line breaks mteval-v13a and Tercom join, and the four XML entities both unescape
 * (in sacrebleu's order). */
static const Replace BREAKS_13A[] = {{"<skipped>", 0}, {"-\n", 0}, {"\n", ' '}, {NULL, 0}};
static const Replace BREAKS_TERCOM[] = {{"\n-", 0}, {"\n", ' '}, {NULL, 0}};
static const Replace ENTITIES[] = {
    {"&quot;", '"'}, {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {NULL, 0}};

/* The ASCII characters a text holds, one bit each. */
typedef struct {
    uint64_t bits[2];
} AsciiSet;

static void ascii_add(AsciiSet *set, Py_UCS4 c)
{
    if (c < 0x80)
        set->bits[c >> 6] |= (uint64_t)1 << (c & 63);
}

static int ascii_holds_all(const AsciiSet *set, const char *pat)
{
    for (; *pat; pat++) {
        unsigned char c = (unsigned char)*pat;
        if (!(set->bits[c >> 6] >> (c & 63) & 1))
            return 0;
    }
    return 1;
}

/* Every replacement of the NULL-ended table on b[0..n), in order; one whose pattern has a
 * character `set` (what the text holds) lacks changes nothing and is skipped. */
static Py_ssize_t replace_each(Py_UCS4 *b, Py_ssize_t n, const Replace *table, AsciiSet *set)
{
    for (; table->pat; table++) {
        if (ascii_holds_all(set, table->pat)) {
            n = replace_pass(b, n, table->pat, table->rep);
            ascii_add(set, table->rep);
        }
    }
    return n;
}

/* The steps before the rules (Tokenizer13a's, or Tercom's general part), in b: the line
 * breaks, the entities, then one space each side. b has room for the two spaces. */
static Py_ssize_t prepare(Py_UCS4 *b, Py_ssize_t n, const Replace *breaks)
{
    AsciiSet set = {{0, 0}};
    for (Py_ssize_t i = 0; i < n; i++)
        ascii_add(&set, b[i]);
    n = replace_each(b, n, breaks, &set);
    n = replace_each(b, n, ENTITIES, &set);
    memmove(b + 1, b, sizeof(Py_UCS4) * n);
    b[0] = ' ';
    b[n + 1] = ' ';
    return n + 2;
}

/* str.strip() (TokenizerZh strips the line first), or str.rstrip() (TER's lines) */
static Py_ssize_t strip_ws(Py_UCS4 *b, Py_ssize_t n, int left)
{
    Py_ssize_t s = 0, e = n;
    while (left && s < e && Py_UNICODE_ISSPACE(b[s]))
        s++;
    while (e > s && Py_UNICODE_ISSPACE(b[e - 1]))
        e--;
    memmove(b, b + s, sizeof(Py_UCS4) * (e - s));
    return e - s;
}

/* One rewriting pass: src[0..n) into dst, at most tripling the text; returns its length. */
typedef Py_ssize_t (*Pass)(const Py_UCS4 *src, Py_ssize_t n, Py_UCS4 *dst);

/* Runs the passes in order (a NULL one is skipped) from b, each into the other buffer;
 * the result is left in b. Returns its length, or -1 with MemoryError set. */
static Py_ssize_t run_passes(Work *w, Py_ssize_t n, const Pass *passes, size_t count)
{
    for (size_t p = 0; p < count; p++) {
        if (!passes[p])
            continue;
        if (work_reserve(w, 3 * n + 8) < 0)
            return -1;
        n = passes[p](w->b, n, w->a);
        Py_UCS4 *t = w->a;
        w->a = w->b, w->b = t;
    }
    return n;
}

/* ([class]) -> " \1 ": every character of the class padded with a space each side. */
static inline Py_ssize_t pad_where(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d,
                                   int (*in_class)(Py_UCS4))
{
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (in_class(s[i])) {
            d[k++] = ' ';
            d[k++] = s[i];
            d[k++] = ' ';
        } else {
            d[k++] = s[i];
        }
    }
    return k;
}

/* [class] -> "": every character of the class dropped. */
static inline Py_ssize_t drop_where(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d,
                                    int (*in_class)(Py_UCS4))
{
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!in_class(s[i]))
            d[k++] = s[i];
    return k;
}

/* (x)(y) -> x and y spaced, where match(x, y): left to right over non-overlapping
 * two-character windows, which is what re.sub does with these fixed-width patterns;
 * `lead` gives " \1 \2", else "\1 \2 ". */
static inline Py_ssize_t window_pass(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d,
                                     int (*match)(Py_UCS4, Py_UCS4), int lead)
{
    Py_ssize_t k = 0, i = 0;
    while (i < n) {
        if (i + 1 < n && match(s[i], s[i + 1])) {
            if (lead)
                d[k++] = ' ';
            d[k++] = s[i];
            d[k++] = ' ';
            d[k++] = s[i + 1];
            if (!lead)
                d[k++] = ' ';
            i += 2;
        } else {
            d[k++] = s[i++];
        }
    }
    return k;
}

static int is_pad_or_zh(Py_UCS4 c) { return is_pad(c) || is_zh(c); }
static int nondigit_pc(Py_UCS4 x, Py_UCS4 y) { return !is_digit(x) && is_pc(y); }
static int pc_nondigit(Py_UCS4 x, Py_UCS4 y) { return is_pc(x) && !is_digit(y); }
static int digit_dash(Py_UCS4 x, Py_UCS4 y) { return is_digit(x) && y == '-'; }

/* rule 1 of mteval-v13a: pad ASCII punctuation and symbols (zh: and CJK characters) */
static Py_ssize_t pad_ascii(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return pad_where(s, n, d, is_pad);
}
static Py_ssize_t pad_ascii_zh(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return pad_where(s, n, d, is_pad_or_zh);
}
/* rule 2: ([^0-9])([.,]) -> "\1 \2 " */
static Py_ssize_t rule_pc_after(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return window_pass(s, n, d, nondigit_pc, 0);
}
/* rule 3: ([.,])([^0-9]) -> " \1 \2" */
static Py_ssize_t rule_pc_before(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return window_pass(s, n, d, pc_nondigit, 1);
}
/* rule 4: ([0-9])(-) -> "\1 \2 " */
static Py_ssize_t rule_dash(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return window_pass(s, n, d, digit_dash, 0);
}

/* Rules 1-4 of mteval-v13a on b[0..n); the result is left in b; returns its length, or
 * -1 with MemoryError set. */
static Py_ssize_t run_rules(Work *w, Py_ssize_t n, int cjk)
{
    const Pass rules[] = {cjk ? pad_ascii_zh : pad_ascii, rule_pc_after, rule_pc_before,
                          rule_dash};
    return run_passes(w, n, rules, sizeof rules / sizeof rules[0]);
}

/* The next whitespace-separated token of b[0..k) from *i on: 1 and its start (the token
 * ends at the new *i), or 0 when none is left. Whitespace is str.split()'s. */
static int next_token(const Py_UCS4 *b, Py_ssize_t k, Py_ssize_t *i, Py_ssize_t *start)
{
    while (*i < k && Py_UNICODE_ISSPACE(b[*i]))
        (*i)++;
    if (*i >= k)
        return 0;
    *start = *i;
    while (*i < k && !Py_UNICODE_ISSPACE(b[*i]))
        (*i)++;
    return 1;
}

/* The next word of b[0..k) from *i as jiwer's default splits (see encode_words); 0 when
 * none is left. A word never starts with whitespace: the run before it is its separator. */
static int next_word(const Py_UCS4 *b, Py_ssize_t k, Py_ssize_t *i, Py_ssize_t *start,
                     int any_space)
{
    while (*i < k && Py_UNICODE_ISSPACE(b[*i]))
        (*i)++;
    if (*i >= k)
        return 0;
    *start = *i;
    for (; *i < k; (*i)++) {
        Py_UCS4 c = b[*i];
        if (!Py_UNICODE_ISSPACE(c))
            continue;
        /* a space (any_space: or \t \n \v \f \r, string.whitespace), a run of two or
         * more, or the stripped end ends the word */
        if (c == ' ' || (any_space && c <= '\r') || *i + 1 == k || Py_UNICODE_ISSPACE(b[*i + 1]))
            break;
    }
    return 1;
}

/* Calls emit(token, ctx) for every whitespace-separated token of b[0..k). */
typedef int (*emit_fn)(PyObject *tok, void *ctx);

static int split_tokens(const Py_UCS4 *b, Py_ssize_t k, emit_fn emit, void *ctx)
{
    Py_ssize_t i = 0, start;
    while (next_token(b, k, &i, &start)) {
        PyObject *tok = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, b + start, i - start);
        if (!tok)
            return -1;
        int rc = emit(tok, ctx);
        Py_DECREF(tok);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int emit_to_list(PyObject *tok, void *ctx) { return PyList_Append((PyObject *)ctx, tok); }

static PyObject *mteval_split(PyObject *self, PyObject *args)
{
    PyObject *line;
    int cjk = 0;
    if (!PyArg_ParseTuple(args, "U|p", &line, &cjk))
        return NULL;
    Work w = {NULL, NULL, 0};
    Py_ssize_t n;
    PyObject *out = NULL;
    if (work_load(&w, line, &n) < 0 || (n = run_rules(&w, n, cjk)) < 0)
        goto fail;
    out = PyList_New(0);
    if (!out || split_tokens(w.b, n, emit_to_list, out) < 0)
        goto fail;
    work_free(&w);
    return out;
fail:
    Py_XDECREF(out);
    work_free(&w);
    return NULL;
}

/* ------------------------------------------------------------------ Tercom normaliser */

/* Tercom's CJK ranges, each padded by one of its rules: unified ideographs and extension A,
 * strokes and radicals, compatibility (with its ideographs and forms), and "enclosed CJK
 * letters and months" as Tercom writes it (to U+3F22). Its kana rules only fire on a text
 * that is one kana run from its first character, which never happens after the Western
 * rules (the text starts with a space), so they are left out. */
static const Py_UCS4 TERCOM_CJK[][2] = {
    {0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x31C0, 0x31EF}, {0x2E80, 0x2EFF}, {0x3300, 0x33FF},
    {0xF900, 0xFAFF}, {0xFE30, 0xFE4F}, {0x3200, 0x3F22},
};

/* Tercom's Asian punctuation ([\u3001\u3002\u3008-\u3011\u3014-\u301f\uff61-\uff65\u30fb])
 * and full-width punctuation (．，？：；！＂（）) */
static int is_asian_punct(Py_UCS4 c)
{
    return c == 0x3001 || c == 0x3002 || (c >= 0x3008 && c <= 0x3011) ||
           (c >= 0x3014 && c <= 0x301F) || (c >= 0xFF61 && c <= 0xFF65) || c == 0x30FB ||
           c == 0xFF0E || c == 0xFF0C || c == 0xFF1F || c == 0xFF1A || c == 0xFF1B ||
           c == 0xFF01 || c == 0xFF02 || c == 0xFF08 || c == 0xFF09;
}

static int is_tercom_cjk(Py_UCS4 c)
{
    if (c < 0x2E80)
        return 0;
    for (size_t r = 0; r < sizeof(TERCOM_CJK) / sizeof(TERCOM_CJK[0]); r++)
        if (c >= TERCOM_CJK[r][0] && c <= TERCOM_CJK[r][1])
            return 1;
    return is_asian_punct(c);
}

/* the marks no_punct removes: .,?:;!"() (and with asian_support the Asian ones) */
static int is_punct(Py_UCS4 c) { return c < 0x80 && c && strchr(".,?:;!\"()", (int)c); }
static int is_punct_asian(Py_UCS4 c) { return is_punct(c) || is_asian_punct(c); }

/* "'s " -> " 's " (Tercom's possessive rule; its "'s$" twin never fires after the Western
 * rules, which end the text with a space) */
static Py_ssize_t rule_possessive(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    Py_ssize_t k = 0, i = 0;
    while (i < n) {
        if (i + 2 < n && s[i] == '\'' && s[i + 1] == 's' && s[i + 2] == ' ')
            d[k++] = ' ';
        d[k++] = s[i++];
    }
    return k;
}

static Py_ssize_t pad_cjk(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return pad_where(s, n, d, is_tercom_cjk);
}
static Py_ssize_t drop_punct(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return drop_where(s, n, d, is_punct);
}
static Py_ssize_t drop_punct_asian(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *d)
{
    return drop_where(s, n, d, is_punct_asian);
}

/* What a line holds, so that a pass with nothing to do is skipped: ASCII punctuation or
 * symbols other than the space (or '&', whose entities unescape to some), an apostrophe,
 * '.' or ',', '-', one of .,?:;!"() (or '&': &quot;), a CJK character, an Asian mark,
 * and a non-ASCII character that lowercases to another. */
enum {
    HAS_PAD = 1,
    HAS_QUOTE = 2,
    HAS_PC = 4,
    HAS_DASH = 8,
    HAS_PUNCT = 16,
    HAS_CJK = 32,
    HAS_ASIAN_PUNCT = 64,
    HAS_CASED = 128,
};

static int ascii_marks(Py_UCS4 c)
{
    return (is_pad(c) && c != ' ' ? HAS_PAD : 0) | (c == '\'' ? HAS_QUOTE : 0) |
           (is_pc(c) ? HAS_PC : 0) | (c == '-' ? HAS_DASH : 0) |
           (is_punct(c) || c == '&' ? HAS_PUNCT : 0);
}

/* the marks of every ASCII character, filled when the module is loaded */
static unsigned char ASCII_MARKS[0x80];

typedef struct {
    int normalized, no_punct, asian, cased;
} TercomSettings;

/* The marks b[0..n) holds (the CJK ones only with asian_support); ASCII letters are
 * lowercased on the way unless `cased`, and HAS_CASED tells that another character
 * lowercases too (then str.lower() must do it: full and contextual mappings, İ and Σ).
 * No character of U+2E80..U+9FFF (CJK, kana) has a lowercase; test_tercom checks every
 * code point that has one. */
static int marks_of(Py_UCS4 *b, Py_ssize_t n, const TercomSettings *t)
{
    int marks = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = b[i];
        if (c < 0x80) {
            if (!t->cased && c >= 'A' && c <= 'Z')
                b[i] = c + ('a' - 'A');
            marks |= ASCII_MARKS[c];
            continue;
        }
        if (!t->cased && (c < 0x2E80 || c > 0x9FFF) && Py_UNICODE_TOLOWER(c) != c)
            marks |= HAS_CASED;
        if (t->asian && is_tercom_cjk(c))
            marks |= HAS_CJK | (is_asian_punct(c) ? HAS_ASIAN_PUNCT : 0);
    }
    return marks;
}

/* The passes a line with these marks needs, in Tercom's order: the Western rules (ASCII
 * padding, possessives, periods and commas, the dash), the CJK padding, then the removal
 * of punctuation. Returns their number (at most 7). */
static size_t tercom_passes(const TercomSettings *t, int marks, Pass *passes)
{
    size_t count = 0;
    if (t->normalized) {
        if (marks & HAS_PAD)
            passes[count++] = pad_ascii;
        if (marks & HAS_QUOTE)
            passes[count++] = rule_possessive;
        if (marks & HAS_PC) {
            passes[count++] = rule_pc_after;
            passes[count++] = rule_pc_before;
        }
        if (marks & HAS_DASH)
            passes[count++] = rule_dash;
        if (t->asian && (marks & HAS_CJK))
            passes[count++] = pad_cjk;
    }
    if (t->no_punct && (marks & (HAS_PUNCT | (t->asian ? HAS_ASIAN_PUNCT : 0))))
        passes[count++] = t->asian ? drop_punct_asian : drop_punct;
    return count;
}

/* Tercom's rules on w->b[0..n), the code points of `line` (or, with line NULL, of no
 * str yet: one is made if str.lower() is needed); the result is left in w->b. Returns its
 * length, or -1 with an error set. */
static Py_ssize_t tercom_rules(Work *w, Py_ssize_t n, PyObject *line, const TercomSettings *t)
{
    int marks = marks_of(w->b, n, t);
    if (marks & HAS_CASED) {
        PyObject *text = line ? Py_NewRef(line)
                              : PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, w->b, n);
        PyObject *lower = text ? PyObject_CallMethod(text, "lower", NULL) : NULL;
        int rc = lower ? work_load(w, lower, &n) : -1;
        Py_XDECREF(text);
        Py_XDECREF(lower);
        if (rc < 0)
            return -1;
        const TercomSettings lowered = {t->normalized, t->no_punct, t->asian, 1};
        marks = marks_of(w->b, n, &lowered);
    }
    if (work_reserve(w, n + 8) < 0)
        return -1;
    n = strip_ws(w->b, n, 0);
    if (t->normalized)
        n = prepare(w->b, n, BREAKS_TERCOM);
    Pass passes[8];
    return run_passes(w, n, passes, tercom_passes(t, marks, passes));
}

/* The tokens of b[0..n) joined by single spaces, in place (" ".join(s.split())). */
static Py_ssize_t join_tokens(Py_UCS4 *b, Py_ssize_t n)
{
    Py_ssize_t i = 0, k = 0, start;
    while (next_token(b, n, &i, &start)) {
        if (k)
            b[k++] = ' ';
        memmove(b + k, b + start, sizeof(Py_UCS4) * (i - start));
        k += i - start;
    }
    return k;
}

/* Tercom's rules on `line` (`twice`: then again on its tokens joined by spaces, as
 * sacrebleu normalises references); the result is left in w->b. Its length, or -1. */
static Py_ssize_t tercom_line(Work *w, PyObject *line, const TercomSettings *t, int twice)
{
    Py_ssize_t n;
    if (!PyUnicode_Check(line)) {
        PyErr_SetString(PyExc_TypeError, "a line is not a str");
        return -1;
    }
    if (work_load(w, line, &n) < 0 || (n = tercom_rules(w, n, line, t)) < 0)
        return -1;
    if (twice)
        n = tercom_rules(w, join_tokens(w->b, n), NULL, t);
    return n;
}

static PyObject *tercom_tokens(PyObject *self, PyObject *args)
{
    PyObject *lines;
    TercomSettings t;
    if (!PyArg_ParseTuple(args, "O!pppp", &PyList_Type, &lines, &t.normalized, &t.no_punct,
                          &t.asian, &t.cased))
        return NULL;
    Py_ssize_t nlines = PyList_GET_SIZE(lines);
    PyObject *out = PyList_New(nlines);
    Work w = {NULL, NULL, 0};
    for (Py_ssize_t s = 0; out && s < nlines; s++) {
        Py_ssize_t n = tercom_line(&w, PyList_GET_ITEM(lines, s), &t, 0);
        PyObject *tokens = n < 0 ? NULL : PyList_New(0);
        if (tokens && split_tokens(w.b, n, emit_to_list, tokens) < 0)
            Py_CLEAR(tokens);
        if (!tokens)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, s, tokens);
    }
    work_free(&w);
    return out;
}

/* ------------------------------------------------------------------ token vocabulary */

/*
 * Vocab: token -> id (0, 1, 2, ... in order of first insertion), keyed by the token's code
 * points. Tokens are looked up straight from the tokenizer's buffer, so no str object is
 * made per token; keys are compared exactly, the hash only picks the slot.
 */
typedef struct {
    PyObject_HEAD
    Py_UCS4 *chars;      /* code points of every token, back to back */
    Py_ssize_t nchars, chars_cap;
    Py_ssize_t *start;   /* per id: offset into chars */
    int32_t *len;        /* per id: length */
    uint64_t *hash;      /* per id: hash of the code points */
    Py_ssize_t n, ids_cap;
    int32_t *slots;      /* open addressing: id, or -1 for empty */
    Py_ssize_t nslots;   /* a power of two, at least twice n */
} VocabObject;

static uint64_t token_hash(const Py_UCS4 *t, Py_ssize_t k)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)k;
    for (Py_ssize_t i = 0; i < k; i++)
        h = (h ^ t[i]) * 0x100000001b3ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

static int vocab_grow_slots(VocabObject *v)
{
    Py_ssize_t nslots = v->nslots ? 2 * v->nslots : 1024;
    int32_t *slots = PyMem_Malloc(sizeof(int32_t) * nslots);
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    memset(slots, 0xff, sizeof(int32_t) * nslots);
    for (Py_ssize_t id = 0; id < v->n; id++) {
        Py_ssize_t e = (Py_ssize_t)(v->hash[id] & (uint64_t)(nslots - 1));
        while (slots[e] >= 0)
            e = (e + 1) & (nslots - 1);
        slots[e] = (int32_t)id;
    }
    PyMem_Free(v->slots);
    v->slots = slots;
    v->nslots = nslots;
    return 0;
}

/* The id of token t[0..k), adding it when add is set; -1 when absent and not added,
 * -2 on error (exception set). */
static int64_t vocab_id(VocabObject *v, const Py_UCS4 *t, Py_ssize_t k, int add)
{
    uint64_t h = token_hash(t, k);
    if (!v->nslots && vocab_grow_slots(v) < 0)
        return -2;
    Py_ssize_t mask = v->nslots - 1, e = (Py_ssize_t)(h & (uint64_t)mask);
    for (int32_t id; (id = v->slots[e]) >= 0; e = (e + 1) & mask) {
        if (v->hash[id] == h && v->len[id] == k &&
            memcmp(v->chars + v->start[id], t, sizeof(Py_UCS4) * k) == 0)
            return id;
    }
    if (!add)
        return -1;
    if (v->n >= INT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "vocabulary is full (2**31 - 1 tokens)");
        return -2;
    }
    if (v->n == v->ids_cap) {
        Py_ssize_t cap = v->ids_cap ? 2 * v->ids_cap : 1024;
        if (GROW(v->start, cap) < 0 || GROW(v->len, cap) < 0 || GROW(v->hash, cap) < 0)
            return -2;
        v->ids_cap = cap;
    }
    if (v->nchars + k > v->chars_cap) {
        Py_ssize_t cap = v->chars_cap ? v->chars_cap : 4096;
        while (cap < v->nchars + k)
            cap *= 2;
        if (GROW(v->chars, cap) < 0)
            return -2;
        v->chars_cap = cap;
    }
    Py_ssize_t id = v->n++;
    memcpy(v->chars + v->nchars, t, sizeof(Py_UCS4) * k);
    v->start[id] = v->nchars;
    v->len[id] = (int32_t)k;
    v->hash[id] = h;
    v->nchars += k;
    v->slots[e] = (int32_t)id;
    if (2 * v->n > v->nslots && vocab_grow_slots(v) < 0)
        return -2;
    return id;
}

static void vocab_dealloc(VocabObject *v)
{
    PyMem_Free(v->chars);
    PyMem_Free(v->start);
    PyMem_Free(v->len);
    PyMem_Free(v->hash);
    PyMem_Free(v->slots);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

static Py_ssize_t vocab_length(VocabObject *v) { return v->n; }

static PyObject *vocab_tokens(VocabObject *v, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New(v->n);
    if (!out)
        return NULL;
    for (Py_ssize_t id = 0; id < v->n; id++) {
        PyObject *tok = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, v->chars + v->start[id], v->len[id]);
        if (!tok) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, id, tok);
    }
    return out;
}

static PySequenceMethods vocab_as_sequence = {.sq_length = (lenfunc)vocab_length};

static PyMethodDef vocab_methods[] = {
    {"tokens", (PyCFunction)vocab_tokens, METH_NOARGS, "tokens() -> list[str]: every token, in id order."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject VocabType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "evalab._mtkernel.Vocab",
    .tp_doc = "Vocab(): token -> int id table filled by encode_lines and encode_words (ids 0, "
              "1, ... in order of first insertion). len() is the number of tokens.",
    .tp_basicsize = sizeof(VocabObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)vocab_dealloc,
    .tp_as_sequence = &vocab_as_sequence,
    .tp_methods = vocab_methods,
};

typedef struct {
    int64_t *ids;
    Py_ssize_t n, cap;
} IdList;

/* How encode_all splits a line: mteval-v13a, zh, Tercom's rules (once, or twice as for
 * references), or jiwer's words (any_space or not). */
enum { RULE_13A, RULE_ZH, RULE_TERCOM, RULE_TERCOM_TWICE, RULE_WORDS, RULE_WORDS_ANY };

/* Appends the id of every token of b[0..k) (whitespace-separated, or jiwer's words) to out. */
static int encode_tokens(const Py_UCS4 *b, Py_ssize_t k, VocabObject *v, int add, int rule,
                         IdList *out)
{
    Py_ssize_t i = 0, start;
    while (rule >= RULE_WORDS ? next_word(b, k, &i, &start, rule == RULE_WORDS_ANY)
                              : next_token(b, k, &i, &start)) {
        int64_t id = vocab_id(v, b + start, i - start, add);
        if (id == -2)
            return -1;
        if (out->n == out->cap) {
            Py_ssize_t cap = out->cap ? 2 * out->cap : 4096;
            if (GROW(out->ids, cap) < 0)
                return -1;
            out->cap = cap;
        }
        out->ids[out->n++] = id;
    }
    return 0;
}

/* The ids of every line's tokens under `rule` and the offsets, as (bytes, bytes). */
static PyObject *encode_all(PyObject *lines, VocabObject *vocab, int rule, int add,
                            const TercomSettings *tercom)
{
    Py_ssize_t nlines = PyList_GET_SIZE(lines);
    IdList enc = {NULL, 0, 0};
    Work w = {NULL, NULL, 0};
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, sizeof(int64_t) * (nlines + 1));
    PyObject *ids = NULL;
    if (!offsets)
        goto fail;
    int64_t *off = (int64_t *)PyBytes_AS_STRING(offsets);
    off[0] = 0;
    for (Py_ssize_t s = 0; s < nlines; s++) {
        PyObject *line = PyList_GET_ITEM(lines, s);
        if (!PyUnicode_Check(line)) {
            PyErr_Format(PyExc_TypeError, "line %zd is not a str", s);
            goto fail;
        }
        Py_ssize_t n;
        if (rule == RULE_TERCOM || rule == RULE_TERCOM_TWICE) {
            if ((n = tercom_line(&w, line, tercom, rule == RULE_TERCOM_TWICE)) < 0)
                goto fail;
        } else if (work_load(&w, line, &n) < 0) {
            goto fail;
        } else if (rule < RULE_WORDS) {
            n = rule == RULE_ZH ? strip_ws(w.b, n, 1) : prepare(w.b, n, BREAKS_13A);
            if ((n = run_rules(&w, n, rule == RULE_ZH)) < 0)
                goto fail;
        }
        if (encode_tokens(w.b, n, vocab, add, rule, &enc) < 0)
            goto fail;
        off[s + 1] = enc.n;
    }
    ids = PyBytes_FromStringAndSize((const char *)enc.ids, sizeof(int64_t) * enc.n);
    if (!ids)
        goto fail;
    PyMem_Free(enc.ids);
    work_free(&w);
    PyObject *res = PyTuple_Pack(2, ids, offsets);
    Py_DECREF(ids);
    Py_DECREF(offsets);
    return res;
fail:
    PyMem_Free(enc.ids);
    work_free(&w);
    Py_XDECREF(offsets);
    Py_XDECREF(ids);
    return NULL;
}

static PyObject *encode_lines(PyObject *self, PyObject *args)
{
    PyObject *lines;
    VocabObject *vocab;
    int zh, add = 1;
    if (!PyArg_ParseTuple(args, "O!O!p|p", &PyList_Type, &lines, &VocabType, &vocab, &zh, &add))
        return NULL;
    return encode_all(lines, vocab, zh ? RULE_ZH : RULE_13A, add, NULL);
}

static PyObject *encode_words(PyObject *self, PyObject *args)
{
    PyObject *lines;
    VocabObject *vocab;
    int any_space;
    if (!PyArg_ParseTuple(args, "O!O!p", &PyList_Type, &lines, &VocabType, &vocab, &any_space))
        return NULL;
    return encode_all(lines, vocab, any_space ? RULE_WORDS_ANY : RULE_WORDS, 1, NULL);
}

static PyObject *tercom_encode(PyObject *self, PyObject *args)
{
    PyObject *lines;
    VocabObject *vocab;
    TercomSettings t;
    int twice;
    if (!PyArg_ParseTuple(args, "O!O!ppppp", &PyList_Type, &lines, &VocabType, &vocab,
                          &t.normalized, &t.no_punct, &t.asian, &t.cased, &twice))
        return NULL;
    return encode_all(lines, vocab, twice ? RULE_TERCOM_TWICE : RULE_TERCOM, 1, &t);
}

/* ------------------------------------------------------------------ character packing */

static PyObject *pack_chars(PyObject *self, PyObject *args)
{
    PyObject *texts;
    int keep_ws;
    if (!PyArg_ParseTuple(args, "O!p", &PyList_Type, &texts, &keep_ws))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(texts), total = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *t = PyList_GET_ITEM(texts, s);
        if (!PyUnicode_Check(t)) {
            PyErr_Format(PyExc_TypeError, "segment %zd is not a str", s);
            return NULL;
        }
        total += PyUnicode_GET_LENGTH(t);
    }
    PyObject *chars = PyBytes_FromStringAndSize(NULL, sizeof(uint32_t) * total);
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, sizeof(int64_t) * (n + 1));
    if (!chars || !offsets) {
        Py_XDECREF(chars);
        Py_XDECREF(offsets);
        return NULL;
    }
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(chars);
    int64_t *off = (int64_t *)PyBytes_AS_STRING(offsets);
    Py_ssize_t k = 0;
    off[0] = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *t = PyList_GET_ITEM(texts, s);
        int kind = PyUnicode_KIND(t);
        const void *data = PyUnicode_DATA(t);
        Py_ssize_t len = PyUnicode_GET_LENGTH(t);
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            /* str.split()'s whitespace: "".join(t.split()) drops exactly these */
            if (keep_ws || !Py_UNICODE_ISSPACE(c))
                out[k++] = c;
        }
        off[s + 1] = k;
    }
    if (k < total && _PyBytes_Resize(&chars, sizeof(uint32_t) * k) < 0) {
        Py_DECREF(offsets);
        return NULL;
    }
    PyObject *res = PyTuple_Pack(2, chars, offsets);
    Py_DECREF(chars);
    Py_DECREF(offsets);
    return res;
}

/* ------------------------------------------------------------------ n-gram matching */

/*
 * Per segment, every distinct reference n-gram (all orders, all references) gets an id
 * 0, 1, 2, ... The n-gram starting at position p is the pair (id of the (n-1)-gram at p,
 * token at p+n-1), the empty prefix being -2, so one hash table of pairs holds every
 * order. Each hypothesis of the segment (one per system) then looks its n-grams up in
 * that table: a prefix that no reference has (id -1) ends the chain, as no extension of
 * it can match. The reference side is built once per segment for all systems.
 * Keys are compared exactly; the hash only picks the slot.
 */

static inline uint64_t pair_hash(int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ULL;
    h ^= (uint64_t)b + 0x632be59bd9b4e019ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

typedef struct {
    Py_buffer view;
    int held;
} Buf;

/* One slot of the reference n-gram table: key (prefix id, token), value id (-1: empty).
 * Ids and prefix ids are below 2**31; tokens keep 64 bits. */
typedef struct {
    int64_t b;
    int32_t a;
    int32_t id;
} Slot;

/* ids may be 4-byte (int32 ids, uint32 code points: no widening copy of a whole stream) or
 * 8-byte integers; offsets and outputs are 8-byte. */
static int get_buf(PyObject *obj, Buf *b, int writable, int allow4, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0)
        return -1;
    b->held = 1;
    if (b->view.itemsize != 8 && !(allow4 && b->view.itemsize == 4)) {
        PyErr_Format(PyExc_TypeError, "%s must hold %s integers", what, allow4 ? "4- or 8-byte" : "8-byte");
        return -1;
    }
    return 0;
}

static void release(Buf *b, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++)
        if (b[i].held)
            PyBuffer_Release(&b[i].view);
}

static int is_unsigned(const Buf *b)
{
    const char *f = b->view.format;
    while (f && (*f == '@' || *f == '=' || *f == '<' || *f == '>' || *f == '!'))
        f++;
    return f && (*f == 'I' || *f == 'L');
}

/* Items [start, start + len) of an id buffer as int64 (a uint32 code point or an int32 id
 * keeps its value). */
static void load_ids(const Buf *b, int64_t start, int64_t len, int64_t *dst)
{
    if (b->view.itemsize == 8) {
        memcpy(dst, (const int64_t *)b->view.buf + start, sizeof(int64_t) * len);
    } else if (is_unsigned(b)) {
        const uint32_t *src = (const uint32_t *)b->view.buf + start;
        for (int64_t i = 0; i < len; i++)
            dst[i] = (int64_t)src[i];
    } else {
        const int32_t *src = (const int32_t *)b->view.buf + start;
        for (int64_t i = 0; i < len; i++)
            dst[i] = (int64_t)src[i];
    }
}

/* Buffers of one call: per hypothesis stream (system) ids, offsets and both outputs; per
 * reference stream ids and offsets. */
typedef struct {
    Py_ssize_t nsys, nrefs, nseg;
    Buf *bufs;    /* 4 * nsys + 2 * nrefs */
    Py_ssize_t nbuf;
} Streams;

#define HYP(st, i) (&(st)->bufs[4 * (i)])
#define HOFF(st, i) ((const int64_t *)(st)->bufs[4 * (i) + 1].view.buf)
#define OUT_REF(st, i) ((int64_t *)(st)->bufs[4 * (i) + 2].view.buf)
#define OUT_MAX(st, i) ((int64_t *)(st)->bufs[4 * (i) + 3].view.buf)
#define REF(st, j) (&(st)->bufs[4 * (st)->nsys + 2 * (j)])
#define ROFF(st, j) ((const int64_t *)(st)->bufs[4 * (st)->nsys + 2 * (j) + 1].view.buf)

static int seq_item_buf(PyObject *seq, Py_ssize_t i, Buf *b, int writable, int allow4, const char *what)
{
    PyObject *o = PySequence_GetItem(seq, i);
    if (!o)
        return -1;
    int rc = get_buf(o, b, writable, allow4, what);
    Py_DECREF(o);
    return rc;
}

/* Longest stream segment; -1 (exception set) for offsets that are not a valid partition. */
static int64_t check_offsets(const Buf *ids, const Buf *off, Py_ssize_t nseg, const char *what)
{
    const int64_t *o = off->view.buf;
    int64_t longest = 0;
    if (off->view.len / 8 != nseg + 1 || o[0] != 0 || o[nseg] * ids->view.itemsize > ids->view.len) {
        PyErr_Format(PyExc_ValueError, "invalid %s offsets", what);
        return -1;
    }
    for (Py_ssize_t s = 0; s < nseg; s++) {
        if (o[s + 1] < o[s]) {
            PyErr_Format(PyExc_ValueError, "invalid %s offsets", what);
            return -1;
        }
        if (o[s + 1] - o[s] > longest)
            longest = o[s + 1] - o[s];
    }
    return longest;
}

/* Parses (hyps, hyp_offs, refs, ref_offs, max_order, out_per_refs, out_maxs), takes every
 * buffer, checks the offsets and output sizes and zeroes the outputs. Returns -1 with an
 * exception set on bad arguments; close_streams releases what was taken either way. */
static int open_streams(PyObject *args, Streams *st, int *max_order, int64_t *hlong, int64_t *rlong)
{
    PyObject *hyps_o, *hoffs_o, *refs_o, *roffs_o, *per_refs_o, *maxs_o;
    if (!PyArg_ParseTuple(args, "OOOOiOO", &hyps_o, &hoffs_o, &refs_o, &roffs_o, max_order,
                          &per_refs_o, &maxs_o))
        return -1;
    PyObject *seqs[6] = {hyps_o, hoffs_o, refs_o, roffs_o, per_refs_o, maxs_o};
    for (int i = 0; i < 6; i++) {
        if (!PySequence_Check(seqs[i])) {
            PyErr_SetString(PyExc_TypeError, "streams, offsets and outputs must be sequences");
            return -1;
        }
    }
    st->nsys = PySequence_Size(hyps_o);
    st->nrefs = PySequence_Size(refs_o);
    if (st->nsys < 1 || st->nrefs < 1 || *max_order < 1 || PySequence_Size(hoffs_o) != st->nsys ||
        PySequence_Size(per_refs_o) != st->nsys || PySequence_Size(maxs_o) != st->nsys ||
        PySequence_Size(roffs_o) != st->nrefs) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError,
                            "need >= 1 hypothesis stream with offsets and outputs, >= 1 reference "
                            "stream with offsets, max_order >= 1");
        return -1;
    }
    st->nbuf = 4 * st->nsys + 2 * st->nrefs;
    st->bufs = calloc(st->nbuf, sizeof(Buf));
    if (!st->bufs) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < st->nsys; i++) {
        if (seq_item_buf(hyps_o, i, HYP(st, i), 0, 1, "hyp") < 0 ||
            seq_item_buf(hoffs_o, i, &st->bufs[4 * i + 1], 0, 0, "hyp offsets") < 0 ||
            seq_item_buf(per_refs_o, i, &st->bufs[4 * i + 2], 1, 0, "out_per_ref") < 0 ||
            seq_item_buf(maxs_o, i, &st->bufs[4 * i + 3], 1, 0, "out_max") < 0)
            return -1;
    }
    for (Py_ssize_t j = 0; j < st->nrefs; j++) {
        if (seq_item_buf(refs_o, j, REF(st, j), 0, 1, "ref") < 0 ||
            seq_item_buf(roffs_o, j, &st->bufs[4 * st->nsys + 2 * j + 1], 0, 0, "ref offsets") < 0)
            return -1;
    }
    st->nseg = st->bufs[1].view.len / 8 - 1;
    if (st->nseg < 0) {
        PyErr_SetString(PyExc_ValueError, "invalid hypothesis offsets");
        return -1;
    }
    *hlong = *rlong = 0;
    for (Py_ssize_t i = 0; i < st->nsys; i++) {
        int64_t l = check_offsets(HYP(st, i), &st->bufs[4 * i + 1], st->nseg, "hypothesis");
        if (l < 0)
            return -1;
        *hlong = l > *hlong ? l : *hlong;
        if (st->bufs[4 * i + 2].view.len / 8 != st->nseg * st->nrefs * *max_order ||
            st->bufs[4 * i + 3].view.len / 8 != st->nseg * *max_order) {
            PyErr_SetString(PyExc_ValueError, "output arrays have the wrong size");
            return -1;
        }
    }
    for (Py_ssize_t j = 0; j < st->nrefs; j++) {
        int64_t l = check_offsets(REF(st, j), &st->bufs[4 * st->nsys + 2 * j + 1], st->nseg, "reference");
        if (l < 0)
            return -1;
        *rlong = l > *rlong ? l : *rlong;
    }
    for (Py_ssize_t i = 0; i < st->nsys; i++) {
        memset(OUT_REF(st, i), 0, sizeof(int64_t) * st->nseg * st->nrefs * *max_order);
        memset(OUT_MAX(st, i), 0, sizeof(int64_t) * st->nseg * *max_order);
    }
    return 0;
}

static void close_streams(Streams *st)
{
    if (st->bufs)
        release(st->bufs, st->nbuf);
    free(st->bufs);
}

/*
 * System by system: the table holds the hypothesis n-grams of the segment (the id of an
 * n-gram is the position of its first occurrence in the hypothesis), and each reference's
 * n-grams are looked up there; a reference prefix the hypothesis lacks (id -1) ends the
 * chain. Cheaper than the shared table below for one or two systems: the reference side
 * is never built in full.
 */
static PyObject *match_counts_per_system(PyObject *self, PyObject *args)
{
    Streams st = {0, 0, 0, NULL, 0};
    int max_order;
    int64_t hlong, rlong;
    PyObject *result = NULL;
    int64_t *tab_a = NULL, *tab_b = NULL, *tab_rep = NULL, *tab_hc = NULL, *tab_rc = NULL;
    int64_t *used = NULL, *hseg = NULL, *rseg = NULL, *hprev = NULL, *hnext = NULL, *rprev = NULL, *rnext = NULL;
    if (open_streams(args, &st, &max_order, &hlong, &rlong) < 0)
        goto done;
    const Py_ssize_t nrefs = st.nrefs, nseg = st.nseg;
    int64_t cap = 16;
    while (cap < 2 * hlong + 2)
        cap <<= 1;
    tab_a = malloc(sizeof(int64_t) * cap);
    tab_b = malloc(sizeof(int64_t) * cap);
    tab_rep = malloc(sizeof(int64_t) * cap);
    tab_hc = malloc(sizeof(int64_t) * cap);
    tab_rc = calloc((size_t)cap * nrefs, sizeof(int64_t));
    used = malloc(sizeof(int64_t) * cap);
    hseg = malloc(sizeof(int64_t) * (hlong + 1));
    rseg = malloc(sizeof(int64_t) * (rlong + 1) * nrefs);
    hprev = malloc(sizeof(int64_t) * (hlong + 1));
    hnext = malloc(sizeof(int64_t) * (hlong + 1));
    rprev = malloc(sizeof(int64_t) * (rlong + 1) * nrefs);
    rnext = malloc(sizeof(int64_t) * (rlong + 1) * nrefs);
    if (!tab_a || !tab_b || !tab_rep || !tab_hc || !tab_rc || !used || !hseg || !rseg || !hprev || !hnext ||
        !rprev || !rnext) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t e = 0; e < cap; e++)
        tab_rep[e] = -1;
    int64_t mask = cap - 1;

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < st.nsys; i++) {
        const int64_t *hoff = HOFF(&st, i);
        int64_t *out_ref = OUT_REF(&st, i), *out_max = OUT_MAX(&st, i);
        for (Py_ssize_t s = 0; s < nseg; s++) {
            int64_t hl = hoff[s + 1] - hoff[s];
            const int64_t *hyp = hseg;
            load_ids(HYP(&st, i), hoff[s], hl, hseg);
            /* order 1: every position extends the empty prefix (id -2) */
            for (int64_t p = 0; p < hl; p++)
                hprev[p] = -2;
            for (Py_ssize_t j = 0; j < nrefs; j++) {
                const int64_t *roff = ROFF(&st, j);
                int64_t rl = roff[s + 1] - roff[s];
                for (int64_t p = 0; p < rl; p++)
                    rprev[j * (rlong + 1) + p] = -2;
                load_ids(REF(&st, j), roff[s], rl, rseg + j * (rlong + 1));
            }
            for (int n = 1; n <= max_order && n <= hl; n++) {
                int64_t nused = 0;
                for (int64_t p = 0; p + n <= hl; p++) {
                    int64_t a = hprev[p], b = hyp[p + n - 1];
                    int64_t e = (int64_t)(pair_hash(a, b) & (uint64_t)mask);
                    while (tab_rep[e] >= 0 && (tab_a[e] != a || tab_b[e] != b))
                        e = (e + 1) & mask;
                    if (tab_rep[e] < 0) {
                        tab_rep[e] = p;
                        tab_a[e] = a;
                        tab_b[e] = b;
                        tab_hc[e] = 1;
                        used[nused++] = e;
                    } else {
                        tab_hc[e]++;
                    }
                    hnext[p] = tab_rep[e];
                }
                for (Py_ssize_t j = 0; j < nrefs; j++) {
                    const int64_t *ref = rseg + j * (rlong + 1);
                    const int64_t *roff = ROFF(&st, j);
                    int64_t rl = roff[s + 1] - roff[s];
                    int64_t *rp = rprev + j * (rlong + 1), *rn = rnext + j * (rlong + 1);
                    for (int64_t p = 0; p + n <= rl; p++) {
                        int64_t a = rp[p];
                        if (a == -1) {
                            rn[p] = -1;
                            continue;
                        }
                        int64_t b = ref[p + n - 1];
                        int64_t e = (int64_t)(pair_hash(a, b) & (uint64_t)mask);
                        while (tab_rep[e] >= 0 && (tab_a[e] != a || tab_b[e] != b))
                            e = (e + 1) & mask;
                        if (tab_rep[e] >= 0) {
                            tab_rc[e * nrefs + j]++;
                            rn[p] = tab_rep[e];
                        } else {
                            rn[p] = -1;
                        }
                    }
                }
                int64_t best = 0;
                for (int64_t u = 0; u < nused; u++) {
                    int64_t e = used[u];
                    int64_t hc = tab_hc[e], mx = 0;
                    for (Py_ssize_t j = 0; j < nrefs; j++) {
                        int64_t rc = tab_rc[e * nrefs + j];
                        out_ref[(s * nrefs + j) * max_order + (n - 1)] += hc < rc ? hc : rc;
                        if (rc > mx)
                            mx = rc;
                        tab_rc[e * nrefs + j] = 0;
                    }
                    best += hc < mx ? hc : mx;
                    tab_rep[e] = -1;
                }
                out_max[s * max_order + (n - 1)] = best;
                int64_t *tmp = hprev;
                hprev = hnext;
                hnext = tmp;
                tmp = rprev;
                rprev = rnext;
                rnext = tmp;
            }
        }
    }
    Py_END_ALLOW_THREADS

    result = Py_None;
    Py_INCREF(result);
done:
    FREE_ALL(tab_a, tab_b, tab_rep, tab_hc, tab_rc, used, hseg, rseg, hprev, hnext, rprev, rnext);
    close_streams(&st);
    return result;
}

static PyObject *match_counts_shared(PyObject *self, PyObject *args)
{
    Streams st = {0, 0, 0, NULL, 0};
    int max_order;
    int64_t hlong, rlong, rsum;
    PyObject *result = NULL;
    Slot *tab = NULL;
    int64_t *slots_used = NULL, *rc = NULL;
    int64_t *hc = NULL, *touched = NULL, *hseg = NULL, *rseg = NULL;
    int64_t *hprev = NULL, *hnext = NULL, *rprev = NULL, *rnext = NULL;
    if (open_streams(args, &st, &max_order, &hlong, &rlong) < 0)
        goto done;
    /* distinct reference n-grams of one segment: at most max_order * (sum of ref lengths) */
    rsum = rlong * st.nrefs;
    int64_t maxid = (int64_t)max_order * rsum + 1;
    int64_t cap = 16;
    while (cap < 2 * maxid)
        cap <<= 1;
    if (maxid >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a reference segment is too long (2**31 n-grams)");
        goto done;
    }
    tab = malloc(sizeof(Slot) * cap);
    slots_used = malloc(sizeof(int64_t) * maxid);
    rc = malloc(sizeof(int64_t) * maxid * st.nrefs);
    hc = calloc((size_t)maxid, sizeof(int64_t));
    touched = malloc(sizeof(int64_t) * (hlong + 1));
    hseg = malloc(sizeof(int64_t) * (hlong + 1));
    rseg = malloc(sizeof(int64_t) * (rlong + 1) * st.nrefs);
    hprev = malloc(sizeof(int64_t) * (hlong + 1));
    hnext = malloc(sizeof(int64_t) * (hlong + 1));
    rprev = malloc(sizeof(int64_t) * (rlong + 1) * st.nrefs);
    rnext = malloc(sizeof(int64_t) * (rlong + 1) * st.nrefs);
    if (!tab || !slots_used || !rc || !hc || !touched || !hseg || !rseg ||
        !hprev || !hnext || !rprev || !rnext) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t e = 0; e < cap; e++)
        tab[e].id = -1;
    const Py_ssize_t nrefs = st.nrefs, rstride = rlong + 1;

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < st.nseg; s++) {
        /* 1. every reference n-gram of the segment gets an id; rc counts it per reference */
        int64_t nids = 0, seg_refs = 0;
        for (Py_ssize_t j = 0; j < nrefs; j++) {
            const int64_t *roff = ROFF(&st, j);
            load_ids(REF(&st, j), roff[s], roff[s + 1] - roff[s], rseg + j * rstride);
            seg_refs += roff[s + 1] - roff[s];
        }
        /* the table is sized to this segment, so that a short segment's probes stay in cache */
        uint64_t seg_cap = 16;
        while (seg_cap < (uint64_t)(2 * max_order * seg_refs + 2))
            seg_cap <<= 1;
        const uint64_t mask = seg_cap - 1;
        for (int n = 1; n <= max_order; n++) {
            for (Py_ssize_t j = 0; j < nrefs; j++) {
                const int64_t *roff = ROFF(&st, j), *ref = rseg + j * rstride;
                int64_t rl = roff[s + 1] - roff[s];
                int64_t *rp = rprev + j * rstride, *rn = rnext + j * rstride;
                for (int64_t p = 0; p + n <= rl; p++) {
                    int64_t a = n == 1 ? -2 : rp[p], b = ref[p + n - 1];
                    uint64_t e = pair_hash(a, b) & mask;
                    while (tab[e].id >= 0 && (tab[e].a != a || tab[e].b != b))
                        e = (e + 1) & mask;
                    int64_t id = tab[e].id;
                    if (id < 0) {
                        id = nids++;
                        tab[e].id = (int32_t)id;
                        tab[e].a = (int32_t)a;
                        tab[e].b = b;
                        slots_used[id] = (int64_t)e;
                        memset(rc + id * nrefs, 0, sizeof(int64_t) * nrefs);
                    }
                    rc[id * nrefs + j]++;
                    rn[p] = id;
                }
            }
            int64_t *tmp = rprev;
            rprev = rnext;
            rnext = tmp;
        }
        /* 2. each system's hypothesis n-grams are looked up in that table */
        for (Py_ssize_t i = 0; i < st.nsys; i++) {
            const int64_t *hoff = HOFF(&st, i);
            int64_t hl = hoff[s + 1] - hoff[s];
            int64_t *out_ref = OUT_REF(&st, i), *out_max = OUT_MAX(&st, i);
            load_ids(HYP(&st, i), hoff[s], hl, hseg);
            for (int n = 1; n <= max_order && n <= hl; n++) {
                int64_t ntouched = 0;
                for (int64_t p = 0; p + n <= hl; p++) {
                    int64_t a = n == 1 ? -2 : hprev[p], b = hseg[p + n - 1];
                    int64_t id = -1;
                    if (a != -1 && nids) {
                        uint64_t e = pair_hash(a, b) & mask;
                        while (tab[e].id >= 0 && (tab[e].a != a || tab[e].b != b))
                            e = (e + 1) & mask;
                        id = tab[e].id;
                        if (id >= 0 && hc[id]++ == 0)
                            touched[ntouched++] = id;
                    }
                    hnext[p] = id;
                }
                int64_t best = 0;
                for (int64_t u = 0; u < ntouched; u++) {
                    int64_t id = touched[u], c = hc[id], mx = 0;
                    for (Py_ssize_t j = 0; j < nrefs; j++) {
                        int64_t r = rc[id * nrefs + j];
                        out_ref[(s * nrefs + j) * max_order + (n - 1)] += c < r ? c : r;
                        if (r > mx)
                            mx = r;
                    }
                    best += c < mx ? c : mx;
                    hc[id] = 0;
                }
                out_max[s * max_order + (n - 1)] = best;
                int64_t *tmp = hprev;
                hprev = hnext;
                hnext = tmp;
            }
        }
        /* 3. empty the table for the next segment */
        for (int64_t id = 0; id < nids; id++)
            tab[slots_used[id]].id = -1;
    }
    Py_END_ALLOW_THREADS

    result = Py_None;
    Py_INCREF(result);
done:
    FREE_ALL(tab, slots_used, rc, hc, touched, hseg, rseg, hprev, hnext, rprev, rnext);
    close_streams(&st);
    return result;
}

static PyMethodDef methods[] = {
    {"mteval_split", mteval_split, METH_VARARGS,
     "mteval_split(line, cjk=False): mteval-v13a rules 1-4 (CJK characters padded first "
     "if cjk), then str.split()."},
    {"tercom_tokens", tercom_tokens, METH_VARARGS,
     "tercom_tokens(lines, normalized, no_punct, asian_support, case_sensitive) -> "
     "list[list[str]]: the tokens of every right-stripped line under Tercom's rules."},
    {"tercom_encode", tercom_encode, METH_VARARGS,
     "tercom_encode(lines, vocab, normalized, no_punct, asian_support, case_sensitive, twice) "
     "-> (ids bytes, offsets bytes): tercom_tokens' tokens of every line (twice: normalised "
     "again after joining them by spaces) as int64 ids from the Vocab (new ones added)."},
    {"encode_lines", encode_lines, METH_VARARGS,
     "encode_lines(lines, vocab, zh, add=True) -> (ids bytes, offsets bytes): 13a (or zh) "
     "tokens of every line as int64 ids from the Vocab (a new token gets the next id, or -1 "
     "when add is false)."},
    {"encode_words", encode_words, METH_VARARGS,
     "encode_words(lines, vocab, any_space) -> (ids bytes, offsets bytes): jiwer's default "
     "words of every line (with any_space, ASCII whitespace as spaces) as int64 ids from the "
     "Vocab (a new word gets the next id)."},
    {"pack_chars", pack_chars, METH_VARARGS,
     "pack_chars(texts, keep_whitespace) -> (code points bytes, offsets bytes): the code "
     "points (uint32) of every text, whitespace dropped unless kept, with int64 offsets."},
    {"match_counts", match_counts_per_system, METH_VARARGS,
     "match_counts(hyps, hyp_offs, refs, ref_offs, max_order, out_per_refs, out_maxs): "
     "clipped n-gram match counts per system, segment, reference and order (a table of "
     "each system's hypothesis n-grams)."},
    {"match_counts_shared", match_counts_shared, METH_VARARGS,
     "match_counts_shared(hyps, hyp_offs, refs, ref_offs, max_order, out_per_refs, out_maxs): "
     "the same, each segment's reference n-grams counted once for all systems."},
    {NULL, NULL, 0, NULL},
};

KERNEL_MODULE(_mtkernel, "Compiled inner loops of BLEU and chrF.")
{
    for (Py_UCS4 c = 0; c < 0x80; c++)
        ASCII_MARKS[c] = (unsigned char)ascii_marks(c);
    if (PyType_Ready(&VocabType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&VocabType);
    if (PyModule_AddObject(m, "Vocab", (PyObject *)&VocabType) < 0) {
        Py_DECREF(&VocabType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
