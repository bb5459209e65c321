/*
 * evalab._mtkernel: the two inner loops of BLEU/chrF in C (optional; pure-Python
 * fallbacks with identical results live in evalab.text.mt and evalab.metrics._ngrams).
 *
 * mteval_split(line, cjk=False) -> list[str]
 *     Rules 1-4 of mteval-v13a (as sacrebleu's TokenizerRegexp), then str.split(); with
 *     cjk, every CJK character is padded with spaces first (sacrebleu's TokenizerZh).
 *     Every rule is a left-to-right scan over non-overlapping two-character windows,
 *     which is exactly what re.sub does with these fixed-width patterns.
 *
 * encode_lines(lines, vocab, zh) -> (bytes, bytes)
 *     The whole Tokenizer13a (zh=False: unescaping and padding, then the rules) or
 *     TokenizerZh (zh=True: strip, CJK padding, the rules) of every line, each token
 *     mapped to an int64 id through the dict vocab (a new token gets id len(vocab)).
 *     Returns the ids and the nlines + 1 segment offsets as native int64 bytes.
 *
 * match_counts(hyp, hyp_off, refs, ref_offs, max_order, out_per_ref, out_max)
 *     Token ids (int64) of the hypotheses and of each reference stream, with segment
 *     offsets (int64, nseg + 1). For every segment s and order n (1..max_order):
 *       out_per_ref[s, j, n-1] = sum over hyp n-grams g of min(c_hyp(g), c_ref_j(g))
 *       out_max[s, n-1]        = sum over hyp n-grams g of min(c_hyp(g), max_j c_ref_j(g))
 *     (chrF picks the best reference per segment; BLEU clips by the maximum count in any
 *     single reference.) n-grams are compared exactly; the hash only chooses the slot.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tokenizer */

static int is_pad(Py_UCS4 c)
{
    /* [{-~[-` -&(-+:-@/] */
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static int is_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }
static int is_pc(Py_UCS4 c) { return c == '.' || c == ','; }

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

/* Working buffers; each rule at most triples (rule 1) or doubles (rules 2-4) the text. */
typedef struct {
    Py_UCS4 *a, *b;
    Py_ssize_t cap;
} Work;

static int work_load(Work *w, PyObject *str, Py_ssize_t *n)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(str);
    Py_ssize_t need = 24 * (len + 2) + 8;
    if (need > w->cap) {
        Py_UCS4 *na = PyMem_Realloc(w->a, sizeof(Py_UCS4) * need);
        if (!na) {
            PyErr_NoMemory();
            return -1;
        }
        w->a = na;
        Py_UCS4 *nb = PyMem_Realloc(w->b, sizeof(Py_UCS4) * need);
        if (!nb) {
            PyErr_NoMemory();
            return -1;
        }
        w->b = nb;
        w->cap = need;
    }
    int kind = PyUnicode_KIND(str);
    const void *data = PyUnicode_DATA(str);
    for (Py_ssize_t i = 0; i < len; i++)
        w->b[i] = PyUnicode_READ(kind, data, i);
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

/* Tokenizer13a's steps before the rules, in b: drop <skipped> and "-\n", newlines to
 * spaces, unescape four entities (in sacrebleu's order), pad with one space each side. */
static Py_ssize_t prepare_13a(Work *w, Py_ssize_t n)
{
    Py_UCS4 *b = w->b;
    int lt = 0, nl = 0, amp = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        lt |= b[i] == '<';
        nl |= b[i] == '\n';
        amp |= b[i] == '&';
    }
    /* a pass whose pattern cannot occur changes nothing: skip it */
    if (lt)
        n = replace_pass(b, n, "<skipped>", 0);
    if (nl) {
        n = replace_pass(b, n, "-\n", 0);
        n = replace_pass(b, n, "\n", ' ');
    }
    if (amp) {
        n = replace_pass(b, n, "&quot;", '"');
        n = replace_pass(b, n, "&amp;", '&');
        n = replace_pass(b, n, "&lt;", '<');
        n = replace_pass(b, n, "&gt;", '>');
    }
    memmove(b + 1, b, sizeof(Py_UCS4) * n);
    b[0] = ' ';
    b[n + 1] = ' ';
    return n + 2;
}

/* str.strip() (TokenizerZh strips the line first) */
static Py_ssize_t strip_ws(Py_UCS4 *b, Py_ssize_t n)
{
    Py_ssize_t s = 0, e = n;
    while (s < e && Py_UNICODE_ISSPACE(b[s]))
        s++;
    while (e > s && Py_UNICODE_ISSPACE(b[e - 1]))
        e--;
    memmove(b, b + s, sizeof(Py_UCS4) * (e - s));
    return e - s;
}

/* Rules 1-4 of mteval-v13a on b[0..n); the result is left in b; returns its length. */
static Py_ssize_t run_rules(Work *w, Py_ssize_t n, int cjk)
{
    Py_UCS4 *a = w->a, *b = w->b;
    Py_ssize_t m = 0, k = 0, i;
    /* rule 1: pad ASCII punctuation and symbols (and, for zh, CJK characters) */
    for (i = 0; i < n; i++) {
        Py_UCS4 c = b[i];
        if (is_pad(c) || (cjk && is_zh(c))) {
            a[m++] = ' ';
            a[m++] = c;
            a[m++] = ' ';
        } else {
            a[m++] = c;
        }
    }
    /* rule 2: ([^0-9])([.,]) -> "\1 \2 " */
    for (i = 0; i < m;) {
        if (i + 1 < m && !is_digit(a[i]) && is_pc(a[i + 1])) {
            b[k++] = a[i];
            b[k++] = ' ';
            b[k++] = a[i + 1];
            b[k++] = ' ';
            i += 2;
        } else {
            b[k++] = a[i++];
        }
    }
    /* rule 3: ([.,])([^0-9]) -> " \1 \2" */
    m = 0;
    for (i = 0; i < k;) {
        if (i + 1 < k && is_pc(b[i]) && !is_digit(b[i + 1])) {
            a[m++] = ' ';
            a[m++] = b[i];
            a[m++] = ' ';
            a[m++] = b[i + 1];
            i += 2;
        } else {
            a[m++] = b[i++];
        }
    }
    /* rule 4: ([0-9])(-) -> "\1 \2 " */
    k = 0;
    for (i = 0; i < m;) {
        if (i + 1 < m && is_digit(a[i]) && a[i + 1] == '-') {
            b[k++] = a[i];
            b[k++] = ' ';
            b[k++] = '-';
            b[k++] = ' ';
            i += 2;
        } else {
            b[k++] = a[i++];
        }
    }
    return k;
}

/* Calls emit(token, ctx) for every whitespace-separated token of b[0..k). */
typedef int (*emit_fn)(PyObject *tok, void *ctx);

static int split_tokens(const Py_UCS4 *b, Py_ssize_t k, emit_fn emit, void *ctx)
{
    Py_ssize_t i = 0;
    while (i < k) {
        while (i < k && Py_UNICODE_ISSPACE(b[i]))
            i++;
        if (i >= k)
            break;
        Py_ssize_t start = i;
        while (i < k && !Py_UNICODE_ISSPACE(b[i]))
            i++;
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
    if (work_load(&w, line, &n) < 0)
        goto fail;
    n = run_rules(&w, n, cjk);
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

typedef struct {
    PyObject *vocab;
    int64_t *ids;
    Py_ssize_t n, cap;
} Encoder;

static int emit_id(PyObject *tok, void *ctx)
{
    Encoder *e = ctx;
    PyObject *id = PyDict_GetItemWithError(e->vocab, tok);
    int64_t value;
    if (id) {
        value = PyLong_AsLongLong(id);
        if (value == -1 && PyErr_Occurred())
            return -1;
    } else {
        if (PyErr_Occurred())
            return -1;
        value = (int64_t)PyDict_Size(e->vocab);
        PyObject *v = PyLong_FromLongLong(value);
        if (!v || PyDict_SetItem(e->vocab, tok, v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    if (e->n == e->cap) {
        Py_ssize_t cap = e->cap ? 2 * e->cap : 1024;
        int64_t *ids = PyMem_Realloc(e->ids, sizeof(int64_t) * cap);
        if (!ids) {
            PyErr_NoMemory();
            return -1;
        }
        e->ids = ids;
        e->cap = cap;
    }
    e->ids[e->n++] = value;
    return 0;
}

static PyObject *encode_lines(PyObject *self, PyObject *args)
{
    PyObject *lines, *vocab;
    int zh;
    if (!PyArg_ParseTuple(args, "O!O!p", &PyList_Type, &lines, &PyDict_Type, &vocab, &zh))
        return NULL;
    Py_ssize_t nlines = PyList_GET_SIZE(lines);
    Encoder enc = {vocab, NULL, 0, 0};
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
        if (work_load(&w, line, &n) < 0)
            goto fail;
        n = zh ? strip_ws(w.b, n) : prepare_13a(&w, n);
        n = run_rules(&w, n, zh);
        if (split_tokens(w.b, n, emit_id, &enc) < 0)
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

/* ------------------------------------------------------------------ n-gram matching */

/*
 * Per segment and order n, the n-gram starting at position p is identified by the pair
 * (id of the (n-1)-gram at p, token at p+n-1), where the id of an n-gram is the position
 * of its first occurrence in the hypothesis. A reference n-gram that does not occur in
 * the hypothesis gets id -1, and so do all its extensions (they cannot occur either).
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

static int get_buf(PyObject *obj, Buf *b, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0)
        return -1;
    b->held = 1;
    if (b->view.itemsize != 8) {
        PyErr_Format(PyExc_TypeError, "%s must hold 8-byte integers", what);
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

static PyObject *match_counts(PyObject *self, PyObject *args)
{
    PyObject *hyp_o, *hoff_o, *refs_o, *roffs_o, *per_ref_o, *max_o;
    int max_order;
    if (!PyArg_ParseTuple(args, "OOOOiOO", &hyp_o, &hoff_o, &refs_o, &roffs_o, &max_order,
                          &per_ref_o, &max_o))
        return NULL;
    if (!PySequence_Check(refs_o) || !PySequence_Check(roffs_o)) {
        PyErr_SetString(PyExc_TypeError, "refs and ref offsets must be sequences");
        return NULL;
    }
    Py_ssize_t nrefs = PySequence_Size(refs_o);
    if (nrefs < 1 || PySequence_Size(roffs_o) != nrefs || max_order < 1) {
        PyErr_SetString(PyExc_ValueError, "need >= 1 reference stream with offsets, max_order >= 1");
        return NULL;
    }
    Py_ssize_t nbuf = 4 + 2 * nrefs;
    Buf *bufs = calloc(nbuf, sizeof(Buf));
    if (!bufs)
        return PyErr_NoMemory();
    PyObject *result = NULL;
    int64_t *tab_a = NULL, *tab_b = NULL, *tab_rep = NULL, *tab_hc = NULL, *tab_rc = NULL;
    int64_t *used = NULL, *hprev = NULL, *hnext = NULL, *rprev = NULL, *rnext = NULL;
    if (get_buf(hyp_o, &bufs[0], 0, "hyp") < 0 || get_buf(hoff_o, &bufs[1], 0, "hyp offsets") < 0 ||
        get_buf(per_ref_o, &bufs[2], 1, "out_per_ref") < 0 || get_buf(max_o, &bufs[3], 1, "out_max") < 0)
        goto done;
    for (Py_ssize_t j = 0; j < nrefs; j++) {
        PyObject *r = PySequence_GetItem(refs_o, j);
        PyObject *o = PySequence_GetItem(roffs_o, j);
        int bad = (!r || !o || get_buf(r, &bufs[4 + 2 * j], 0, "ref") < 0 ||
                   get_buf(o, &bufs[5 + 2 * j], 0, "ref offsets") < 0);
        Py_XDECREF(r);
        Py_XDECREF(o);
        if (bad)
            goto done;
    }
    const int64_t *hyp = bufs[0].view.buf;
    const int64_t *hoff = bufs[1].view.buf;
    Py_ssize_t nseg = bufs[1].view.len / 8 - 1;
    int64_t *out_ref = bufs[2].view.buf;
    int64_t *out_max = bufs[3].view.buf;
    if (nseg < 0 || bufs[2].view.len / 8 != nseg * nrefs * max_order ||
        bufs[3].view.len / 8 != nseg * max_order) {
        PyErr_SetString(PyExc_ValueError, "output arrays have the wrong size");
        goto done;
    }
    int64_t hlong = 0, rlong = 0;
    for (Py_ssize_t s = 0; s < nseg; s++) {
        if (hoff[s + 1] - hoff[s] > hlong)
            hlong = hoff[s + 1] - hoff[s];
        if (hoff[s + 1] < hoff[s] || hoff[0] != 0 || hoff[nseg] * 8 > bufs[0].view.len) {
            PyErr_SetString(PyExc_ValueError, "invalid hypothesis offsets");
            goto done;
        }
    }
    for (Py_ssize_t j = 0; j < nrefs; j++) {
        const int64_t *roff = bufs[5 + 2 * j].view.buf;
        if (bufs[5 + 2 * j].view.len / 8 != nseg + 1 || roff[0] != 0 ||
            roff[nseg] * 8 > bufs[4 + 2 * j].view.len) {
            PyErr_SetString(PyExc_ValueError, "invalid reference offsets");
            goto done;
        }
        for (Py_ssize_t s = 0; s < nseg; s++) {
            if (roff[s + 1] < roff[s]) {
                PyErr_SetString(PyExc_ValueError, "invalid reference offsets");
                goto done;
            }
            if (roff[s + 1] - roff[s] > rlong)
                rlong = roff[s + 1] - roff[s];
        }
    }
    int64_t cap = 16;
    while (cap < 2 * hlong + 2)
        cap <<= 1;
    tab_a = malloc(sizeof(int64_t) * cap);
    tab_b = malloc(sizeof(int64_t) * cap);
    tab_rep = malloc(sizeof(int64_t) * cap);
    tab_hc = malloc(sizeof(int64_t) * cap);
    tab_rc = calloc((size_t)cap * nrefs, sizeof(int64_t));
    used = malloc(sizeof(int64_t) * cap);
    hprev = malloc(sizeof(int64_t) * (hlong + 1));
    hnext = malloc(sizeof(int64_t) * (hlong + 1));
    rprev = malloc(sizeof(int64_t) * (rlong + 1) * nrefs);
    rnext = malloc(sizeof(int64_t) * (rlong + 1) * nrefs);
    if (!tab_a || !tab_b || !tab_rep || !tab_hc || !tab_rc || !used || !hprev || !hnext ||
        !rprev || !rnext) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t e = 0; e < cap; e++)
        tab_rep[e] = -1;
    memset(out_ref, 0, sizeof(int64_t) * nseg * nrefs * max_order);
    memset(out_max, 0, sizeof(int64_t) * nseg * max_order);
    int64_t mask = cap - 1;

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < nseg; s++) {
        int64_t hs = hoff[s], hl = hoff[s + 1] - hoff[s];
        /* order 1: every position extends the empty prefix (id -2) */
        for (int64_t p = 0; p < hl; p++)
            hprev[p] = -2;
        for (Py_ssize_t j = 0; j < nrefs; j++) {
            const int64_t *roff = bufs[5 + 2 * j].view.buf;
            int64_t rl = roff[s + 1] - roff[s];
            for (int64_t p = 0; p < rl; p++)
                rprev[j * (rlong + 1) + p] = -2;
        }
        for (int n = 1; n <= max_order && n <= hl; n++) {
            int64_t nused = 0;
            for (int64_t p = 0; p + n <= hl; p++) {
                int64_t a = hprev[p], b = hyp[hs + p + n - 1];
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
                const int64_t *ref = bufs[4 + 2 * j].view.buf;
                const int64_t *roff = bufs[5 + 2 * j].view.buf;
                int64_t rs = roff[s], rl = roff[s + 1] - roff[s];
                int64_t *rp = rprev + j * (rlong + 1), *rn = rnext + j * (rlong + 1);
                for (int64_t p = 0; p + n <= rl; p++) {
                    int64_t a = rp[p];
                    if (a == -1) {
                        rn[p] = -1;
                        continue;
                    }
                    int64_t b = ref[rs + p + n - 1];
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
    Py_END_ALLOW_THREADS

    result = Py_None;
    Py_INCREF(result);
done:
    free(tab_a);
    free(tab_b);
    free(tab_rep);
    free(tab_hc);
    free(tab_rc);
    free(used);
    free(hprev);
    free(hnext);
    free(rprev);
    free(rnext);
    release(bufs, nbuf);
    free(bufs);
    return result;
}

static PyMethodDef methods[] = {
    {"mteval_split", mteval_split, METH_VARARGS,
     "mteval_split(line, cjk=False): mteval-v13a rules 1-4 (CJK characters padded first "
     "if cjk), then str.split()."},
    {"encode_lines", encode_lines, METH_VARARGS,
     "encode_lines(lines, vocab, zh) -> (ids bytes, offsets bytes): 13a (or zh) tokens of "
     "every line as int64 ids from vocab (new tokens get the next id)."},
    {"match_counts", match_counts, METH_VARARGS,
     "Clipped n-gram match counts per segment, reference and order."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mtkernel", "Compiled inner loops of BLEU and chrF.", -1, methods,
};

PyMODINIT_FUNC PyInit__mtkernel(void) { return PyModule_Create(&module); }
