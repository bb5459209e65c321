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

static PyObject *mteval_split(PyObject *self, PyObject *args)
{
    PyObject *arg;
    int cjk = 0;
    if (!PyArg_ParseTuple(args, "U|p", &arg, &cjk))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    /* rule 1 at most triples the length, rules 2-4 at most double it */
    Py_ssize_t cap = 24 * n + 8;
    Py_UCS4 *a = PyMem_Malloc(sizeof(Py_UCS4) * cap);
    Py_UCS4 *b = PyMem_Malloc(sizeof(Py_UCS4) * cap);
    if (!a || !b) {
        PyMem_Free(a);
        PyMem_Free(b);
        return PyErr_NoMemory();
    }
    Py_ssize_t m = 0, k = 0, i;
    /* rule 1: pad ASCII punctuation and symbols */
    for (i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        /* with cjk, CJK characters are padded too (TokenizerZh's first step) */
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
    /* str.split(): runs of Unicode whitespace separate tokens */
    PyObject *out = PyList_New(0);
    if (!out) {
        PyMem_Free(a);
        PyMem_Free(b);
        return NULL;
    }
    i = 0;
    while (i < k) {
        while (i < k && Py_UNICODE_ISSPACE(b[i]))
            i++;
        if (i >= k)
            break;
        Py_ssize_t start = i;
        while (i < k && !Py_UNICODE_ISSPACE(b[i]))
            i++;
        PyObject *tok = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, b + start, i - start);
        if (!tok || PyList_Append(out, tok) < 0) {
            Py_XDECREF(tok);
            Py_DECREF(out);
            PyMem_Free(a);
            PyMem_Free(b);
            return NULL;
        }
        Py_DECREF(tok);
    }
    PyMem_Free(a);
    PyMem_Free(b);
    return out;
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
    {"match_counts", match_counts, METH_VARARGS,
     "Clipped n-gram match counts per segment, reference and order."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mtkernel", "Compiled inner loops of BLEU and chrF.", -1, methods,
};

PyMODINIT_FUNC PyInit__mtkernel(void) { return PyModule_Create(&module); }
