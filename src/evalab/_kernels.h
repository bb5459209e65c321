/* What every compiled kernel of evalab shares (included by _mtkernel.c, _rougekernel.c and
 * _tieskernel.c; setup.py lists it among their dependencies).
 *
 * FREE_ALL(a, b, ...) frees every pointer given and RELEASE_ALL(&x, &y, ...) releases every
 * buffer given (both accept NULL / never-filled ones, as free and PyBuffer_Release do), so a
 * function's exit path names what it owns once. GROW(ptr, count) resizes a PyMem array to
 * count elements: 0, or -1 with MemoryError set and ptr left as it was. KERNEL_MODULE(name, doc) defines the module
 * from the file's static `methods` table and opens its init function.
 */
#ifndef EVALAB_KERNELS_H
#define EVALAB_KERNELS_H

#include <Python.h>
#include <stdlib.h>

static inline void free_each(void **ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ptrs[i]);
}

static inline void release_each(Py_buffer **bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        PyBuffer_Release(bufs[i]);
}

#define FREE_ALL(...) \
    free_each((void *[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))

#define RELEASE_ALL(...)                               \
    release_each((Py_buffer *[]){__VA_ARGS__},         \
                 sizeof((Py_buffer *[]){__VA_ARGS__}) / sizeof(Py_buffer *))

#define GROW(ptr, count)                                                          \
    ({                                                                            \
        __typeof__(ptr) grown_ = PyMem_Realloc((ptr), sizeof *(ptr) * (size_t)(count)); \
        if (grown_)                                                               \
            (ptr) = grown_;                                                       \
        else                                                                      \
            PyErr_NoMemory();                                                     \
        grown_ ? 0 : -1;                                                          \
    })

#define KERNEL_MODULE(NAME, DOC)                                                     \
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, #NAME, DOC, -1, methods}; \
    PyMODINIT_FUNC PyInit_##NAME(void)

#endif
