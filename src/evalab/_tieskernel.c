/* The inner loops of the meta-evaluation's pair statistics: acc_eq with tie calibration
 * on bootstrap resamples with no grouping (tie_curve_max; first_at_least, band_pairs and
 * merge_runs build its pairs) and grouped by item (item_curve_best), on permutation trials
 * grouped by item (swapped_curve_max); Kendall's τ_b counts on bootstrap weights
 * (weighted_inversions) and on permutation trials (swapped_tau_counts). Each gives its
 * numpy fallback's numbers exactly: integer counts, or the same floating-point sums in
 * the same order.
 *
 * tie_curve_max:
 *
 * Pairs of rated cells are sorted by their absolute metric difference; pair p joins
 * segments first[p] and second[p] and changes the count of agreeing pairs by change[p]
 * (+1 or -1, or their sum for the pairs of one run merged by merge_runs) once the tie
 * threshold reaches its difference. On a resample that draws
 * segment s counts[s] times, the pair stands for counts[first] * counts[second] pairs of
 * the expanded sample, so the agreement gained by a threshold is a prefix sum of those
 * weighted changes. ends[p] marks the last pair of a run of equal differences: only
 * there is the prefix sum a threshold every pair of the run has passed. The answer per
 * resample is the largest prefix sum at an end, or 0 (the threshold 0).
 *
 * counts is laid out segment-major ([segments][resamples]); the kernel copies it into
 * passes of 128 resamples ([pass][segments][128], zero padded and 64-byte aligned), so a
 * pair reads two aligned 128-byte rows and every pass is a full one (a padding lane sums 0
 * and is dropped; the maxima start at 0). The pairs go in chunks of CHUNK, every pass over
 * a chunk before the next, so they come from memory once and from the cache for the other
 * passes; a pass's sums and maxima stay in registers through a chunk and wait in memory
 * between chunks. Where the CPU has AVX-512 VNNI (checked at run time) a pass is
 * curve_pass_vnni: change * u in 16 bits (exact: |change| <= 128, u < 256), then vpdpwssd
 * adds (change * u) * v to int32 sums, 16 resamples a register. Elsewhere curve_lanes goes
 * 64 resamples at a time in plain C that vectorises (an AVX-512 or AVX2 clone chosen at
 * load time). Counts are bytes (a pass's rows, segments x 128 bytes, stay in the L2 cache)
 * and sums int32: the caller checks that every count is below 256 and that no resample
 * has 2^31 pairs or more, so every sum is exact, and both paths give the same integers.
 */
#define PY_SSIZE_T_CLEAN
#include "_kernels.h"
#include <stdint.h>
#include <string.h>

/* resamples per pass: the copy of counts is laid out [pass][segments][PASS] (zero padded,
 * 64-byte aligned), so a pass reads one contiguous block of segments x PASS bytes and every
 * load is one aligned cache line */
#define PASS 128
/* the portable pass goes LANES resamples at a time, sums and maxima in registers */
#define LANES 64
/* pairs per chunk: every pass runs over one chunk before the next is read, so the pairs
 * come from memory once, and from the cache for the other passes */
#ifndef CHUNK
#define CHUNK 65536
#endif

/* the hot loops are built for AVX-512, AVX2 and plain x86-64, chosen at load time; the
 * "arch=" clone needs GCC 12 (an older GCC builds the other two, another compiler one) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define HOT_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HOT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HOT_CLONES
#endif

/* LANES resamples from lane b0 of a pass (rows: the pass's block) over a chunk of pairs;
 * state holds their sums then maxima, in resample order, from one chunk to the next */
HOT_CLONES
static void curve_lanes(const int32_t *first, const int32_t *second, const int8_t *change,
                        const uint8_t *ends, Py_ssize_t n_pairs, const uint8_t *rows,
                        Py_ssize_t b0, int32_t *state)
{
    int32_t acc[LANES], best[LANES];
    memcpy(acc, state, sizeof(acc));
    memcpy(best, state + LANES, sizeof(best));
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        const uint8_t *u = rows + (Py_ssize_t)first[p] * PASS + b0;
        const uint8_t *v = rows + (Py_ssize_t)second[p] * PASS + b0;
        const int32_t m = change[p];
        for (int b = 0; b < LANES; b++)
            acc[b] += m * (int32_t)(uint16_t)((uint16_t)u[b] * (uint16_t)v[b]);
        if (ends[p]) {
            for (int b = 0; b < LANES; b++)
                best[b] = acc[b] > best[b] ? acc[b] : best[b];
        }
    }
    memcpy(state, acc, sizeof(acc));
    memcpy(state + LANES, best, sizeof(best));
}

#if defined(__x86_64__) && defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 9)
#include <immintrin.h>
#define HAVE_VNNI_PASS 1

/* A pass's PASS resamples in AVX-512 VNNI over a chunk of pairs, the 128 sums and maxima in
 * 16 registers (state: them from one chunk to the next). Lane 4k + r of a 64-byte half
 * sits in dword k of the sum for residue r: vpshufb puts byte r of each dword of v alone in
 * word 0 (r < 2) or 1 of that dword, a = change * u in 16 bits (|change * u| <= 128 * 255,
 * exact) has u's byte r in the same word, so vpdpwssd adds change * u * v and nothing
 * else: the same int32 sums. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
curve_pass_vnni(const int32_t *first, const int32_t *second, const int8_t *change,
                const uint8_t *ends, Py_ssize_t n_pairs, const uint8_t *rows, int32_t *state)
{
#define Z (char)0x80
    /* per dword: byte 0 / 1 / 2 / 3 alone, in word 0 (bytes 0, 1) or word 1 (byte 2, 3) */
    const __m512i pick0 =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, Z, Z, Z, 4, Z, Z, Z, 8, Z, Z, Z, 12, Z, Z, Z));
    const __m512i pick1 =
        _mm512_broadcast_i32x4(_mm_setr_epi8(1, Z, Z, Z, 5, Z, Z, Z, 9, Z, Z, Z, 13, Z, Z, Z));
    const __m512i pick2 =
        _mm512_broadcast_i32x4(_mm_setr_epi8(Z, Z, 2, Z, Z, Z, 6, Z, Z, Z, 10, Z, Z, Z, 14, Z));
    const __m512i pick3 =
        _mm512_broadcast_i32x4(_mm_setr_epi8(Z, Z, 3, Z, Z, Z, 7, Z, Z, Z, 11, Z, Z, Z, 15, Z));
    /* per dword: bytes 1 and 3 zero-extended to words (bytes 0 and 2: the mask even) */
    const __m512i odd =
        _mm512_broadcast_i32x4(_mm_setr_epi8(1, Z, 3, Z, 5, Z, 7, Z, 9, Z, 11, Z, 13, Z, 15, Z));
#undef Z
    const __m512i even = _mm512_set1_epi16(0x00ff);
#define LOAD(i) _mm512_loadu_si512((const void *)(state + 16 * (i)))
    __m512i a0 = LOAD(0), a1 = LOAD(1), a2 = LOAD(2), a3 = LOAD(3), a4 = LOAD(4), a5 = LOAD(5),
            a6 = LOAD(6), a7 = LOAD(7);
    __m512i m0 = LOAD(8), m1 = LOAD(9), m2 = LOAD(10), m3 = LOAD(11), m4 = LOAD(12),
            m5 = LOAD(13), m6 = LOAD(14), m7 = LOAD(15);
#undef LOAD
/* one 64-byte half: its 64 sums in s0 .. s3 */
#define HALF(off, s0, s1, s2, s3)                                                          \
    do {                                                                                   \
        const __m512i uu = _mm512_load_si512((const void *)(u + (off)));                   \
        const __m512i vv = _mm512_load_si512((const void *)(v + (off)));                   \
        const __m512i ae = _mm512_mullo_epi16(_mm512_and_si512(uu, even), m);              \
        const __m512i ao = _mm512_mullo_epi16(_mm512_shuffle_epi8(uu, odd), m);            \
        s0 = _mm512_dpwssd_epi32(s0, ae, _mm512_shuffle_epi8(vv, pick0));                  \
        s1 = _mm512_dpwssd_epi32(s1, ao, _mm512_shuffle_epi8(vv, pick1));                  \
        s2 = _mm512_dpwssd_epi32(s2, ae, _mm512_shuffle_epi8(vv, pick2));                  \
        s3 = _mm512_dpwssd_epi32(s3, ao, _mm512_shuffle_epi8(vv, pick3));                  \
    } while (0)
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        const uint8_t *u = rows + (Py_ssize_t)first[p] * PASS;
        const uint8_t *v = rows + (Py_ssize_t)second[p] * PASS;
        const __m512i m = _mm512_set1_epi16(change[p]);
        HALF(0, a0, a1, a2, a3);
        HALF(64, a4, a5, a6, a7);
        if (ends[p]) {
            m0 = _mm512_max_epi32(m0, a0);
            m1 = _mm512_max_epi32(m1, a1);
            m2 = _mm512_max_epi32(m2, a2);
            m3 = _mm512_max_epi32(m3, a3);
            m4 = _mm512_max_epi32(m4, a4);
            m5 = _mm512_max_epi32(m5, a5);
            m6 = _mm512_max_epi32(m6, a6);
            m7 = _mm512_max_epi32(m7, a7);
        }
    }
#undef HALF
    const __m512i all[16] = {a0, a1, a2, a3, a4, a5, a6, a7, m0, m1, m2, m3, m4, m5, m6, m7};
    for (int i = 0; i < 16; i++)
        _mm512_storeu_si512((void *)(state + 16 * i), all[i]);
}

/* the maxima of a pass's state in resample order */
static void vnni_best(const int32_t *state, int32_t *best)
{
    for (int h = 0; h < 2; h++)
        for (int r = 0; r < 4; r++)
            for (int k = 0; k < 16; k++)
                best[64 * h + 4 * k + r] = state[16 * (8 + 4 * h + r) + k];
}
#endif

static PyObject *tie_curve_max(PyObject *self, PyObject *args)
{
    Py_buffer first, second, change, ends, counts;
    Py_ssize_t n_segments, n_resamples;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nn", &first, &second, &change, &ends, &counts,
                          &n_segments, &n_resamples))
        return NULL;
    PyObject *result = NULL;
    uint8_t *blocked = NULL;
    int32_t *states = NULL;
    Py_ssize_t n_pairs = first.len / (Py_ssize_t)sizeof(int32_t);
    if (n_segments < 0 || n_resamples < 0 || second.len != first.len || change.len != n_pairs ||
        ends.len != n_pairs || counts.len != n_segments * n_resamples) {
        PyErr_SetString(PyExc_ValueError, "tie_curve_max: buffer sizes do not match");
        goto done;
    }
    const int32_t *f = first.buf, *s = second.buf;
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        if (f[p] < 0 || f[p] >= n_segments || s[p] < 0 || s[p] >= n_segments) {
            PyErr_SetString(PyExc_ValueError, "tie_curve_max: segment index out of range");
            goto done;
        }
    }
    const Py_ssize_t n_pass = (n_resamples + PASS - 1) / PASS;
    const size_t block = (size_t)n_segments * PASS;
    /* a pass's state: PASS sums, then PASS maxima */
    blocked = PyMem_Malloc((size_t)n_pass * block + 64);
    states = PyMem_Calloc((size_t)(n_pass > 0 ? n_pass : 1) * 2 * PASS, sizeof(int32_t));
    result = PyBytes_FromStringAndSize(NULL, n_resamples * (Py_ssize_t)sizeof(int32_t));
    if (!blocked || !states || !result) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    uint8_t *rows = blocked + (64 - (uintptr_t)blocked % 64) % 64;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *c = counts.buf;
    const int8_t *ch = change.buf;
    const uint8_t *e = ends.buf;
    /* every pass's rows, zero padded: a padding lane sums 0 and is dropped */
    memset(rows, 0, (size_t)n_pass * block);
    for (Py_ssize_t q = 0; q < n_pass; q++) {
        const Py_ssize_t b0 = q * PASS;
        const Py_ssize_t width = n_resamples - b0 < PASS ? n_resamples - b0 : PASS;
        for (Py_ssize_t g = 0; g < n_segments; g++)
            memcpy(rows + q * block + g * PASS, c + g * n_resamples + b0, (size_t)width);
    }
#if defined(HAVE_VNNI_PASS) && !defined(TIES_PORTABLE_PASS)
    const int vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512vnni");
#endif
    for (Py_ssize_t p0 = 0; p0 < n_pairs; p0 += CHUNK) {
        const Py_ssize_t n = n_pairs - p0 < CHUNK ? n_pairs - p0 : CHUNK;
        for (Py_ssize_t q = 0; q < n_pass; q++) {
            int32_t *state = states + q * 2 * PASS;
#if defined(HAVE_VNNI_PASS) && !defined(TIES_PORTABLE_PASS)
            if (vnni) {
                curve_pass_vnni(f + p0, s + p0, ch + p0, e + p0, n, rows + q * block, state);
                continue;
            }
#endif
            for (Py_ssize_t b = 0; b < PASS; b += LANES)
                curve_lanes(f + p0, s + p0, ch + p0, e + p0, n, rows + q * block, b,
                            state + 2 * b);
        }
    }
    for (Py_ssize_t q = 0; q < n_pass; q++) {
        const Py_ssize_t b0 = q * PASS;
        const Py_ssize_t width = n_resamples - b0 < PASS ? n_resamples - b0 : PASS;
        const int32_t *state = states + q * 2 * PASS;
        int32_t best[PASS];
#if defined(HAVE_VNNI_PASS) && !defined(TIES_PORTABLE_PASS)
        if (vnni)
            vnni_best(state, best);
        else
#endif
            for (Py_ssize_t b = 0; b < PASS; b += LANES)
                memcpy(best + b, state + 2 * b + LANES, LANES * sizeof(int32_t));
        memcpy(out + b0, best, (size_t)width * sizeof(int32_t));
    }
    Py_END_ALLOW_THREADS
done:
    PyMem_Free(blocked);
    PyMem_Free(states);
    RELEASE_ALL(&first, &second, &change, &ends, &counts);
    return result;
}

/* acc_eq by item of the permutation test's pseudo-metrics (ties.acc_eq_grouped_swapped).
 *
 * A pair of systems in a segment has four candidate differences (which metric each cell
 * came from), sorted once: candidate m belongs to pair of_pair[m], is the candidate with
 * code which[m] and adds steps[m] to the accuracy curve once active; ends[m] marks the
 * last candidate of a run of equal differences. Trial t activates, for every pair, the
 * candidate whose code is codes[t][pair]. The answer per trial is the largest running sum
 * at an end, or 0: the inactive candidates add 0.0, and the sum runs in candidate order,
 * so it is the numpy fallback's cumulative sum, addition for addition.
 */
#define TRIALS 8

static PyObject *swapped_curve_max(PyObject *self, PyObject *args)
{
    Py_buffer steps, which, of_pair, ends, codes;
    Py_ssize_t n_trials, n_pairs;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nn", &steps, &which, &of_pair, &ends, &codes,
                          &n_trials, &n_pairs))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n_cand = steps.len / (Py_ssize_t)sizeof(double);
    if (which.len != n_cand || ends.len != n_cand ||
        of_pair.len != n_cand * (Py_ssize_t)sizeof(int32_t) || n_trials < 0 || n_pairs < 0 ||
        codes.len != n_trials * n_pairs) {
        PyErr_SetString(PyExc_ValueError, "swapped_curve_max: buffer sizes do not match");
        goto done;
    }
    const int32_t *pair = of_pair.buf;
    for (Py_ssize_t m = 0; m < n_cand; m++) {
        if (pair[m] < 0 || pair[m] >= n_pairs) {
            PyErr_SetString(PyExc_ValueError, "swapped_curve_max: pair index out of range");
            goto done;
        }
    }
    result = PyBytes_FromStringAndSize(NULL, n_trials * (Py_ssize_t)sizeof(double));
    if (!result)
        goto done;
    double *out = (double *)PyBytes_AS_STRING(result);
    const double *st = steps.buf;
    const int8_t *wh = which.buf, *code = codes.buf;
    const uint8_t *end = ends.buf;
    Py_BEGIN_ALLOW_THREADS
    /* TRIALS trials at a time: their sums are independent chains of additions, each in
     * candidate order, so the CPU overlaps them and every sum is the one-at-a-time sum */
    for (Py_ssize_t t0 = 0; t0 < n_trials; t0 += TRIALS) {
        const Py_ssize_t width = n_trials - t0 < TRIALS ? n_trials - t0 : TRIALS;
        double acc[TRIALS] = {0.0}, best[TRIALS] = {0.0};
        for (Py_ssize_t m = 0; m < n_cand; m++) {
            const int8_t *col = code + t0 * n_pairs + pair[m];
            for (Py_ssize_t t = 0; t < width; t++)
                acc[t] += col[t * n_pairs] == wh[m] ? st[m] : 0.0;
            if (end[m]) {
                for (Py_ssize_t t = 0; t < width; t++)
                    best[t] = acc[t] > best[t] ? acc[t] : best[t];
            }
        }
        for (Py_ssize_t t = 0; t < width; t++)
            out[t0 + t] = best[t];
    }
    Py_END_ALLOW_THREADS
done:
    RELEASE_ALL(&steps, &which, &of_pair, &ends, &codes);
    return result;
}

/* The pairs of one band of metric differences (flat_ties.flat_pairs with no grouping).
 *
 * Cells are sorted by metric score xs (ys human scores, seg their compact segments); cell
 * i pairs with every j in [start[i], stop[i]), so dx = xs[j] - xs[i] >= 0. Each pair that
 * agrees at threshold 0 (dx > 0 and dy > 0, or dx == 0 and dy == 0) adds 1 to
 * agree[lo * n_seg + hi] (lo <= hi its two segments); each pair that moves once the
 * threshold reaches dx (dx > 0 and dy >= 0) is written out, i-major and j ascending: its
 * segments lo and hi, its change (+1 human tie, -1 concordant) and dx.
 */
static PyObject *band_pairs(PyObject *self, PyObject *args)
{
    Py_buffer xs, ys, seg, start, stop, agree;
    Py_ssize_t n_seg;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*n", &xs, &ys, &seg, &start, &stop, &agree, &n_seg))
        return NULL;
    PyObject *result = NULL, *lo_b = NULL, *hi_b = NULL, *step_b = NULL, *dx_b = NULL;
    Py_ssize_t n = xs.len / (Py_ssize_t)sizeof(double), total = 0;
    const int64_t *a = start.buf, *z = stop.buf;
    const int32_t *sg = seg.buf;
    int ok = ys.len == xs.len && seg.len == n * (Py_ssize_t)sizeof(int32_t) &&
             start.len == n * (Py_ssize_t)sizeof(int64_t) && stop.len == start.len &&
             agree.len == n_seg * n_seg * (Py_ssize_t)sizeof(int64_t);
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        ok = a[i] >= 0 && a[i] <= z[i] && z[i] <= n && (a[i] == z[i] || a[i] > i) &&
             sg[i] >= 0 && sg[i] < n_seg;
        total += ok ? z[i] - a[i] : 0;
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "band_pairs: buffer sizes or indices do not match");
        goto done;
    }
    lo_b = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(int32_t));
    hi_b = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(int32_t));
    step_b = PyBytes_FromStringAndSize(NULL, total);
    dx_b = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(double));
    if (!lo_b || !hi_b || !step_b || !dx_b)
        goto done;
    int32_t *lo = (int32_t *)PyBytes_AS_STRING(lo_b), *hi = (int32_t *)PyBytes_AS_STRING(hi_b);
    int8_t *step = (int8_t *)PyBytes_AS_STRING(step_b);
    double *dxo = (double *)PyBytes_AS_STRING(dx_b);
    const double *x = xs.buf, *y = ys.buf;
    int64_t *ag = agree.buf;
    Py_ssize_t k = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        for (int64_t j = a[i]; j < z[i]; j++) {
            double dx = x[j] - x[i], dy = y[j] - y[i];
            int32_t s = sg[i], t = sg[j];
            int32_t l = s < t ? s : t, h = s < t ? t : s;
            if (dx > 0 ? dy > 0 : dy == 0)
                ag[(Py_ssize_t)l * n_seg + h] += 1;
            if (dx > 0 && dy >= 0) {
                lo[k] = l;
                hi[k] = h;
                step[k] = dy == 0 ? 1 : -1;
                dxo[k] = dx;
                k++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (_PyBytes_Resize(&lo_b, k * (Py_ssize_t)sizeof(int32_t)) < 0 ||
        _PyBytes_Resize(&hi_b, k * (Py_ssize_t)sizeof(int32_t)) < 0 ||
        _PyBytes_Resize(&step_b, k) < 0 ||
        _PyBytes_Resize(&dx_b, k * (Py_ssize_t)sizeof(double)) < 0)
        goto done;
    result = Py_BuildValue("(OOOO)", lo_b, hi_b, step_b, dx_b);
done:
    Py_XDECREF(lo_b);
    Py_XDECREF(hi_b);
    Py_XDECREF(step_b);
    Py_XDECREF(dx_b);
    RELEASE_ALL(&xs, &ys, &seg, &start, &stop, &agree);
    return result;
}

/* Kendall's τ_b counts of the permutation test's pseudo-metrics (correlation.kendall_tau_b_swapped).
 *
 * Cell i of trial t takes xw[i] when swap[t][i] ^ side, else xb[i]; cls[i] is the class of
 * its human score (0 .. n_cls - 1). ob and ow are the cells sorted by (xb, cls) and by
 * (xw, cls): a trial's cells sorted by (value, cls) are the merge of the cells of ob that
 * take xb and those of ow that take xw, so each trial costs one linear pass. Along it, per
 * trial: tied[t] the pairs with equal values, tied_xy[t] those also in one class, and
 * dis[t] the pairs i before j with cls[i] > cls[j] and a smaller value (a Fenwick tree over
 * the classes counts the cells of higher classes seen). Exact int64 counts.
 */
static int64_t fenwick_upto(const int64_t *tree, Py_ssize_t c)
{
    int64_t total = 0;
    for (Py_ssize_t i = c + 1; i > 0; i -= i & -i)
        total += tree[i];
    return total;
}

static void swapped_counts_row(const double *xb, const double *xw, const int32_t *cls,
                               const int64_t *ob, const int64_t *ow, const uint8_t *row,
                               int side, Py_ssize_t n, Py_ssize_t n_cls, int64_t *tree,
                               int64_t *out)
{
    memset(tree, 0, (size_t)(n_cls + 1) * sizeof(int64_t));
    Py_ssize_t a = 0, b = 0, seen = 0;
    int64_t tied = 0, tied_xy = 0, dis = 0, run = 0, run_xy = 0;
    double last = 0.0;
    int32_t last_c = -1;
    for (;;) {
        while (a < n && (row[ob[a]] ^ side))
            a++;
        while (b < n && !(row[ow[b]] ^ side))
            b++;
        if (a == n && b == n)
            break;
        double v;
        int32_t c;
        int from_b = a == n;
        if (!from_b && b < n) {
            double va = xb[ob[a]], vb = xw[ow[b]];
            from_b = vb < va || (vb == va && cls[ow[b]] < cls[ob[a]]);
        }
        if (from_b) {
            v = xw[ow[b]];
            c = cls[ow[b]];
            b++;
        } else {
            v = xb[ob[a]];
            c = cls[ob[a]];
            a++;
        }
        if (seen > 0 && v == last) {
            tied += run++;
            if (c == last_c)
                tied_xy += run_xy++;
            else
                run_xy = 1;
        } else {
            run = run_xy = 1;
        }
        last = v;
        last_c = c;
        dis += seen - fenwick_upto(tree, c);
        for (Py_ssize_t i = c + 1; i <= n_cls; i += i & -i)
            tree[i] += 1;
        seen++;
    }
    out[0] = tied;
    out[1] = tied_xy;
    out[2] = dis;
}

static PyObject *swapped_tau_counts(PyObject *self, PyObject *args)
{
    Py_buffer xb, xw, cls, ob, ow, swap;
    Py_ssize_t n_cls, n_trials;
    int side;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*nni", &xb, &xw, &cls, &ob, &ow, &swap, &n_cls,
                          &n_trials, &side))
        return NULL;
    PyObject *result = NULL;
    int64_t *tree = NULL;
    Py_ssize_t n = xb.len / (Py_ssize_t)sizeof(double);
    int ok = xw.len == xb.len && cls.len == n * (Py_ssize_t)sizeof(int32_t) &&
             ob.len == n * (Py_ssize_t)sizeof(int64_t) && ow.len == ob.len && n_cls >= 1 &&
             n_trials >= 0 && swap.len == n_trials * n && (side == 0 || side == 1);
    const int32_t *cl = cls.buf;
    const int64_t *pb = ob.buf, *pw = ow.buf;
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = cl[i] >= 0 && cl[i] < n_cls && pb[i] >= 0 && pb[i] < n && pw[i] >= 0 && pw[i] < n;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "swapped_tau_counts: buffer sizes or indices do not match");
        goto done;
    }
    tree = PyMem_Malloc((size_t)(n_cls + 1) * sizeof(int64_t));
    result = PyBytes_FromStringAndSize(NULL, 3 * n_trials * (Py_ssize_t)sizeof(int64_t));
    if (!tree || !result) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    int64_t *out = (int64_t *)PyBytes_AS_STRING(result);
    const uint8_t *rows = swap.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < n_trials; t++)
        swapped_counts_row(xb.buf, xw.buf, cl, pb, pw, rows + t * n, side, n, n_cls, tree,
                           out + 3 * t);
    Py_END_ALLOW_THREADS
done:
    PyMem_Free(tree);
    RELEASE_ALL(&xb, &xw, &cls, &ob, &ow, &swap);
    return result;
}

/* acc_eq by item on bootstrap resamples (ties.acc_eq_grouped with weights).
 *
 * Moving pair m of group group[m] adds w[b][group[m]] * step[m] to resample b's curve
 * once ε reaches its difference; ends[m] marks the last pair of a run of equal
 * differences. The curve's values are start[b] (ε = 0) and start[b] + the running sum at
 * each end, the sum taken in pair order with one product and one addition a pair, as
 * numpy's cumsum of the products does (no fused multiply-add: fp-contract is off). The
 * best value is the first one within 1e-12 * (largest |value| of every resample) of its
 * resample's maximum (the smallest ε), so a first pass finds the maxima and a second the
 * first value that reaches each. Per resample: the index of that value among
 * [start, ends...] and the value.
 */
typedef struct {
    const double *w, *step, *start;
    const int32_t *group;
    const uint8_t *ends;
    Py_ssize_t n_pairs, n_groups;
} ItemCurve;

__attribute__((optimize("fp-contract=off")))
static double item_curve_scan(const ItemCurve *c, Py_ssize_t b, double floor, int64_t *index,
                              double *absmax)
{
    const double *w = c->w + b * c->n_groups, start = c->start[b];
    double acc = 0.0, best = start, big = start < 0 ? -start : start;
    int64_t at = 0, seen = 0;
    if (floor <= start) {
        *index = 0;
        return start;
    }
    for (Py_ssize_t m = 0; m < c->n_pairs; m++) {
        const double add = w[c->group[m]] * c->step[m];
        acc = m == 0 ? add : acc + add;
        if (!c->ends[m])
            continue;
        const double v = start + acc;
        seen++;
        if (v >= floor) {
            *index = seen;
            return v;
        }
        if (v > best) {
            best = v;
            at = seen;
        }
        big = (v < 0 ? -v : v) > big ? (v < 0 ? -v : v) : big;
    }
    *index = at;
    *absmax = big;
    return best;
}

static PyObject *item_curve_best(PyObject *self, PyObject *args)
{
    Py_buffer w, step, start, group, ends;
    Py_ssize_t n_resamples, n_groups;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nn", &w, &step, &start, &group, &ends, &n_resamples,
                          &n_groups))
        return NULL;
    PyObject *result = NULL, *index_b = NULL, *value_b = NULL;
    Py_ssize_t n_pairs = step.len / (Py_ssize_t)sizeof(double);
    int ok = n_resamples >= 0 && n_groups >= 0 &&
             w.len == n_resamples * n_groups * (Py_ssize_t)sizeof(double) &&
             start.len == n_resamples * (Py_ssize_t)sizeof(double) &&
             group.len == n_pairs * (Py_ssize_t)sizeof(int32_t) && ends.len == n_pairs;
    const int32_t *g = group.buf;
    for (Py_ssize_t m = 0; ok && m < n_pairs; m++)
        ok = g[m] >= 0 && g[m] < n_groups;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "item_curve_best: buffer sizes or indices do not match");
        goto done;
    }
    index_b = PyBytes_FromStringAndSize(NULL, n_resamples * (Py_ssize_t)sizeof(int64_t));
    value_b = PyBytes_FromStringAndSize(NULL, n_resamples * (Py_ssize_t)sizeof(double));
    if (!index_b || !value_b)
        goto done;
    int64_t *index = (int64_t *)PyBytes_AS_STRING(index_b);
    double *value = (double *)PyBytes_AS_STRING(value_b);
    ItemCurve c = {w.buf, step.buf, start.buf, g, ends.buf, n_pairs, n_groups};
    Py_BEGIN_ALLOW_THREADS
    double absmax = 0.0;
    for (Py_ssize_t b = 0; b < n_resamples; b++) {  /* pass 1: each maximum (floor +inf) */
        double big = 0.0;
        value[b] = item_curve_scan(&c, b, Py_HUGE_VAL, &index[b], &big);
        absmax = big > absmax ? big : absmax;
    }
    const double tol = 1e-12 * absmax;
    for (Py_ssize_t b = 0; b < n_resamples; b++) {  /* pass 2: the first value reaching it */
        double unused;
        value[b] = item_curve_scan(&c, b, value[b] - tol, &index[b], &unused);
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(OO)", index_b, value_b);
done:
    Py_XDECREF(index_b);
    Py_XDECREF(value_b);
    RELEASE_ALL(&w, &step, &start, &group, &ends);
    return result;
}

/* The pairs of one band sorted by difference and merged (flat_ties.flat_pairs).
 *
 * order sorts the band's pairs by dx. Within a run of equal differences the order of the
 * pairs is never read, so pairs of one run that join the same two segments (lo, hi) act
 * as one pair whose change is the sum of theirs: a run's pairs are sorted by lo * n_seg +
 * hi and each key's net change written out (none for 0; a net beyond +-127 as entries of
 * +-127 and the rest, so that it fits a byte), the last entry of the run marked as its
 * end (a run that nets 0 everywhere leaves the curve where it was and has no entry).
 * Along the way the full data's curve (unweighted, over the pairs as they are) is
 * followed from (run, best, threshold): its running sum and first strict maximum at an
 * end. Returns (entries written, run, best, threshold).
 */
typedef struct {
    int64_t key;
    int32_t step;
} Keyed;

static int keyed_cmp(const void *a, const void *b)
{
    int64_t x = ((const Keyed *)a)->key, y = ((const Keyed *)b)->key;
    return (x > y) - (x < y);
}

static void keyed_sort(Keyed *v, Py_ssize_t n)
{
    if (n > 24) {
        qsort(v, (size_t)n, sizeof(Keyed), keyed_cmp);
        return;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        Keyed t = v[i];
        Py_ssize_t j = i;
        for (; j > 0 && v[j - 1].key > t.key; j--)
            v[j] = v[j - 1];
        v[j] = t;
    }
}

typedef struct {
    int32_t *first, *second;
    int8_t *change;
    uint8_t *ends;
    Py_ssize_t k;
} MergedOut;

/* the net changes of one run, keys sorted: entries written, the last one marked */
static void write_run(Keyed *v, Py_ssize_t n, MergedOut *o)
{
    Py_ssize_t before = o->k;
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t j = i;
        int64_t net = 0;
        for (; j < n && v[j].key == v[i].key; j++)
            net += v[j].step;
        for (int64_t left = net; left != 0;) {
            int64_t part = left > 127 ? 127 : left < -127 ? -127 : left;
            o->first[o->k] = (int32_t)(v[i].key >> 32);
            o->second[o->k] = (int32_t)(v[i].key & 0xffffffff);
            o->change[o->k] = (int8_t)part;
            o->ends[o->k] = 0;
            o->k++;
            left -= part;
        }
        i = j;
    }
    if (o->k > before)
        o->ends[o->k - 1] = 1;
}

static PyObject *merge_runs(PyObject *self, PyObject *args)
{
    Py_buffer lo, hi, step, dx, order, first, second, change, ends;
    Py_ssize_t n_seg;
    long long run, best;
    double threshold;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nw*w*w*w*LLd", &lo, &hi, &step, &dx, &order, &n_seg,
                          &first, &second, &change, &ends, &run, &best, &threshold))
        return NULL;
    PyObject *result = NULL;
    Keyed *buf = NULL;
    Py_ssize_t n = step.len;
    const int32_t *l = lo.buf, *h = hi.buf;
    const int64_t *ord = order.buf;
    int ok = lo.len == n * (Py_ssize_t)sizeof(int32_t) && hi.len == lo.len &&
             dx.len == n * (Py_ssize_t)sizeof(double) && order.len == n * (Py_ssize_t)sizeof(int64_t) &&
             first.len >= n * (Py_ssize_t)sizeof(int32_t) && second.len >= first.len &&
             change.len >= n && ends.len >= n && n_seg > 0;
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = ord[i] >= 0 && ord[i] < n && l[i] >= 0 && l[i] < n_seg && h[i] >= 0 && h[i] < n_seg;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "merge_runs: buffer sizes or indices do not match");
        goto done;
    }
    buf = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Keyed));
    if (!buf) {
        PyErr_NoMemory();
        goto done;
    }
    MergedOut o = {first.buf, second.buf, change.buf, ends.buf, 0};
    const double *d = dx.buf;
    const int8_t *st = step.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t a = 0; a < n;) {
        const double at = d[ord[a]];
        Py_ssize_t b = a;
        for (; b < n && d[ord[b]] == at; b++) {
            Py_ssize_t p = ord[b];
            buf[b - a].key = (int64_t)l[p] << 32 | h[p]; /* in the order of lo * n_seg + hi */
            buf[b - a].step = st[p];
            run += st[p];
        }
        if (run > best) { /* strictly: the first maximum keeps the smallest threshold */
            best = run;
            threshold = at;
        }
        keyed_sort(buf, b - a);
        write_run(buf, b - a, &o);
        a = b;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nLLd)", o.k, run, best, threshold);
done:
    PyMem_Free(buf);
    RELEASE_ALL(&lo, &hi, &step, &dx, &order, &first, &second, &change, &ends);
    return result;
}

/* Per cell i of the sorted xs, the first j > i with xs[j] - xs[i] >= t, or n
 * (cell_pairs._first_at_least). The computed difference grows with xs[j] and shrinks with
 * xs[i] (rounding is monotone), so the answer never decreases with i: one sweep.
 */
static PyObject *first_at_least(PyObject *self, PyObject *args)
{
    Py_buffer xs;
    double t;
    if (!PyArg_ParseTuple(args, "y*d", &xs, &t))
        return NULL;
    Py_ssize_t n = xs.len / (Py_ssize_t)sizeof(double);
    PyObject *result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (result) {
        const double *x = xs.buf;
        int64_t *out = (int64_t *)PyBytes_AS_STRING(result);
        Py_ssize_t j = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            j = j > i + 1 ? j : i + 1;
            while (j < n && !(x[j] - x[i] >= t))
                j++;
            out[i] = j;
        }
    }
    PyBuffer_Release(&xs);
    return result;
}

/* Weighted inversions of ranks for every weight column (correlation._inversions).
 *
 * Items in order, ranks[i] in 0 .. n_ranks - 1, w [items][columns] int64: per column b,
 * the sum over pairs i < j with ranks[i] > ranks[j] of w[i][b] * w[j][b]. A Fenwick tree
 * per column over the ranks holds the weight seen so far; the columns of a tree node are
 * contiguous, so every step is a loop over the columns. Exact int64 sums.
 */
HOT_CLONES
static void inversions_columns(const int64_t *ranks, const int64_t *w, Py_ssize_t n,
                               Py_ssize_t n_ranks, Py_ssize_t cols, int64_t *tree,
                               int64_t *seen, int64_t *upto, int64_t *out)
{
    memset(tree, 0, (size_t)((n_ranks + 1) * cols) * sizeof(int64_t));
    memset(seen, 0, (size_t)cols * sizeof(int64_t));
    memset(out, 0, (size_t)cols * sizeof(int64_t));
    for (Py_ssize_t j = 0; j < n; j++) {
        const int64_t *wj = w + j * cols;
        memset(upto, 0, (size_t)cols * sizeof(int64_t));
        for (Py_ssize_t k = ranks[j] + 1; k > 0; k -= k & -k) {
            const int64_t *node = tree + k * cols;
            for (Py_ssize_t b = 0; b < cols; b++)
                upto[b] += node[b];
        }
        for (Py_ssize_t b = 0; b < cols; b++) {
            out[b] += wj[b] * (seen[b] - upto[b]);
            seen[b] += wj[b];
        }
        for (Py_ssize_t k = ranks[j] + 1; k <= n_ranks; k += k & -k) {
            int64_t *node = tree + k * cols;
            for (Py_ssize_t b = 0; b < cols; b++)
                node[b] += wj[b];
        }
    }
}

static PyObject *weighted_inversions(PyObject *self, PyObject *args)
{
    Py_buffer ranks, w;
    Py_ssize_t n_ranks, cols;
    if (!PyArg_ParseTuple(args, "y*y*nn", &ranks, &w, &n_ranks, &cols))
        return NULL;
    PyObject *result = NULL;
    int64_t *tree = NULL, *seen = NULL, *upto = NULL;
    Py_ssize_t n = ranks.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *r = ranks.buf;
    int ok = n_ranks >= 1 && cols >= 0 && w.len == n * cols * (Py_ssize_t)sizeof(int64_t);
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = r[i] >= 0 && r[i] < n_ranks;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "weighted_inversions: buffer sizes or ranks do not match");
        goto done;
    }
    tree = PyMem_Malloc((size_t)((n_ranks + 1) * cols + 1) * sizeof(int64_t));
    seen = PyMem_Malloc((size_t)(cols + 1) * sizeof(int64_t));
    upto = PyMem_Malloc((size_t)(cols + 1) * sizeof(int64_t));
    result = PyBytes_FromStringAndSize(NULL, cols * (Py_ssize_t)sizeof(int64_t));
    if (!tree || !seen || !upto || !result) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    int64_t *out = (int64_t *)PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    inversions_columns(r, w.buf, n, n_ranks, cols, tree, seen, upto, out);
    Py_END_ALLOW_THREADS
done:
    PyMem_Free(tree);
    PyMem_Free(seen);
    PyMem_Free(upto);
    RELEASE_ALL(&ranks, &w);
    return result;
}

static PyMethodDef methods[] = {
    {"tie_curve_max", tie_curve_max, METH_VARARGS,
     "tie_curve_max(first, second, change, ends, counts, n_segments, n_resamples) -> bytes: "
     "per resample, the largest prefix sum at a run end (or 0) of change[p] * "
     "counts[first[p], b] * counts[second[p], b] (int32, int32, int8, uint8 buffers; "
     "counts uint8 [segments][resamples]); int32 result."},
    {"band_pairs", band_pairs, METH_VARARGS,
     "band_pairs(xs, ys, seg, start, stop, agree, n_seg) -> (lo, hi, change, dx) bytes: the "
     "moving pairs of cells i, j in [start[i], stop[i]) (float64, float64, int32, int64, int64 "
     "buffers), counting the pairs agreeing at threshold 0 into agree (int64 [n_seg * n_seg])."},
    {"swapped_curve_max", swapped_curve_max, METH_VARARGS,
     "swapped_curve_max(steps, which, of_pair, ends, codes, n_trials, n_pairs) -> bytes: "
     "per trial, the largest running sum at an end (or 0) of steps[m] where "
     "codes[t][of_pair[m]] == which[m] (float64, int8, int32, uint8 buffers; codes int8 "
     "[trials][pairs]); float64 result."},
    {"swapped_tau_counts", swapped_tau_counts, METH_VARARGS,
     "swapped_tau_counts(xb, xw, cls, ob, ow, swap, n_cls, n_trials, side) -> bytes: per "
     "trial (cell i takes xw[i] where swap[t][i] ^ side), the pairs tied in value, tied in "
     "value and class, and discordant (float64, float64, int32, int64, int64 buffers; swap "
     "uint8 [trials][cells]); int64 [trials][3] result."},
    {"item_curve_best", item_curve_best, METH_VARARGS,
     "item_curve_best(w, step, start, group, ends, n_resamples, n_groups) -> (index, value) "
     "bytes: per resample, the first value of [start[b], start[b] + running sums at the ends "
     "of w[b][group[m]] * step[m]] within 1e-12 * (largest |value|) of its maximum (float64 "
     "w [resamples][groups], step, start; int32 group; uint8 ends); int64 and float64 "
     "results."},
    {"merge_runs", merge_runs, METH_VARARGS,
     "merge_runs(lo, hi, step, dx, order, n_seg, first, second, change, ends, run, best, "
     "threshold) -> (written, run, best, threshold): the band's pairs in the order of dx, "
     "merged by segments within each run of equal dx, written into first, second, change, "
     "ends (int32, int32, int8, uint8); the full data's curve followed on."},
    {"first_at_least", first_at_least, METH_VARARGS,
     "first_at_least(xs, t) -> bytes: per cell i of the sorted float64 xs, the first j > i "
     "with xs[j] - xs[i] >= t, or len(xs); int64 result."},
    {"weighted_inversions", weighted_inversions, METH_VARARGS,
     "weighted_inversions(ranks, w, n_ranks, cols) -> bytes: per column b, the sum over "
     "i < j with ranks[i] > ranks[j] of w[i][b] * w[j][b] (int64 ranks, int64 w "
     "[items][cols]); int64 result."},
    {NULL, NULL, 0, NULL},
};

KERNEL_MODULE(_tieskernel, "Compiled inner loop of tie-calibrated pairwise accuracy.")
{
    return PyModule_Create(&module);
}
