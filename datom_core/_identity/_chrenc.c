/* The cv1 chr values payload of one Arrow string slice: each value's bytes, then a NUL.
 *
 * Why this exists: the payload is the value bytes with a NUL inserted after every value
 * (and a missing value contributing only its NUL). Arrow and numpy have no kernel that
 * writes that layout in one pass: binary_join, binary_replace_slice and boolean-mask or
 * fancy-index scatters all pay a per-value dispatch of 9 ns or more, twice what SHA-256
 * costs for the same bytes, and a dictionary must first be decoded (another copy). This
 * loop pays about a nanosecond per short value, without the GIL, for offset strings and
 * for dictionaries of them alike, so the hash (not the encoding) is what a string column
 * costs.
 *
 * Python owns every buffer: ``datom_core._identity._chr`` allocates ``out`` (a bound on
 * the payload plus 16 bytes) and falls back to the Arrow path when this module is not
 * built. The inputs are checked, so a malformed array is an error, never a read out of
 * bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Short values are copied as one 16-byte block (one load, one store); the bytes written
 * past the value are overwritten by its NUL and the next value. */
#define BLOCK 16

/* Values starting in the last BLOCK bytes of the data cannot be copied as a block; when
 * the data is small (the levels of a dictionary of codes), most values do, so small data
 * is first copied into a padded buffer on the stack. */
#define SMALL_DATA 4096

typedef struct {
    const void *offsets;           /* int32 or int64: value k is data[offsets[k]:offsets[k+1]] */
    Py_ssize_t nvalues;            /* values the offsets describe */
    const unsigned char *data;
    Py_ssize_t data_len;
    Py_ssize_t readable;           /* bytes from data on that can be read: data_len or more */
    const unsigned char *validity; /* NULL: every row present; else row i is bit bit_offset+i */
    Py_ssize_t bit_offset;
    const int64_t *indices;        /* NULL: row i is value i; else row i is value indices[i] */
    Py_ssize_t rows;
    unsigned char *out;
    Py_ssize_t out_len;
} Slice;

static inline int64_t present(const Slice *s, Py_ssize_t row) {
    if (s->validity == NULL) return 1;
    Py_ssize_t bit = s->bit_offset + row;
    return (s->validity[bit >> 3] >> (bit & 7)) & 1;
}

/* Writes the payload and returns its length, or -1 when a present row names a value out
 * of range, whose offsets are out of order or out of the data buffer, or when ``out`` is
 * too small. A missing row is encoded with its position and length masked to 0, without
 * a branch (missing rows fall at random, and a mispredicted branch costs more than the
 * copy): what a null slot holds (bytes, a stale index) is never used. FIND_VALUE sets
 * ``first`` and ``len`` of row i's value; the loop serves 32- and 64-bit offsets, rows
 * that are values and rows that index them. */
#define ENCODE_BODY(OFFSET_T, FIND_VALUE)                                                  \
    const OFFSET_T *offsets = (const OFFSET_T *)s->offsets;                                \
    unsigned char *o = s->out, *const end = s->out + s->out_len;                           \
    int64_t next = (int64_t)offsets[0], first, len;                                        \
    for (Py_ssize_t i = 0; i < s->rows; i++) {                                             \
        int64_t keep = -present(s, i); /* all ones or zero */                              \
        FIND_VALUE                                                                         \
        first &= keep;                                                                     \
        len &= keep;                                                                       \
        if (first < 0 || len < 0 || len > s->data_len - first || end - o < BLOCK + 1)      \
            return -1;                                                                     \
        if (len <= BLOCK && first + BLOCK <= s->readable) {                                   \
            memcpy(o, s->data + first, BLOCK);                                             \
        } else {                                                                           \
            if (end - o < len + BLOCK + 1) return -1;                                      \
            memcpy(o, s->data + first, (size_t)len);                                       \
        }                                                                                  \
        o += len;                                                                          \
        *o++ = 0;                                                                          \
    }                                                                                      \
    (void)next;                                                                            \
    return o - s->out;

/* Row i is value i: its start is the previous row's end. */
#define ROW_IS_VALUE                                                                       \
    first = next;                                                                          \
    next = (int64_t)offsets[i + 1];                                                        \
    len = next - first;

/* Row i is value indices[i] (a missing row's index is masked to value 0). */
#define ROW_INDEXES_VALUE                                                                  \
    int64_t k = s->indices[i] & keep;                                                      \
    if ((uint64_t)k >= (uint64_t)s->nvalues) return -1;                                    \
    first = (int64_t)offsets[k];                                                           \
    len = (int64_t)offsets[k + 1] - first;

static Py_ssize_t encode32(const Slice *s) { ENCODE_BODY(int32_t, ROW_IS_VALUE) }
static Py_ssize_t encode64(const Slice *s) { ENCODE_BODY(int64_t, ROW_IS_VALUE) }
static Py_ssize_t lookup32(const Slice *s) { ENCODE_BODY(int32_t, ROW_INDEXES_VALUE) }
static Py_ssize_t lookup64(const Slice *s) { ENCODE_BODY(int64_t, ROW_INDEXES_VALUE) }

PyDoc_STRVAR(values_doc,
             "values(out, offsets, data, wide, validity, bit_offset, indices) -> int\n\n"
             "Write the chr values payload of a string slice into the writable buffer\n"
             "``out`` and return its length. ``offsets`` holds the n+1 int32 (int64 when\n"
             "``wide``) offsets of n values in ``data``. Row i is value i, or value\n"
             "``indices[i]`` (int64) for a dictionary; it is missing when bit\n"
             "``bit_offset + i`` of the Arrow bitmap ``validity`` is clear (None: no row\n"
             "is). ``out`` needs the payload length plus 16 bytes. Raises ValueError on\n"
             "malformed input.");

static PyObject *values(PyObject *module, PyObject *args) {
    Py_buffer out, offsets, data, validity, indices;
    Py_ssize_t bit_offset;
    int wide;
    if (!PyArg_ParseTuple(args, "w*y*y*pz*nz*", &out, &offsets, &data, &wide, &validity,
                          &bit_offset, &indices))
        return NULL;
    Py_ssize_t width = wide ? 8 : 4, written = -1;
    Slice s = {offsets.buf, offsets.len / width - 1, data.buf, data.len, data.len, validity.buf,
               bit_offset, indices.buf, 0, out.buf, out.len};
    s.rows = s.indices ? indices.len / (Py_ssize_t)sizeof(int64_t) : s.nvalues;
    int ok = offsets.len % width == 0 && indices.len % (Py_ssize_t)sizeof(int64_t) == 0 &&
             s.nvalues >= 0 && bit_offset >= 0 &&
             (s.validity == NULL || (bit_offset + s.rows + 7) / 8 <= validity.len);
    unsigned char padded[SMALL_DATA + BLOCK] = {0};
    if (ok && data.len <= SMALL_DATA) {
        memcpy(padded, data.buf, (size_t)data.len);
        s.data = padded;
        s.readable = data.len + BLOCK;
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        if (s.indices)
            written = wide ? lookup64(&s) : lookup32(&s);
        else
            written = wide ? encode64(&s) : encode32(&s);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    PyBuffer_Release(&validity);
    PyBuffer_Release(&indices);
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
