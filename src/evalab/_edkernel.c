/*
 * evalab._edkernel: edit distances for TER and WER/CER in C (optional; the pure-Python
 * fallbacks in evalab.metrics._editdistance give identical numbers).
 *
 * Every function takes token ids as int32 buffers with int64 segment offsets (nseg + 1)
 * for the hypotheses and for one reference stream, and writes one int64 per segment into
 * `out`. The GIL is released while the segments are processed.
 *
 * levenshtein(hyp_ids, hyp_offs, ref_ids, ref_offs, out)
 *     Plain Levenshtein distance (unit costs) of every hypothesis to its reference, by
 *     Myers' bit-vector algorithm (|hyp| * ceil(|ref| / 64) word steps, the shorter side as
 *     the bit vector, after cutting the common prefix and suffix).
 *
 * levenshtein_counts((hyp_ids, hyp_offs, ref_ids, ref_offs, out), counts[, steps, room])
 *     Hits, substitutions, deletions and insertions of every segment (counts: int64,
 *     nseg x 4) along the alignment rapidfuzz's Levenshtein.editops(reference, hypothesis)
 *     picks among the shortest ones (jiwer 4's), and the distance in `out`: the same
 *     bit-vector pass with every column's vertical differences kept, then one trace.
 *     With `steps` (int8) and `room` (int64, nseg + 1 offsets into steps, segment k given
 *     at least |hyp_k| + |ref_k| places), the steps of segment k in order from room[k]
 *     (0 hit, 1 substitution, 2 deletion, 3 insertion; as many as its counts sum to).
 *
 * ter_edits(hyp_ids, hyp_offs, ref_ids, ref_offs, out)
 *     The number of TER edits (shifts + beam edit distance) of every hypothesis, with the
 *     search sacrebleu 2.x performs (see evalab.metrics._editdistance for the rules):
 *     greedy best shift per round, candidates ranked by (gain, length, -start, -target),
 *     at most 1000 candidates evaluated per segment, shifts of at most 10 words moved at
 *     most 50 positions, and a beam of 25 cells either side of the length-scaled diagonal.
 *     A segment whose matrix cannot be allocated sets MemoryError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TER_INF ((int64_t)10000000000000000LL) /* 1e16, sacrebleu's "infinity" */
#define MAX_SHIFT_SIZE 10
#define MAX_SHIFT_DIST 50
#define BEAM_WIDTH 25
#define MAX_CANDIDATES 1000

enum { OP_UNDEF = 0, OP_NOP, OP_SUB, OP_INS, OP_DEL };

typedef struct {
    Py_buffer hyp, hoff, ref, roff, out;
    Py_ssize_t nseg;
} Segments;

static void release_segments(Segments *s)
{
    PyBuffer_Release(&s->hyp);
    PyBuffer_Release(&s->hoff);
    PyBuffer_Release(&s->ref);
    PyBuffer_Release(&s->roff);
    PyBuffer_Release(&s->out);
}

static int check_offsets(const Py_buffer *offs, const Py_buffer *ids, Py_ssize_t nseg)
{
    const int64_t *o = (const int64_t *)offs->buf;
    int64_t nids = (int64_t)(ids->len / 4);
    if (o[0] != 0)
        return -1;
    for (Py_ssize_t s = 0; s < nseg; s++)
        if (o[s + 1] < o[s] || o[s + 1] > nids)
            return -1;
    return 0;
}

/* Parses and checks the five buffers; on error an exception is set and nothing is held. */
static int open_segments(PyObject *args, Segments *s)
{
    memset(s, 0, sizeof(*s));
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &s->hyp, &s->hoff, &s->ref, &s->roff, &s->out))
        return -1;
    s->nseg = s->hoff.len / 8 - 1;
    if (s->hyp.len % 4 || s->ref.len % 4 || s->hoff.len % 8 || s->roff.len != s->hoff.len ||
        s->nseg < 0 || s->out.len != s->nseg * 8 || check_offsets(&s->hoff, &s->hyp, s->nseg) ||
        check_offsets(&s->roff, &s->ref, s->nseg)) {
        PyErr_SetString(PyExc_ValueError,
                        "expected int32 ids, int64 offsets (nseg + 1, equal for both sides) and "
                        "an int64 output of nseg values");
        release_segments(s);
        return -1;
    }
    return 0;
}

/* A function of one segment (hypothesis h[0..n), reference r[0..m)) giving its number, or
 * SEGMENT_NO_MEMORY / SEGMENT_NO_PATH; `work` holds its buffers from one segment to the
 * next, and free_work frees them. */
typedef int64_t (*SegmentFn)(void *work, const int32_t *h, int64_t n, const int32_t *r, int64_t m);
typedef void (*FreeFn)(void *work);
enum { SEGMENT_NO_MEMORY = -2, SEGMENT_NO_PATH = -3 };

/* one(work, ...) of every segment of the five buffers in args, into out, without the GIL,
 * then free_work(work). A segment that fails stops the loop and raises: MemoryError, or
 * RuntimeError for a TER trace with no path in the beam (SEGMENT_NO_PATH). */
static PyObject *each_segment(PyObject *args, SegmentFn one, void *work, FreeFn free_work)
{
    Segments s;
    if (open_segments(args, &s) < 0)
        return NULL;
    const int32_t *h = s.hyp.buf, *r = s.ref.buf;
    const int64_t *ho = s.hoff.buf, *ro = s.roff.buf;
    int64_t *out = s.out.buf, failed = 0;
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < s.nseg; k++) {
        out[k] = one(work, h + ho[k], ho[k + 1] - ho[k], r + ro[k], ro[k + 1] - ro[k]);
        if (out[k] < 0) {
            failed = out[k];
            bad = k;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    free_work(work);
    release_segments(&s);
    if (failed == SEGMENT_NO_PATH)
        return PyErr_Format(PyExc_RuntimeError, "TER: no edit path in the beam for segment %zd", bad);
    if (failed < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ Levenshtein */

/* Plain row DP, |a| * |b| cells: the oracle of the bit-parallel version and its fallback
 * for a pair whose match masks would not fit in memory. */
static int64_t levenshtein_rows(const int32_t *a, int64_t n, const int32_t *b, int64_t m)
{
    int64_t *row = malloc((size_t)(m + 1) * sizeof(int64_t));
    if (!row)
        return -1;
    for (int64_t j = 0; j <= m; j++)
        row[j] = j;
    for (int64_t i = 1; i <= n; i++) {
        int64_t diag = row[0];
        row[0] = i;
        for (int64_t j = 1; j <= m; j++) {
            int64_t up = row[j];
            int64_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    int64_t d = row[m];
    free(row);
    return d;
}

/* Buffers of the bit-parallel distance, grown as longer patterns come. */
typedef struct {
    uint64_t *masks, *vp, *vn;
    int32_t *keys, *slots;
    size_t masks_cap, vp_cap, vn_cap, keys_cap, slots_cap;
    uint64_t *cols; /* with counts: the vertical differences (vp, vn) of every text column */
    size_t cols_cap;
} Myers;

static int grow(void **buf, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    void *p = realloc(*buf, need * size);
    if (!p)
        return -1;
    *buf = p;
    *cap = need;
    return 0;
}

/* Index of token `key` among the pattern's distinct tokens, or -1. */
static inline int32_t slot_of(const Myers *w, size_t mask, int shift, int32_t key)
{
    size_t h = (size_t)(((uint32_t)key * 0x9E3779B1u) >> shift) & mask;
    while (w->slots[h] >= 0) {
        if (w->keys[h] == key)
            return w->slots[h];
        h = (h + 1) & mask;
    }
    return -1;
}

/* Levenshtein distance of pattern p (m >= 1 tokens) and text t by Myers' (1999) bit-vector
 * algorithm in blocks of 64 pattern positions (the block form of edlib's calculateBlock):
 * per text token one pass over ceil(m / 64) words, carrying the horizontal difference of
 * the block's last row into the next block; the score follows the difference in row m.
 * With `keep`, the vertical differences after every text token are kept in w->cols (text
 * token j: vp words at 2 * j * words, vn words after them) for the trace of align_counts.
 * Returns -1 when the buffers cannot be allocated, -2 when the masks would be too large. */
static int64_t levenshtein_bits(const int32_t *p, int64_t m, const int32_t *t, int64_t n, Myers *w,
                                int keep)
{
    size_t words = (size_t)((m + 63) / 64), cap = 16;
    int bits = 4;
    while (cap < 2 * (size_t)m)
        cap <<= 1, bits++;
    if (grow((void **)&w->keys, &w->keys_cap, cap, sizeof(int32_t)) < 0 ||
        grow((void **)&w->slots, &w->slots_cap, cap, sizeof(int32_t)) < 0 ||
        grow((void **)&w->vp, &w->vp_cap, words, sizeof(uint64_t)) < 0 ||
        grow((void **)&w->vn, &w->vn_cap, words, sizeof(uint64_t)) < 0)
        return -1;
    if (keep && ((size_t)n * words > ((size_t)1 << 28) ||
                 grow((void **)&w->cols, &w->cols_cap, 2 * (size_t)n * words, sizeof(uint64_t)) < 0))
        return -1; /* over 4 GB of columns (beyond the 1e10 cells WER's PairWork admits) */
    size_t mask = cap - 1;
    int shift = 32 - bits;
    memset(w->slots, 0xff, cap * sizeof(int32_t));
    int32_t distinct = 0;
    for (int64_t i = 0; i < m; i++) { /* distinct tokens and their match masks */
        size_t h = (size_t)(((uint32_t)p[i] * 0x9E3779B1u) >> shift) & mask;
        while (w->slots[h] >= 0 && w->keys[h] != p[i])
            h = (h + 1) & mask;
        if (w->slots[h] < 0) {
            if ((size_t)(distinct + 1) * words > ((size_t)1 << 24))
                return -2; /* over 128 MB of masks: the caller uses the row DP */
            if (grow((void **)&w->masks, &w->masks_cap, (size_t)(distinct + 1) * words,
                     sizeof(uint64_t)) < 0)
                return -1;
            memset(w->masks + (size_t)distinct * words, 0, words * sizeof(uint64_t));
            w->keys[h] = p[i];
            w->slots[h] = distinct++;
        }
        w->masks[(size_t)w->slots[h] * words + (size_t)(i / 64)] |= (uint64_t)1 << (i % 64);
    }
    for (size_t b = 0; b < words; b++)
        w->vp[b] = ~(uint64_t)0, w->vn[b] = 0;
    const uint64_t last = (uint64_t)1 << ((m - 1) % 64);
    int64_t score = m;
    for (int64_t j = 0; j < n; j++) {
        int32_t s = slot_of(w, mask, shift, t[j]);
        const uint64_t *eq = s >= 0 ? w->masks + (size_t)s * words : NULL;
        int hin = 1; /* row 0 is 0, 1, 2, ...: the difference along it is +1 */
        for (size_t b = 0; b < words; b++) {
            uint64_t Eq = eq ? eq[b] : 0, Pv = w->vp[b], Mv = w->vn[b];
            uint64_t Xv = Eq | Mv, neg = hin < 0;
            Eq |= neg;
            uint64_t Xh = (((Eq & Pv) + Pv) ^ Pv) | Eq;
            uint64_t Ph = Mv | ~(Xh | Pv), Mh = Pv & Xh;
            if (b == words - 1)
                score += (Ph & last) ? 1 : (Mh & last) ? -1 : 0;
            int hout = (int)(Ph >> 63) - (int)(Mh >> 63);
            Ph = (Ph << 1) | (uint64_t)(hin > 0);
            Mh = (Mh << 1) | neg;
            w->vp[b] = Mh | ~(Xv | Ph);
            w->vn[b] = Ph & Xv;
            hin = hout;
        }
        if (keep) {
            memcpy(w->cols + 2 * (size_t)j * words, w->vp, words * sizeof(uint64_t));
            memcpy(w->cols + (2 * (size_t)j + 1) * words, w->vn, words * sizeof(uint64_t));
        }
    }
    return score;
}

/* Levenshtein distance of a and b: common prefix and suffix cut, then the shorter side is
 * the bit-vector pattern. Returns -1 when memory runs out. */
static int64_t levenshtein_one(const int32_t *a, int64_t n, const int32_t *b, int64_t m, Myers *w)
{
    while (n > 0 && m > 0 && a[0] == b[0])
        a++, b++, n--, m--;
    while (n > 0 && m > 0 && a[n - 1] == b[m - 1])
        n--, m--;
    if (n < m) {
        const int32_t *c = a;
        int64_t k = n;
        a = b, n = m, b = c, m = k;
    }
    if (m == 0)
        return n;
    int64_t d = levenshtein_bits(b, m, a, n, w, 0);
    return d == -2 ? levenshtein_rows(a, n, b, m) : d;
}

static void myers_free(void *work)
{
    Myers *w = work;
    free(w->masks), free(w->vp), free(w->vn), free(w->keys), free(w->slots), free(w->cols);
}

static int64_t levenshtein_segment(void *w, const int32_t *h, int64_t n, const int32_t *r,
                                   int64_t m)
{
    int64_t d = levenshtein_one(h, n, r, m, w);
    return d < 0 ? SEGMENT_NO_MEMORY : d;
}

static PyObject *levenshtein(PyObject *self, PyObject *args)
{
    Myers w = {0};
    return each_segment(args, levenshtein_segment, &w, myers_free);
}

/* ------------------------------------------------------------------ jiwer's alignment */

static inline int bit_at(const uint64_t *v, int64_t i) { return (int)((v[i / 64] >> (i % 64)) & 1); }

enum { STEP_HIT = 0, STEP_SUB, STEP_DEL, STEP_INS };

/* Writes `k` copies of step `x` backwards from *back (when steps are kept). */
static inline void put_steps(int8_t **back, int8_t x, int64_t k)
{
    if (*back)
        for (; k > 0; k--)
            *--*back = x;
}

/* Hits, substitutions, deletions and insertions (out[0..3]) of reference r against
 * hypothesis h along the alignment rapidfuzz's Levenshtein.editops(r, h) picks (jiwer 4's):
 * the common prefix and suffix are hits; of the rest, the vertical differences of every
 * hypothesis column are kept (reference as the bit vector), and the trace goes back from
 * the end: a deletion where the difference above the cell is +1; otherwise one hypothesis
 * token back, an insertion where that column's difference is -1 (never in column 0), else
 * a diagonal step (hit or substitution). With `steps` (room for n + m), the steps in order
 * from steps[0]. Returns -1 when memory runs out. */
static int align_counts(const int32_t *r, int64_t n, const int32_t *h, int64_t m, Myers *w,
                        int64_t *out, int8_t *steps)
{
    int64_t pre = 0, suf = 0, subs = 0, dels = 0, ins = 0, mid_hits = 0;
    int8_t *back = steps ? steps + n + m : NULL; /* written from the end, moved to the start */
    while (n > 0 && m > 0 && r[0] == h[0])
        r++, h++, n--, m--, pre++;
    while (n > 0 && m > 0 && r[n - 1] == h[m - 1])
        n--, m--, suf++;
    put_steps(&back, STEP_HIT, suf);
    int64_t col = n, row = m;
    if (n > 0 && m > 0) {
        if (levenshtein_bits(r, n, h, m, w, 1) < 0)
            return -1;
        const size_t words = (size_t)((n + 63) / 64);
        while (row && col) {
            if (bit_at(w->cols + 2 * (size_t)(row - 1) * words, col - 1)) {
                dels++, col--;
                put_steps(&back, STEP_DEL, 1);
                continue;
            }
            row--;
            if (row && bit_at(w->cols + (2 * (size_t)(row - 1) + 1) * words, col - 1)) {
                ins++;
                put_steps(&back, STEP_INS, 1);
                continue;
            }
            col--;
            const int same = r[col] == h[row];
            mid_hits += same, subs += !same;
            put_steps(&back, same ? STEP_HIT : STEP_SUB, 1);
        }
    }
    put_steps(&back, STEP_DEL, col);
    put_steps(&back, STEP_INS, row);
    put_steps(&back, STEP_HIT, pre);
    out[0] = pre + mid_hits + suf, out[1] = subs, out[2] = dels + col, out[3] = ins + row;
    if (steps)
        memmove(steps, back, (size_t)(out[0] + out[1] + out[2] + out[3]));
    return 0;
}

/* Checks `room` (nseg + 1 int64 offsets into an int8 steps buffer) against the segments:
 * every segment gets at least |hyp| + |ref| places. */
static int check_room(const Py_buffer *steps, const Py_buffer *room, const Segments *s)
{
    if (room->len != (s->nseg + 1) * 8)
        return -1;
    const int64_t *o = room->buf, *ho = s->hoff.buf, *ro = s->roff.buf;
    if (o[0] != 0 || o[s->nseg] > steps->len)
        return -1;
    for (Py_ssize_t k = 0; k < s->nseg; k++)
        if (o[k + 1] - o[k] < (ho[k + 1] - ho[k]) + (ro[k + 1] - ro[k]))
            return -1;
    return 0;
}

static PyObject *levenshtein_counts(PyObject *self, PyObject *args)
{
    Py_buffer counts, steps = {0}, room = {0};
    Segments s;
    PyObject *segs;
    if (!PyArg_ParseTuple(args, "Ow*|w*y*", &segs, &counts, &steps, &room))
        return NULL;
    if (open_segments(segs, &s) < 0) {
        PyBuffer_Release(&counts);
        PyBuffer_Release(&steps);
        PyBuffer_Release(&room);
        return NULL;
    }
    const int keep = steps.buf != NULL;
    if (counts.len != s.nseg * 32 || (keep && check_room(&steps, &room, &s) < 0)) {
        PyBuffer_Release(&counts);
        PyBuffer_Release(&steps);
        PyBuffer_Release(&room);
        release_segments(&s);
        return PyErr_Format(PyExc_ValueError,
                            "expected an int64 output of nseg x 4 counts (and int8 steps with "
                            "nseg + 1 int64 offsets giving each segment |hyp| + |ref| places)");
    }
    const int32_t *h = s.hyp.buf, *r = s.ref.buf;
    const int64_t *ho = s.hoff.buf, *ro = s.roff.buf, *at = keep ? room.buf : NULL;
    int64_t *out = counts.buf;
    int64_t *dist = s.out.buf;
    int8_t *kept = keep ? steps.buf : NULL;
    Myers w = {0};
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < s.nseg && !failed; k++) {
        int64_t *c = out + 4 * k;
        failed = align_counts(r + ro[k], ro[k + 1] - ro[k], h + ho[k], ho[k + 1] - ho[k], &w, c,
                              keep ? kept + at[k] : NULL);
        dist[k] = c[1] + c[2] + c[3];
    }
    Py_END_ALLOW_THREADS
    myers_free(&w);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&steps);
    PyBuffer_Release(&room);
    release_segments(&s);
    if (failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ TER */

typedef struct {
    const int32_t *ref;
    int64_t n, m;        /* hypothesis and reference lengths */
    int64_t beam;        /* beam half-width */
    double ratio;        /* m / n */
    int64_t *cost;       /* (n + 1) x (m + 1): rows of the current hypothesis */
    unsigned char *op;   /* same shape: the operation chosen in each cell */
    int64_t *rows[2];    /* rolling rows for candidates */
    int32_t *cur, *cand; /* current and candidate hypotheses */
    int64_t *align;      /* m: hypothesis position aligned to each reference word (-1: none) */
    int64_t *hyp_err, *ref_err; /* prefix sums of error flags (n + 1, m + 1) */
    unsigned char *trace;       /* n + m */
    /* the buffers are kept from segment to segment; the items each has room for: */
    size_t cost_cap, op_cap, row_cap[2], cur_cap, cand_cap, align_cap, hyp_err_cap,
        ref_err_cap, trace_cap;
} Ter;

/* Beam limits [lo, hi) of row i (1 <= i <= n), as sacrebleu's BeamEditDistance. */
static void beam_limits(const Ter *t, int64_t i, int64_t *lo, int64_t *hi)
{
    int64_t diag = (int64_t)floor((double)i * t->ratio);
    *lo = diag - t->beam > 0 ? diag - t->beam : 0;
    *hi = diag + t->beam < t->m + 1 ? diag + t->beam : t->m + 1;
    if (i == t->n)
        *hi = t->m + 1;
}

/* Row i of the matrix from row `prev`, hypothesis word `w`; ops may be NULL. Cells outside
 * the beam keep "infinity"; ties prefer match/substitution, then deletion, then insertion. */
static void fill_row(const Ter *t, int64_t i, int32_t w, const int64_t *prev, int64_t *row,
                     unsigned char *ops)
{
    int64_t lo, hi;
    beam_limits(t, i, &lo, &hi);
    for (int64_t j = 0; j <= t->m; j++)
        row[j] = TER_INF;
    if (ops)
        memset(ops, OP_UNDEF, (size_t)(t->m + 1));
    for (int64_t j = lo; j < hi; j++) {
        if (j == 0) {
            row[0] = prev[0] + 1;
            if (ops)
                ops[0] = OP_DEL;
            continue;
        }
        int same = w == t->ref[j - 1];
        int64_t c = prev[j - 1] + !same;
        unsigned char o = same ? OP_NOP : OP_SUB;
        int64_t best = TER_INF;
        unsigned char bo = OP_UNDEF;
        if (best > c) { best = c; bo = o; }
        if (best > prev[j] + 1) { best = prev[j] + 1; bo = OP_DEL; }
        if (best > row[j - 1] + 1) { best = row[j - 1] + 1; bo = OP_INS; }
        row[j] = best;
        if (ops)
            ops[j] = bo;
    }
}

/* Full matrix of t->cur with operations; returns the distance, or -1 if the trace breaks. */
static int64_t full_matrix(Ter *t)
{
    int64_t w = t->m + 1;
    for (int64_t j = 0; j <= t->m; j++) {
        t->cost[j] = j;
        t->op[j] = OP_INS;
    }
    for (int64_t i = 1; i <= t->n; i++)
        fill_row(t, i, t->cur[i - 1], t->cost + (i - 1) * w, t->cost + i * w, t->op + i * w);
    return t->cost[t->n * w + t->m];
}

/* Distance of t->cand whose first `p` words equal t->cur's (rows 0..p are reused). */
static int64_t candidate_cost(Ter *t, int64_t p)
{
    int64_t w = t->m + 1;
    const int64_t *prev = t->cost + p * w;
    int k = 0;
    for (int64_t i = p + 1; i <= t->n; i++) {
        fill_row(t, i, t->cand[i - 1], prev, t->rows[k], NULL);
        prev = t->rows[k];
        k ^= 1;
    }
    return prev[t->m];
}

/* Alignment and error prefix sums from the trace of the full matrix; -1 on a broken trace. */
static int align_trace(Ter *t)
{
    int64_t w = t->m + 1, i = t->n, j = t->m, len = 0;
    while (i > 0 || j > 0) {
        unsigned char o = t->op[i * w + j];
        t->trace[len++] = o;
        if (o == OP_NOP || o == OP_SUB) { i--; j--; }
        else if (o == OP_INS) j--;
        else if (o == OP_DEL) i--;
        else return -1;
    }
    int64_t ph = -1, pr = -1;
    t->hyp_err[0] = 0;
    t->ref_err[0] = 0;
    for (int64_t k = len - 1; k >= 0; k--) {
        unsigned char o = t->trace[k];
        if (o == OP_NOP || o == OP_SUB) {
            ph++; pr++;
            t->align[pr] = ph;
            t->hyp_err[ph + 1] = t->hyp_err[ph] + (o == OP_SUB);
            t->ref_err[pr + 1] = t->ref_err[pr] + (o == OP_SUB);
        } else if (o == OP_DEL) { /* a hypothesis word with no reference word */
            ph++;
            t->hyp_err[ph + 1] = t->hyp_err[ph] + 1;
        } else { /* a reference word with no hypothesis word */
            pr++;
            t->align[pr] = ph;
            t->ref_err[pr + 1] = t->ref_err[pr] + 1;
        }
    }
    return 0;
}

/* cand = cur with words [start, start + len) moved before position `target` (Python slice
 * semantics of sacrebleu's _perform_shift, including its third case). */
static void perform_shift(Ter *t, int64_t start, int64_t len, int64_t target)
{
    const int32_t *c = t->cur;
    int32_t *o = t->cand;
    int64_t n = t->n, k = 0;
#define COPY(a, b) do { int64_t a_ = (a), b_ = (b) < n ? (b) : n; \
        for (int64_t q = a_; q < b_; q++) o[k++] = c[q]; } while (0)
    if (target < start) {
        COPY(0, target); COPY(start, start + len); COPY(target, start); COPY(start + len, n);
    } else if (target > start + len) {
        COPY(0, start); COPY(start + len, target); COPY(start, start + len); COPY(target, n);
    } else {
        COPY(0, start); COPY(start + len, len + target); COPY(start, start + len); COPY(len + target, n);
    }
#undef COPY
}

typedef struct {
    int64_t gain, len, start, target; /* target = -1: no candidate yet */
} Shift;

static int better(const Shift *a, const Shift *b)
{
    if (b->target < 0) return 1;
    if (a->gain != b->gain) return a->gain > b->gain;
    if (a->len != b->len) return a->len > b->len;
    if (a->start != b->start) return a->start < b->start;
    return a->target < b->target;
}

/* Tries the shifts of h[sh, sh + len) = ref[sr, sr + len); returns 1 if allowed. */
static int try_pair(Ter *t, int64_t sh, int64_t sr, int64_t len, int64_t pre, Shift *best,
                    int64_t *checked)
{
    if (t->hyp_err[sh + len] - t->hyp_err[sh] == 0 || t->ref_err[sr + len] - t->ref_err[sr] == 0)
        return 0;
    if (sh <= t->align[sr] && t->align[sr] < sh + len)
        return 0;
    int64_t prev_idx = -1;
    for (int64_t off = -1; off < len; off++) {
        int64_t idx = sr + off == -1 ? 0 : t->align[sr + off] + 1;
        if (idx == prev_idx)
            continue;
        prev_idx = idx;
        perform_shift(t, sh, len, idx);
        Shift c = {pre - candidate_cost(t, idx < sh ? idx : sh), len, sh, idx};
        (*checked)++;
        if (better(&c, best))
            *best = c;
    }
    return 1;
}

/* One round: the best shift of t->cur (applied into t->cand); returns its gain (0: none). */
static int64_t best_shift(Ter *t, int64_t pre, int64_t *checked, int *broken)
{
    Shift best = {0, 0, 0, -1};
    if (align_trace(t) < 0) {
        *broken = 1;
        return 0;
    }
    for (int64_t sh = 0; sh < t->n; sh++) {
        for (int64_t sr = 0; sr < t->m; sr++) {
            if (llabs(sr - sh) > MAX_SHIFT_DIST)
                continue;
            int64_t len = 0;
            while (len < MAX_SHIFT_SIZE && t->cur[sh + len] == t->ref[sr + len]) {
                len++;
                if (try_pair(t, sh, sr, len, pre, &best, checked) && *checked >= MAX_CANDIDATES)
                    goto done;
                if (sh + len == t->n || sr + len == t->m)
                    break;
            }
        }
    }
done:
    if (best.target < 0)
        return 0;
    perform_shift(t, best.start, best.len, best.target);
    return best.gain;
}

/* Room for an n-word hypothesis against an m-word reference: the buffers of the previous
 * segments are reused, and grown only when a segment needs more (a corpus of short
 * segments allocates a few times, not ten buffers per segment); -1 if out of memory. */
static int ter_reserve(Ter *t, int64_t n, int64_t m)
{
    size_t wn = (size_t)n + 1, wm = (size_t)m + 1, cells = wn * wm;
    return grow((void **)&t->cost, &t->cost_cap, cells, sizeof(int64_t)) < 0 ||
                   grow((void **)&t->op, &t->op_cap, cells, 1) < 0 ||
                   grow((void **)&t->rows[0], &t->row_cap[0], wm, sizeof(int64_t)) < 0 ||
                   grow((void **)&t->rows[1], &t->row_cap[1], wm, sizeof(int64_t)) < 0 ||
                   grow((void **)&t->cur, &t->cur_cap, wn, sizeof(int32_t)) < 0 ||
                   grow((void **)&t->cand, &t->cand_cap, wn, sizeof(int32_t)) < 0 ||
                   grow((void **)&t->align, &t->align_cap, wm, sizeof(int64_t)) < 0 ||
                   grow((void **)&t->hyp_err, &t->hyp_err_cap, wn, sizeof(int64_t)) < 0 ||
                   grow((void **)&t->ref_err, &t->ref_err_cap, wm, sizeof(int64_t)) < 0 ||
                   grow((void **)&t->trace, &t->trace_cap, wn + wm, 1) < 0
               ? -1
               : 0;
}

static void ter_free(void *work)
{
    Ter *t = work;
    free(t->cost); free(t->op); free(t->rows[0]); free(t->rows[1]); free(t->cur);
    free(t->cand); free(t->align); free(t->hyp_err); free(t->ref_err); free(t->trace);
}

/* TER edits of one segment, in the workspace `t`; -2 (SEGMENT_NO_MEMORY): out of memory,
 * -3 (SEGMENT_NO_PATH): broken trace. */
static int64_t ter_one(Ter *t, const int32_t *h, int64_t n, const int32_t *r, int64_t m)
{
    if (m == 0)
        return n;
    if (ter_reserve(t, n, m) < 0)
        return SEGMENT_NO_MEMORY;
    t->ref = r;
    t->n = n;
    t->m = m;
    t->ratio = n ? (double)m / (double)n : 1.0;
    t->beam = BEAM_WIDTH < t->ratio / 2 ? (int64_t)ceil(t->ratio / 2 + BEAM_WIDTH) : BEAM_WIDTH;
    memcpy(t->cur, h, (size_t)n * sizeof(int32_t));
    int64_t shifts = 0, checked = 0;
    int broken = 0;
    for (;;) {
        int64_t pre = full_matrix(t);
        int64_t gain = best_shift(t, pre, &checked, &broken);
        if (broken || checked >= MAX_CANDIDATES || gain <= 0)
            break;
        shifts++;
        int32_t *tmp = t->cur;
        size_t cap = t->cur_cap;
        t->cur = t->cand, t->cur_cap = t->cand_cap;
        t->cand = tmp, t->cand_cap = cap;
    }
    if (broken)
        return SEGMENT_NO_PATH;
    int64_t result = shifts + full_matrix(t);
    return align_trace(t) < 0 ? SEGMENT_NO_PATH : result;
}

static int64_t ter_segment(void *t, const int32_t *h, int64_t n, const int32_t *r, int64_t m)
{
    return ter_one(t, h, n, r, m);
}

static PyObject *ter_edits(PyObject *self, PyObject *args)
{
    Ter t = {0};
    return each_segment(args, ter_segment, &t, ter_free);
}

static PyMethodDef methods[] = {
    {"levenshtein", levenshtein, METH_VARARGS,
     "levenshtein(hyp_ids, hyp_offs, ref_ids, ref_offs, out): Levenshtein distance per "
     "segment (int32 ids, int64 offsets, int64 out)."},
    {"levenshtein_counts", levenshtein_counts, METH_VARARGS,
     "levenshtein_counts((hyp_ids, hyp_offs, ref_ids, ref_offs, out), counts[, steps, room]): "
     "hits, substitutions, deletions, insertions per segment (int64 nseg x 4) along rapidfuzz's "
     "alignment of reference to hypothesis; out gets the distance; steps (int8) the steps of "
     "segment k from room[k]."},
    {"ter_edits", ter_edits, METH_VARARGS,
     "ter_edits(hyp_ids, hyp_offs, ref_ids, ref_offs, out): TER edits (shifts + beam edit "
     "distance, sacrebleu's search) per segment."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_edkernel", "Compiled edit distances of TER and WER/CER.", -1, methods,
};

PyMODINIT_FUNC PyInit__edkernel(void) { return PyModule_Create(&module); }
