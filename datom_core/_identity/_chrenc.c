/* The cv1 chr values payload of one Arrow string slice: each value's bytes, then a NUL.
 *
 * Why this exists: the payload is the value bytes with a NUL inserted after every value
 * (and a null value contributing only its NUL). Arrow and numpy have no kernel that
 * writes that layout in one pass: binary_join, binary_replace_slice and boolean-mask or
 * fancy-index scatters all pay a per-value dispatch of 9 ns or more, twice what SHA-256
 * costs for the same bytes. This loop pays about a nanosecond per short value, without
 * the GIL, so the hash (not the encoding) is what a string column costs.
 *
 * Python owns every buffer: ``datom_core._identity._chr`` allocates ``out`` (its
 * payload bytes plus SLICE_PAD), and falls back to the Arrow path when this module is
 * not built. The inputs are checked, so a malformed array is an error, never a read out
 * of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Short values are copied as one 16-byte block (one load, one store); the bytes written
 * past the value are overwritten by its NUL and the next value. */
#define BLOCK 16

typedef struct {
    const unsigned char *data;
    Py_ssize_t data_len;
    const unsigned char *validity; /* NULL: every value present */
    unsigned char *out;
    Py_ssize_t out_len;
} Slice;

static inline int present(const Slice *s, Py_ssize_t row) {
    return s->validity == NULL || (s->validity[row >> 3] >> (row & 7)) & 1;
}

/* Writes the payload of rows [start, start + count); returns its length, or -1 when a
 * present value's offsets are out of order or out of the data buffer, or when ``out`` is
 * too small. A null row is treated as an empty value at offset 0 without a branch (nulls
 * fall at random, and a mispredicted branch per null costs more than the copy), so the
 * offsets under null slots are never read as positions. The same body serves 32- and
 * 64-bit offsets. */
#define ENCODE_BODY(OFFSET_T)                                                              \
    const OFFSET_T *offsets = (const OFFSET_T *)offsets_raw;                               \
    unsigned char *o = s->out, *const end = s->out + s->out_len;                           \
    for (Py_ssize_t i = start; i < start + count; i++) {                                   \
        int64_t keep = -(int64_t)present(s, i); /* all ones or zero */                     \
        int64_t first = (int64_t)offsets[i] & keep;                                        \
        int64_t len = ((int64_t)offsets[i + 1] - (int64_t)offsets[i]) & keep;              \
        if (first < 0 || len < 0 || len > s->data_len - first || end - o < BLOCK + 1)      \
            return -1;                                                                     \
        if (len <= BLOCK && first + BLOCK <= s->data_len) {                                \
            memcpy(o, s->data + first, BLOCK);                                             \
        } else {                                                                           \
            if (end - o < len + BLOCK + 1) return -1;                                      \
            memcpy(o, s->data + first, (size_t)len);                                       \
        }                                                                                  \
        o += len;                                                                          \
        *o++ = 0;                                                                          \
    }                                                                                      \
    return o - s->out;

static Py_ssize_t encode32(const Slice *s, const void *offsets_raw, Py_ssize_t start,
                           Py_ssize_t count) {
    ENCODE_BODY(int32_t)
}

static Py_ssize_t encode64(const Slice *s, const void *offsets_raw, Py_ssize_t start,
                           Py_ssize_t count) {
    ENCODE_BODY(int64_t)
}

PyDoc_STRVAR(values_doc,
             "values(out, offsets, data, validity, start, count, wide) -> int\n\n"
             "Write the chr values payload of rows [start, start + count) of a string array\n"
             "into the writable buffer ``out`` and return its length. ``offsets`` holds\n"
             "int32 (or int64 when ``wide``) offsets into ``data``; ``validity`` is the\n"
             "Arrow bitmap (bit ``row`` set: present) or None. ``out`` needs the payload\n"
             "length plus 16 bytes. Raises ValueError on malformed input.");

static PyObject *values(PyObject *module, PyObject *args) {
    Py_buffer out, offsets, data, validity;
    Py_ssize_t start, count;
    int wide;
    if (!PyArg_ParseTuple(args, "w*y*y*z*nnp", &out, &offsets, &data, &validity, &start,
                          &count, &wide))
        return NULL;
    Py_ssize_t width = wide ? 8 : 4, written = -1;
    int ok = start >= 0 && count >= 0 && (start + count + 1) * width <= offsets.len &&
             (validity.buf == NULL || (start + count + 7) / 8 <= validity.len);
    if (ok) {
        Slice s = {data.buf, data.len, validity.buf, out.buf, out.len};
        Py_BEGIN_ALLOW_THREADS
        written = wide ? encode64(&s, offsets.buf, start, count)
                       : encode32(&s, offsets.buf, start, count);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    PyBuffer_Release(&validity);
    if (written < 0) {
        PyErr_SetString(PyExc_ValueError, "malformed string array or output buffer too small");
        return NULL;
    }
    return PyLong_FromSsize_t(written);
}

static PyMethodDef methods[] = {
    {"values", values, METH_VARARGS, values_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chrenc", "The cv1 chr values encoder (see the source).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__chrenc(void) { return PyModule_Create(&module); }
