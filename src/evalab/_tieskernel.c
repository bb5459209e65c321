/* The inner loop of acc_eq with tie calibration on bootstrap resamples (no grouping).
 *
 * Pairs of rated cells are sorted by their absolute metric difference; pair p joins
 * segments first[p] and second[p] and changes the count of agreeing pairs by change[p]
 * (+1 or -1) once the tie threshold reaches its difference. On a resample that draws
 * segment s counts[s] times, the pair stands for counts[first] * counts[second] pairs of
 * the expanded sample, so the agreement gained by a threshold is a prefix sum of those
 * weighted changes. ends[p] marks the last pair of a run of equal differences: only
 * there is the prefix sum a threshold every pair of the run has passed. The answer per
 * resample is the largest prefix sum at an end, or 0 (the threshold 0).
 *
 * counts is laid out segment-major ([segments][resamples]) so that each pair reads two
 * contiguous rows of a block of resamples; the resample loop is innermost and vectorises
 * (an AVX2 clone is chosen at load time where the CPU has it). Counts and sums are int32:
 * the caller checks that no resample has 2^31 pairs or more, so every sum is exact.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* resamples handled together: their rows, sums and maxima stay in the L1/L2 caches */
#define BLOCK 256

__attribute__((target_clones("avx2", "default")))
static void curve_block(const int32_t *first, const int32_t *second, const int8_t *change,
                        const uint8_t *ends, Py_ssize_t n_pairs, const int32_t *counts,
                        Py_ssize_t n_resamples, Py_ssize_t b0, Py_ssize_t width, int32_t *out)
{
    int32_t acc[BLOCK], best[BLOCK];
    for (Py_ssize_t b = 0; b < width; b++) {
        acc[b] = 0;
        best[b] = 0;
    }
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        const int32_t *u = counts + (Py_ssize_t)first[p] * n_resamples + b0;
        const int32_t *v = counts + (Py_ssize_t)second[p] * n_resamples + b0;
        /* (w ^ m) - m is w or -w: the sign without a branch the CPU cannot predict */
        const int32_t m = change[p] > 0 ? 0 : -1;
        for (Py_ssize_t b = 0; b < width; b++)
            acc[b] += ((u[b] * v[b]) ^ m) - m;
        if (ends[p]) {
            for (Py_ssize_t b = 0; b < width; b++)
                best[b] = acc[b] > best[b] ? acc[b] : best[b];
        }
    }
    memcpy(out + b0, best, (size_t)width * sizeof(int32_t));
}

static PyObject *tie_curve_max(PyObject *self, PyObject *args)
{
    Py_buffer first, second, change, ends, counts;
    Py_ssize_t n_segments, n_resamples;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nn", &first, &second, &change, &ends, &counts,
                          &n_segments, &n_resamples))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n_pairs = first.len / (Py_ssize_t)sizeof(int32_t);
    if (second.len != first.len || change.len != n_pairs || ends.len != n_pairs ||
        counts.len != n_segments * n_resamples * (Py_ssize_t)sizeof(int32_t)) {
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
    result = PyBytes_FromStringAndSize(NULL, n_resamples * (Py_ssize_t)sizeof(int32_t));
    if (!result)
        goto done;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b0 = 0; b0 < n_resamples; b0 += BLOCK) {
        Py_ssize_t width = n_resamples - b0 < BLOCK ? n_resamples - b0 : BLOCK;
        curve_block(f, s, change.buf, ends.buf, n_pairs, counts.buf, n_resamples, b0, width, out);
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&first);
    PyBuffer_Release(&second);
    PyBuffer_Release(&change);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&counts);
    return result;
}

static PyMethodDef methods[] = {
    {"tie_curve_max", tie_curve_max, METH_VARARGS,
     "tie_curve_max(first, second, change, ends, counts, n_segments, n_resamples) -> bytes: "
     "per resample, the largest prefix sum at a run end (or 0) of change[p] * "
     "counts[first[p], b] * counts[second[p], b] (int32, int32, int8, uint8 buffers; "
     "counts int32 [segments][resamples]); int32 result."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tieskernel", "Compiled inner loop of tie-calibrated pairwise accuracy.", -1, methods,
};

PyMODINIT_FUNC PyInit__tieskernel(void)
{
    return PyModule_Create(&module);
}
