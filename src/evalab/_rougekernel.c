/*
 * evalab._rougekernel: the per-pair loops of ROUGE in C (optional; the pure-Python
 * fallbacks in evalab.metrics._rouge_pairs give identical numbers).
 *
 * Every function takes the token ids (int32) of the segments of two sides, a and b, each
 * with nseg + 1 segment offsets (int64), and writes one int64 per segment pair into out.
 *
 * lcs_lengths(a_ids, a_offs, b_ids, b_offs, vocab_size, out)
 *     Length of the longest common subsequence of a[s] and b[s]. Common prefix and suffix
 *     are cut first (they belong to some LCS); the rest uses Hyyro's bit-parallel row
 *     update V' = (V + (V & M)) | (V & ~M) with the shorter side as the bit vector, taken
 *     one block of 256 columns at a time over all rows of the longer side (the carry of
 *     each row is kept for the next block), so only the match masks of one block are
 *     live and the work is |a| * ceil(|b| / 64) word steps with O(vocab) memory.
 *
 * ngram_overlaps(a_ids, a_offs, b_ids, b_offs, n, out)
 *     Clipped n-gram overlap (n = 1 or 2): sum over n-grams g of min(c_a(g), c_b(g)).
 *     Both n-gram lists are sorted and merged.
 *
 * ascii_tokens(texts) -> (distinct, ids, offsets, emptied)
 *     rouge-score's default tokenizer, re.findall("[a-z0-9]+", text.lower()), of every
 *     text of a list, in one pass over the characters: ASCII letters are lowercased,
 *     ASCII letters and digits make up the tokens and every other character separates
 *     them, except the two whose lowercase holds an ASCII letter (U+0130 lowers to "i"
 *     and a combining dot, so it ends a token with "i"; the Kelvin sign U+212A lowers to
 *     "k"). Returns the distinct tokens (a list of str, in order of first sight), every
 *     token of every text as an int32 index into that list (bytes), nseg + 1 int64 token
 *     offsets (bytes), and the number of texts that have no token but are not blank (a
 *     character that str.strip() would keep).
 */
#define PY_SSIZE_T_CLEAN
#include "_kernels.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer a_ids, a_offs, b_ids, b_offs, out;
    const int32_t *a, *b;
    const int64_t *ao, *bo;
    int64_t *res;
    Py_ssize_t nseg;
} Pairs;

static void release_pairs(Pairs *p)
{
    Py_buffer *bufs[] = {&p->a_ids, &p->a_offs, &p->b_ids, &p->b_offs, &p->out};
    for (int i = 0; i < 5; i++)
        if (bufs[i]->obj)
            PyBuffer_Release(bufs[i]);
}

static int check_offsets(const int64_t *offs, Py_ssize_t nseg, Py_ssize_t nids, const char *side)
{
    if (offs[0] != 0 || offs[nseg] != nids) {
        PyErr_Format(PyExc_ValueError, "%s offsets must run from 0 to the number of ids", side);
        return -1;
    }
    for (Py_ssize_t s = 0; s < nseg; s++)
        if (offs[s + 1] < offs[s]) {
            PyErr_Format(PyExc_ValueError, "%s offsets must not decrease", side);
            return -1;
        }
    return 0;
}

/* Checks the buffers' sizes and fills p; on failure releases them and sets the error. */
static int open_pairs(Pairs *p)
{
    Py_ssize_t na = p->a_ids.len / 4, nb = p->b_ids.len / 4;
    p->nseg = p->out.len / 8;
    if (p->a_ids.len % 4 || p->b_ids.len % 4 || p->out.len % 8 ||
        p->a_offs.len != (p->nseg + 1) * 8 || p->b_offs.len != (p->nseg + 1) * 8) {
        PyErr_SetString(PyExc_ValueError,
                        "expected int32 ids, nseg + 1 int64 offsets per side and nseg int64 outputs");
        release_pairs(p);
        return -1;
    }
    p->a = p->a_ids.buf;
    p->b = p->b_ids.buf;
    p->ao = p->a_offs.buf;
    p->bo = p->b_offs.buf;
    p->res = p->out.buf;
    if (check_offsets(p->ao, p->nseg, na, "a") < 0 || check_offsets(p->bo, p->nseg, nb, "b") < 0) {
        release_pairs(p);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ LCS */

/* Columns per block: LCS_WORDS 64-bit words, updated together for each row so that the
 * per-row loads (token, masks, carry) are shared and the words' chains overlap. */
#define LCS_WORDS 4
#define LCS_BLOCK (64 * LCS_WORDS)

/* LCS of x (length n, the rows) and y (length m, the bit vector), both without a common
 * prefix or suffix. masks has vocab_size * LCS_WORDS zeroed entries (left zeroed); carry
 * has room for n bytes. */
static int64_t lcs_core(const int32_t *x, Py_ssize_t n, const int32_t *y, Py_ssize_t m,
                        uint64_t *masks, unsigned char *carry)
{
    int64_t zeros = 0;
    memset(carry, 0, (size_t)n);
    for (Py_ssize_t base = 0; base < m; base += LCS_BLOCK) {
        Py_ssize_t width = m - base < LCS_BLOCK ? m - base : LCS_BLOCK;
        uint64_t v[LCS_WORDS], valid[LCS_WORDS];
        for (int w = 0; w < LCS_WORDS; w++) {
            Py_ssize_t bits = width - 64 * w;
            valid[w] = bits >= 64 ? ~(uint64_t)0 : bits <= 0 ? 0 : (((uint64_t)1 << bits) - 1);
            v[w] = valid[w];
        }
        for (Py_ssize_t k = 0; k < width; k++)
            masks[(size_t)y[base + k] * LCS_WORDS + k / 64] |= (uint64_t)1 << (k % 64);
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t *mk = masks + (size_t)x[i] * LCS_WORDS;
            uint64_t c = carry[i];
            for (int w = 0; w < LCS_WORDS; w++) {
                uint64_t u = v[w] & mk[w];
                uint64_t sum = v[w] + u;
                uint64_t out = sum < u;
                sum += c;
                out |= sum < c;
                v[w] = (sum | (v[w] & ~u)) & valid[w];
                c = out;
            }
            carry[i] = (unsigned char)c;
        }
        for (Py_ssize_t k = 0; k < width; k++)
            masks[(size_t)y[base + k] * LCS_WORDS + k / 64] = 0;
        zeros += width;
        for (int w = 0; w < LCS_WORDS; w++)
            zeros -= __builtin_popcountll(v[w]);
    }
    return zeros;
}

/* The longest segment of either side (at least 1: the size of a per-segment scratch). */
static Py_ssize_t longest_segment(const Pairs *p)
{
    Py_ssize_t longest = 1;
    for (Py_ssize_t s = 0; s < p->nseg; s++) {
        Py_ssize_t la = p->ao[s + 1] - p->ao[s], lb = p->bo[s + 1] - p->bo[s];
        longest = la > longest ? la : longest;
        longest = lb > longest ? lb : longest;
    }
    return longest;
}

/* The end of a per-pair loop: the scratch a and b freed, p released; None, or MemoryError
 * when allocating the scratch failed. */
static PyObject *finish_pairs(Pairs *p, void *a, void *b, int failed)
{
    FREE_ALL(a, b);
    release_pairs(p);
    if (failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *lcs_lengths(PyObject *self, PyObject *args)
{
    Pairs p;
    memset(&p, 0, sizeof p);
    Py_ssize_t vocab;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*", &p.a_ids, &p.a_offs, &p.b_ids, &p.b_offs, &vocab,
                          &p.out))
        return NULL;
    if (open_pairs(&p) < 0)
        return NULL;
    Py_ssize_t longest = longest_segment(&p);
    for (Py_ssize_t i = 0; i < p.a_ids.len / 4; i++)
        if (p.a[i] < 0 || p.a[i] >= vocab)
            goto bad_id;
    for (Py_ssize_t i = 0; i < p.b_ids.len / 4; i++)
        if (p.b[i] < 0 || p.b[i] >= vocab)
            goto bad_id;
    uint64_t *masks = calloc(vocab > 0 ? (size_t)vocab * LCS_WORDS : LCS_WORDS, sizeof *masks);
    unsigned char *carry = malloc((size_t)longest);
    if (!masks || !carry)
        return finish_pairs(&p, masks, carry, 1);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < p.nseg; s++) {
        const int32_t *x = p.a + p.ao[s], *y = p.b + p.bo[s];
        Py_ssize_t n = p.ao[s + 1] - p.ao[s], m = p.bo[s + 1] - p.bo[s];
        int64_t common = 0;
        while (n && m && x[0] == y[0]) {
            x++, y++, n--, m--, common++;
        }
        while (n && m && x[n - 1] == y[m - 1]) {
            n--, m--, common++;
        }
        if (n && m)
            common += m <= n ? lcs_core(x, n, y, m, masks, carry) : lcs_core(y, m, x, n, masks, carry);
        p.res[s] = common;
    }
    Py_END_ALLOW_THREADS
    return finish_pairs(&p, masks, carry, 0);
bad_id:
    release_pairs(&p);
    PyErr_SetString(PyExc_ValueError, "token ids must lie in [0, vocab_size)");
    return NULL;
}

/* ------------------------------------------------------------ n-gram overlaps */

static int cmp_u64(const void *l, const void *r)
{
    uint64_t a = *(const uint64_t *)l, b = *(const uint64_t *)r;
    return (a > b) - (a < b);
}

/* The n-grams (n = 1 or 2) of ids[0:len] as sorted keys; returns how many. */
static Py_ssize_t sorted_grams(const int32_t *ids, Py_ssize_t len, int n, uint64_t *keys)
{
    Py_ssize_t count = len - n + 1;
    if (count <= 0)
        return 0;
    for (Py_ssize_t i = 0; i < count; i++)
        keys[i] = n == 1 ? (uint32_t)ids[i] : ((uint64_t)(uint32_t)ids[i] << 32) | (uint32_t)ids[i + 1];
    qsort(keys, (size_t)count, sizeof *keys, cmp_u64);
    return count;
}

static PyObject *ngram_overlaps(PyObject *self, PyObject *args)
{
    Pairs p;
    memset(&p, 0, sizeof p);
    int n;
    if (!PyArg_ParseTuple(args, "y*y*y*y*iw*", &p.a_ids, &p.a_offs, &p.b_ids, &p.b_offs, &n, &p.out))
        return NULL;
    if (open_pairs(&p) < 0)
        return NULL;
    if (n != 1 && n != 2) {
        release_pairs(&p);
        PyErr_SetString(PyExc_ValueError, "n must be 1 or 2");
        return NULL;
    }
    Py_ssize_t longest = longest_segment(&p);
    uint64_t *ka = malloc((size_t)longest * sizeof *ka), *kb = malloc((size_t)longest * sizeof *kb);
    if (!ka || !kb)
        return finish_pairs(&p, ka, kb, 1);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < p.nseg; s++) {
        Py_ssize_t na = sorted_grams(p.a + p.ao[s], p.ao[s + 1] - p.ao[s], n, ka);
        Py_ssize_t nb = sorted_grams(p.b + p.bo[s], p.bo[s + 1] - p.bo[s], n, kb);
        int64_t overlap = 0;
        Py_ssize_t i = 0, j = 0;
        while (i < na && j < nb) {
            if (ka[i] < kb[j])
                i++;
            else if (kb[j] < ka[i])
                j++;
            else
                overlap++, i++, j++; /* each matched pair of occurrences counts once: min */
        }
        p.res[s] = overlap;
    }
    Py_END_ALLOW_THREADS
    return finish_pairs(&p, ka, kb, 0);
}

/* ------------------------------------------------------------- tokenization */

/* A-Z lowered, a-z and 0-9 kept, every other ASCII character 0 (a separator). */
static char ascii_token_char[128];

static void init_ascii_table(void)
{
    for (int c = 0; c < 128; c++)
        ascii_token_char[c] = ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') ? (char)c
                              : ('A' <= c && c <= 'Z')                         ? (char)(c + 32)
                                                                               : 0;
}

/* The distinct tokens of one call: a list of str, and an open-addressing table of their
 * indices (-1: free) with the hashes of their bytes, so each distinct token is made once. */
typedef struct {
    PyObject *distinct;
    int32_t *slot;
    uint64_t *hash;
    size_t mask;
} Distinct;

static uint64_t bytes_hash(const char *buf, Py_ssize_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
    return h;
}

static int distinct_grow(Distinct *d)
{
    size_t size = (d->mask + 1) * 2;
    int32_t *slot = malloc(size * sizeof *slot);
    uint64_t *hash = malloc(size * sizeof *hash);
    if (!slot || !hash) {
        FREE_ALL(slot, hash);
        PyErr_NoMemory();
        return -1;
    }
    memset(slot, 0xff, size * sizeof *slot);
    for (size_t i = 0; i <= d->mask; i++)
        if (d->slot[i] >= 0) {
            size_t j = d->hash[i] & (size - 1);
            while (slot[j] >= 0)
                j = (j + 1) & (size - 1);
            slot[j] = d->slot[i];
            hash[j] = d->hash[i];
        }
    FREE_ALL(d->slot, d->hash);
    d->slot = slot, d->hash = hash, d->mask = size - 1;
    return 0;
}

/* The index of the token buf[0:len] among the distinct tokens (added if new), or -1. */
static int32_t distinct_index(Distinct *d, const char *buf, Py_ssize_t len)
{
    uint64_t h = bytes_hash(buf, len);
    size_t j = h & d->mask;
    for (; d->slot[j] >= 0; j = (j + 1) & d->mask) {
        if (d->hash[j] != h)
            continue;
        PyObject *t = PyList_GET_ITEM(d->distinct, d->slot[j]);
        if (PyUnicode_GET_LENGTH(t) == len && !memcmp(PyUnicode_DATA(t), buf, (size_t)len))
            return d->slot[j];
    }
    Py_ssize_t index = PyList_GET_SIZE(d->distinct);
    if (index >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many distinct tokens");
        return -1;
    }
    PyObject *t = PyUnicode_New(len, 127);
    if (!t)
        return -1;
    memcpy(PyUnicode_DATA(t), buf, (size_t)len);
    int rc = PyList_Append(d->distinct, t);
    Py_DECREF(t);
    if (rc < 0)
        return -1;
    d->slot[j] = (int32_t)index, d->hash[j] = h;
    if ((size_t)index * 2 > d->mask && distinct_grow(d) < 0)
        return -1;
    return (int32_t)index;
}

/* A growing int32 array. */
typedef struct {
    int32_t *ids;
    size_t used, size;
} Ids;

static int ids_push(Ids *v, int32_t id)
{
    if (v->used == v->size) {
        size_t size = v->size ? v->size * 2 : 1024;
        int32_t *ids = realloc(v->ids, size * sizeof *ids);
        if (!ids) {
            PyErr_NoMemory();
            return -1;
        }
        v->ids = ids, v->size = size;
    }
    v->ids[v->used++] = id;
    return 0;
}

static int push_token(Distinct *d, Ids *out, const char *buf, Py_ssize_t len)
{
    int32_t id = distinct_index(d, buf, len);
    return id < 0 ? -1 : ids_push(out, id);
}

/* Whether c separates tokens although it is not ASCII: all but U+0130 and U+212A. */
#define OTHER_SEPARATOR(c) ((c) >= 128 && (c) != 0x212A && (c) != 0x130)

/* The tokens of one text (characters of one width, CHAR) pushed to out; returns 1 if the
 * text is blank (only characters str.strip() removes), 0 if not, -1 on error. A run of
 * separators outside ASCII (most of a Cyrillic or Chinese text) is skipped in a tight loop
 * once the text is known not to be blank. */
#define TEXT_TOKENS(NAME, CHAR)                                                                  \
    static int NAME(const CHAR *text, Py_ssize_t len, char *buf, Distinct *d, Ids *out)         \
    {                                                                                            \
        int blank = 1;                                                                           \
        Py_ssize_t used = 0;                                                                     \
        for (Py_ssize_t i = 0; i < len; i++) {                                                   \
            Py_UCS4 c = text[i];                                                                 \
            if (OTHER_SEPARATOR(c)) {                                                            \
                if (blank && !Py_UNICODE_ISSPACE(c))                                             \
                    blank = 0;                                                                   \
                if (used && push_token(d, out, buf, used) < 0)                                   \
                    return -1;                                                                   \
                used = 0;                                                                        \
                if (!blank)                                                                      \
                    while (i + 1 < len && OTHER_SEPARATOR(text[i + 1]))                          \
                        i++;                                                                     \
                continue;                                                                        \
            }                                                                                    \
            char ch = c < 128 ? ascii_token_char[c] : c == 0x212A ? 'k' : 'i';                   \
            if (ch) {                                                                            \
                blank = 0;                                                                       \
                buf[used++] = ch;                                                                \
                if (c != 0x130)                                                                  \
                    continue;                                                                    \
            } else if (blank && !Py_UNICODE_ISSPACE(c))                                          \
                blank = 0;                                                                       \
            if (used && push_token(d, out, buf, used) < 0)                                       \
                return -1;                                                                       \
            used = 0;                                                                            \
        }                                                                                        \
        if (used && push_token(d, out, buf, used) < 0)                                           \
            return -1;                                                                           \
        return blank;                                                                            \
    }
TEXT_TOKENS(tokens_ucs1, Py_UCS1)
TEXT_TOKENS(tokens_ucs2, Py_UCS2)
TEXT_TOKENS(tokens_ucs4, Py_UCS4)

static int text_tokens(PyObject *text, char *buf, Distinct *d, Ids *out)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return tokens_ucs1(PyUnicode_1BYTE_DATA(text), len, buf, d, out);
    case PyUnicode_2BYTE_KIND:
        return tokens_ucs2(PyUnicode_2BYTE_DATA(text), len, buf, d, out);
    default:
        return tokens_ucs4(PyUnicode_4BYTE_DATA(text), len, buf, d, out);
    }
}

static PyObject *ascii_tokens(PyObject *self, PyObject *args)
{
    PyObject *texts, *offsets = NULL, *ids = NULL;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &texts))
        return NULL;
    Py_ssize_t nseg = PyList_GET_SIZE(texts), longest = 1, emptied = 0;
    for (Py_ssize_t s = 0; s < nseg; s++) {
        PyObject *text = PyList_GET_ITEM(texts, s);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "text %zd is not a str", s);
            return NULL;
        }
        longest = PyUnicode_GET_LENGTH(text) > longest ? PyUnicode_GET_LENGTH(text) : longest;
    }
    Distinct d = {PyList_New(0), malloc(1024 * sizeof(int32_t)), malloc(1024 * sizeof(uint64_t)), 1023};
    Ids out = {NULL, 0, 0};
    char *buf = malloc((size_t)longest);
    offsets = PyBytes_FromStringAndSize(NULL, (nseg + 1) * 8);
    if (!d.distinct || !d.slot || !d.hash || !buf || !offsets) {
        PyErr_NoMemory();
        goto done;
    }
    memset(d.slot, 0xff, 1024 * sizeof(int32_t));
    int64_t *offs = (int64_t *)PyBytes_AS_STRING(offsets);
    offs[0] = 0;
    for (Py_ssize_t s = 0; s < nseg; s++) {
        int blank = text_tokens(PyList_GET_ITEM(texts, s), buf, &d, &out);
        if (blank < 0)
            goto done;
        offs[s + 1] = (int64_t)out.used;
        emptied += offs[s + 1] == offs[s] && !blank;
    }
    ids = PyBytes_FromStringAndSize((const char *)out.ids, (Py_ssize_t)(out.used * sizeof(int32_t)));
done:
    FREE_ALL(d.slot, d.hash, out.ids, buf);
    PyObject *result = ids ? Py_BuildValue("OOOn", d.distinct, ids, offsets, emptied) : NULL;
    Py_XDECREF(d.distinct);
    Py_XDECREF(ids);
    Py_XDECREF(offsets);
    return result;
}

static PyMethodDef methods[] = {
    {"lcs_lengths", lcs_lengths, METH_VARARGS,
     "lcs_lengths(a_ids, a_offs, b_ids, b_offs, vocab_size, out): LCS length of every "
     "segment pair (bit-parallel, 64 columns per word)."},
    {"ngram_overlaps", ngram_overlaps, METH_VARARGS,
     "ngram_overlaps(a_ids, a_offs, b_ids, b_offs, n, out): clipped n-gram overlap "
     "(n = 1 or 2) of every segment pair."},
    {"ascii_tokens", ascii_tokens, METH_VARARGS,
     "ascii_tokens(texts): rouge-score's default tokens of every text: the distinct tokens, "
     "int32 indices into them (bytes), nseg + 1 int64 offsets (bytes) and the number of "
     "non-blank texts without a token."},
    {NULL, NULL, 0, NULL},
};

KERNEL_MODULE(_rougekernel, "Compiled per-pair loops of ROUGE.")
{
    init_ascii_table();
    return PyModule_Create(&module);
}
