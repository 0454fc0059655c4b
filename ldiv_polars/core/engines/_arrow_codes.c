/* Compiled codes of a column read from its Arrow buffers: the dictionary encoding of a string
 * column's string views, and the indices of a dictionary (Enum) column (see
 * ldiv_polars/core/engines/arrow_codes.py, which checks the arguments and holds the Polars
 * path that gives the same codes without this module).
 *
 *   encode(chunks, ids[, seed[, limit]]) -> list of bytes | None
 *       Numbers the distinct strings of a string-view column (no nulls: the caller checks),
 *       given as chunks, a list of tuples (views, offset, n, buffers) each holding rows
 *       offset .. offset + n - 1 of one Arrow array, and writes each row's number to ids[r]
 *       (int64, the chunks' rows one after another): with seed (such a list holding distinct
 *       strings, or None) the seed's strings are numbers 0 .. len(seed) - 1 in its order,
 *       every other string gets the next free number at its first row. Returns the strings
 *       past the seed's, in the order of their numbers; None (ids unspecified) when they are
 *       more than limit (default: no limit).
 *   add_codes(chunks, seed, key, place, counts) -> bool
 *       The same numbers (seed required) added to a mixed-radix key instead of written:
 *       key[r] += number * place (int64) and counts[number] += 1 (int64, len(seed) cells).
 *       False, key and counts partly updated, as soon as a string is not one of the seed's.
 *   add_indices(chunks, key, place, counts) -> None
 *       The same for a dictionary column's indices, given as a list of tuples (indices
 *       buffer, offset, n, itemsize 1, 2 or 4: unsigned): key[r] += index * place and
 *       counts[index] += 1. An index past counts raises ValueError (key and counts then
 *       partly updated).
 *
 * views: the array's 16-byte views (Arrow's BinaryView layout: int32 length, then the bytes
 * themselves when at most 12, else a 4-byte prefix, int32 buffer index and int32 offset into
 * buffers[index]); buffers: a tuple of the array's data buffers. Anything readable through the
 * buffer protocol (pyarrow's Buffer, bytes, numpy). A view pointing outside its buffer, a
 * negative length, or a repeated seed string raises ValueError: nothing is read out of bounds.
 * Two strings get one number exactly when their bytes are equal (hash, then length and
 * a comparison of their bytes). The GIL is released while the rows are read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer views;
    Py_ssize_t offset, n, nbuf;
    Py_buffer *bufs;
} Views;

typedef struct {
    int32_t *slots;          /* number per slot, -1 empty */
    uint64_t mask;
    uint64_t *hash;          /* per number: hash, the Str's words and bytes */
    uint64_t *w0, *w1;
    const unsigned char **ptr;
    Py_ssize_t count, cap;
} Table;

enum { OK = 0, E_MEM = 1, E_VIEW = 2, E_SEED = 3, E_LIMIT = 4 };

static void views_release(Views *v) {
    Py_ssize_t i;
    if (v->views.obj) PyBuffer_Release(&v->views);
    for (i = 0; i < v->nbuf; i++)
        if (v->bufs[i].obj) PyBuffer_Release(&v->bufs[i]);
    PyMem_Free(v->bufs);
    v->bufs = NULL;
    v->nbuf = 0;
}

static void chunks_release(Views *v, Py_ssize_t k) {
    Py_ssize_t i;
    for (i = 0; i < k; i++) views_release(&v[i]);
    PyMem_Free(v);
}

static int views_get(Views *v, PyObject *views, Py_ssize_t offset, Py_ssize_t n,
                     PyObject *buffers) {
    Py_ssize_t i, nb;
    memset(v, 0, sizeof(*v));
    if (!PyTuple_Check(buffers)) {
        PyErr_SetString(PyExc_TypeError, "buffers must be a tuple");
        return -1;
    }
    if (offset < 0 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "offset and n must be >= 0");
        return -1;
    }
    if (PyObject_GetBuffer(views, &v->views, PyBUF_SIMPLE) < 0) return -1;
    if ((v->views.len / 16) < offset + n) {
        PyErr_SetString(PyExc_ValueError, "views buffer shorter than offset + n views");
        views_release(v);
        return -1;
    }
    v->offset = offset;
    v->n = n;
    nb = PyTuple_GET_SIZE(buffers);
    v->bufs = PyMem_Calloc(nb ? nb : 1, sizeof(Py_buffer));
    if (!v->bufs) {
        views_release(v);
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < nb; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(buffers, i), &v->bufs[i], PyBUF_SIMPLE) < 0) {
            v->nbuf = i;
            views_release(v);
            return -1;
        }
    }
    v->nbuf = nb;
    return 0;
}

/* A string as the kernel compares it: w0 and w1 the view's two words with the bytes past an
 * inline string's end zeroed (so equal inline strings have equal words, whatever the padding),
 * p and len its bytes; a longer string is compared by w0 (length and prefix) then its bytes. */
typedef struct {
    uint64_t w0, w1;
    const unsigned char *p;
    int32_t len;
} Str;

static inline uint64_t load8(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* String r of the views; E_VIEW when it points outside its buffer. */
static inline int view_str(const Views *v, Py_ssize_t r, Str *s) {
    const unsigned char *view = (const unsigned char *)v->views.buf + 16 * (v->offset + r);
    int32_t l, bi, off;
    memcpy(&l, view, 4);
    if (l < 0) return E_VIEW;
    s->len = l;
    s->w0 = load8(view);
    if (l <= 12) {
        s->p = view + 4;
        if (l < 4) {
            s->w0 &= (1ULL << (8 * (4 + l))) - 1;
            s->w1 = 0;
        } else {
            s->w1 = l == 12 ? load8(view + 8) : load8(view + 8) & ((1ULL << (8 * (l - 4))) - 1);
        }
        return OK;
    }
    s->w1 = 0;
    memcpy(&bi, view + 8, 4);
    memcpy(&off, view + 12, 4);
    if (bi < 0 || bi >= v->nbuf || off < 0 || (Py_ssize_t)off + l > v->bufs[bi].len)
        return E_VIEW;
    s->p = (const unsigned char *)v->bufs[bi].buf + off;
    return OK;
}

static inline uint64_t mix(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
}

/* A hash of the string's bytes (with its length): the two words of an inline string, else its
 * 8-byte words, the last one overlapping the one before (len > 12 >= 8). */
static inline uint64_t str_hash(const Str *s) {
    uint64_t h = mix(0x9E3779B97F4A7C15ULL, s->w0);
    int32_t i;
    if (s->len <= 12) {
        h = mix(h, s->w1);
    } else {
        for (i = 0; i + 8 < s->len; i += 8) h = mix(h, load8(s->p + i));
        h = mix(h, load8(s->p + s->len - 8));
    }
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* Whether two strings of the same length and w0 have the same bytes. */
static inline int str_rest_equal(const Str *a, const unsigned char *p, uint64_t w1) {
    int32_t i;
    if (a->len <= 12) return a->w1 == w1;
    for (i = 0; i + 8 < a->len; i += 8)
        if (load8(a->p + i) != load8(p + i)) return 0;
    return load8(a->p + a->len - 8) == load8(p + a->len - 8);
}

static void table_free(Table *t) {
    free(t->slots);
    free(t->hash);
    free(t->w0);
    free(t->w1);
    free(t->ptr);
}

static int table_init(Table *t, Py_ssize_t cap) {
    Py_ssize_t size = 16;
    memset(t, 0, sizeof(*t));
    while (size < 2 * cap) size *= 2;
    t->slots = malloc((size_t)size * sizeof(int32_t));
    t->hash = malloc((size_t)cap * sizeof(uint64_t));
    t->w0 = malloc((size_t)cap * sizeof(uint64_t));
    t->w1 = malloc((size_t)cap * sizeof(uint64_t));
    t->ptr = malloc((size_t)cap * sizeof(*t->ptr));
    if (!t->slots || !t->hash || !t->w0 || !t->w1 || !t->ptr) return E_MEM;
    memset(t->slots, 0xff, (size_t)size * sizeof(int32_t));
    t->mask = (uint64_t)size - 1;
    t->cap = cap;
    return OK;
}

/* Doubles the table (slots and entries) once it is half full. */
static int table_grow(Table *t) {
    Py_ssize_t cap = 2 * t->cap, j;
    uint64_t size = 2 * (t->mask + 1), s;
    int32_t *slots = malloc((size_t)size * sizeof(int32_t));
    uint64_t *hash = realloc(t->hash, (size_t)cap * sizeof(uint64_t));
    if (hash) t->hash = hash;
    uint64_t *w0 = realloc(t->w0, (size_t)cap * sizeof(uint64_t));
    if (w0) t->w0 = w0;
    uint64_t *w1 = realloc(t->w1, (size_t)cap * sizeof(uint64_t));
    if (w1) t->w1 = w1;
    const unsigned char **ptr = realloc(t->ptr, (size_t)cap * sizeof(*t->ptr));
    if (ptr) t->ptr = ptr;
    if (!slots || !hash || !w0 || !w1 || !ptr) {
        free(slots);
        return E_MEM;
    }
    memset(slots, 0xff, (size_t)size * sizeof(int32_t));
    for (j = 0; j < t->count; j++) {
        for (s = t->hash[j] & (size - 1); slots[s] >= 0; s = (s + 1) & (size - 1)) {}
        slots[s] = (int32_t)j;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    t->cap = cap;
    return OK;
}

/* The number of string x, added as the next number when new (*added set). */
static inline int table_find(Table *t, const Str *x, int64_t *id, int *added) {
    uint64_t h = str_hash(x), s;
    int32_t j;
    for (s = h & t->mask; (j = t->slots[s]) >= 0; s = (s + 1) & t->mask) {
        if (t->hash[j] == h && t->w0[j] == x->w0 && str_rest_equal(x, t->ptr[j], t->w1[j])) {
            *id = j;
            *added = 0;
            return OK;
        }
    }
    if (t->count >= INT32_MAX) return E_MEM;
    j = (int32_t)t->count++;
    t->slots[s] = j;
    t->hash[j] = h;
    t->w0[j] = x->w0;
    t->w1[j] = x->w1;
    t->ptr[j] = x->p;
    *id = j;
    *added = 1;
    if ((uint64_t)(2 * t->count) > t->mask + 1 || t->count >= t->cap) return table_grow(t);
    return OK;
}

static int encode_seed(Table *t, const Views *seed) {
    Py_ssize_t r;
    Str x;
    int64_t id;
    int added, e;
    for (r = 0; r < seed->n; r++) {
        if ((e = view_str(seed, r, &x)) != OK) return e;
        if ((e = table_find(t, &x, &id, &added)) != OK) return e;
        if (!added) return E_SEED;
    }
    return OK;
}

/* Where each row's number goes: ids[r] = id, or key[r] += id * place and counts[id] += 1
 * (those not NULL). */
typedef struct {
    int64_t *ids, *key, *counts, place;
} Out;

static int encode_rows(Table *t, const Views *v, Out o, Py_ssize_t limit) {
    Py_ssize_t r, nseed = t->count;
    Str x;
    int64_t id;
    int added, e;
    for (r = 0; r < v->n; r++) {
        if ((e = view_str(v, r, &x)) != OK) return e;
        if ((e = table_find(t, &x, &id, &added)) != OK) return e;
        if (added && t->count - nseed > limit) return E_LIMIT;
        if (o.ids) o.ids[r] = id;
        if (o.key) {
            o.key[r] += id * o.place;
            o.counts[id] += 1;
        }
    }
    return OK;
}

/* The strings of numbers nseed .. count - 1 as a list of bytes. */
static PyObject *new_strings(const Table *t, Py_ssize_t nseed) {
    Py_ssize_t j;
    PyObject *out = PyList_New(t->count - nseed), *b;
    if (!out) return NULL;
    for (j = nseed; j < t->count; j++) {
        b = PyBytes_FromStringAndSize((const char *)t->ptr[j], (Py_ssize_t)(int32_t)t->w0[j]);
        if (!b) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, j - nseed, b);
    }
    return out;
}

static int out_array(PyObject *obj, Py_buffer *b, Py_ssize_t n, const char *name) {
    if (PyObject_GetBuffer(obj, b, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) return -1;
    if (b->itemsize != 8 || b->ndim != 1 || b->len / 8 < n ||
        !(b->format[0] == 'q' || b->format[0] == 'l') || b->format[1] != '\0') {
        PyErr_Format(PyExc_ValueError, "%s must be a writable int64 array of >= n items",
                     name);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static int raise_code(int e) {
    if (e == E_MEM) PyErr_NoMemory();
    else if (e == E_VIEW) PyErr_SetString(PyExc_ValueError, "a string view outside its buffer");
    else if (e == E_SEED) PyErr_SetString(PyExc_ValueError, "the seed strings repeat");
    return e != OK && e != E_LIMIT;
}

/* The views of every chunk of a list of (views, offset, n, buffers) tuples (*count set);
 * NULL with an exception set. */
static Views *chunks_get(PyObject *chunks, Py_ssize_t *count, Py_ssize_t *rows) {
    Py_ssize_t i, k, off, n;
    PyObject *views, *buffers;
    Views *v;
    if (!PyList_Check(chunks)) {
        PyErr_SetString(PyExc_TypeError, "chunks must be a list of tuples");
        return NULL;
    }
    k = PyList_GET_SIZE(chunks);
    v = PyMem_Calloc(k ? k : 1, sizeof(Views));
    if (!v) return (Views *)PyErr_NoMemory();
    *rows = 0;
    for (i = 0; i < k; i++) {
        if (!PyArg_ParseTuple(PyList_GET_ITEM(chunks, i), "OnnO", &views, &off, &n, &buffers) ||
            views_get(&v[i], views, off, n, buffers) < 0) {
            chunks_release(v, i);
            return NULL;
        }
        *rows += n;
    }
    *count = k;
    return v;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    PyObject *chunks, *ids_obj, *seed_obj = Py_None, *result = NULL;
    Py_ssize_t k = 0, ks = 0, n = 0, sn = 0, limit = PY_SSIZE_T_MAX, i, at = 0;
    Views *v = NULL, *seed = NULL;
    Py_buffer ids = {0};
    Table t;
    int e = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO|On", &chunks, &ids_obj, &seed_obj, &limit)) return NULL;
    if (seed_obj != Py_None && !(seed = chunks_get(seed_obj, &ks, &sn))) return NULL;
    if (!(v = chunks_get(chunks, &k, &n))) goto done;
    if (out_array(ids_obj, &ids, n, "ids") < 0) goto done;
    Py_BEGIN_ALLOW_THREADS
    e = table_init(&t, sn + 64);
    for (i = 0; e == OK && i < ks; i++) e = encode_seed(&t, &seed[i]);
    for (i = 0; e == OK && i < k; at += v[i].n, i++) {
        Out o = {(int64_t *)ids.buf + at, NULL, NULL, 0};
        e = encode_rows(&t, &v[i], o, limit);
    }
    Py_END_ALLOW_THREADS
    if (e == E_LIMIT) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (!raise_code(e)) {
        result = new_strings(&t, sn);
    }
    table_free(&t);
    PyBuffer_Release(&ids);
done:
    if (v) chunks_release(v, k);
    if (seed) chunks_release(seed, ks);
    return result;
}

static PyObject *add_codes(PyObject *self, PyObject *args) {
    PyObject *chunks, *seed_obj, *key_obj, *counts_obj, *result = NULL;
    Py_ssize_t k = 0, ks = 0, n = 0, sn = 0, i, at = 0;
    long long place;
    Views *v = NULL, *seed = NULL;
    Py_buffer key = {0}, counts = {0};
    Table t;
    int e = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOLO", &chunks, &seed_obj, &key_obj, &place, &counts_obj))
        return NULL;
    if (!(seed = chunks_get(seed_obj, &ks, &sn))) return NULL;
    if (!(v = chunks_get(chunks, &k, &n))) goto done;
    if (out_array(key_obj, &key, n, "key") < 0 || out_array(counts_obj, &counts, sn, "counts") < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    e = table_init(&t, sn + 64);
    for (i = 0; e == OK && i < ks; i++) e = encode_seed(&t, &seed[i]);
    for (i = 0; e == OK && i < k; at += v[i].n, i++) {
        Out o = {NULL, (int64_t *)key.buf + at, (int64_t *)counts.buf, (int64_t)place};
        e = encode_rows(&t, &v[i], o, 0);
    }
    Py_END_ALLOW_THREADS
    if (!raise_code(e)) result = PyBool_FromLong(e == OK);
    table_free(&t);
done:
    if (key.obj) PyBuffer_Release(&key);
    if (counts.obj) PyBuffer_Release(&counts);
    if (v) chunks_release(v, k);
    chunks_release(seed, ks);
    return result;
}

/* key[r] += index * place, counts[index] += 1 over n indices of width w; E_VIEW on an index
 * past ncounts. */
static int add_index_rows(const unsigned char *p, int w, Py_ssize_t n, int64_t *key,
                          int64_t place, int64_t *counts, Py_ssize_t ncounts) {
    Py_ssize_t r;
    uint64_t x;
    for (r = 0; r < n; r++) {
        if (w == 1) x = p[r];
        else if (w == 2) x = ((const uint16_t *)p)[r];
        else x = ((const uint32_t *)p)[r];
        if (x >= (uint64_t)ncounts) return E_VIEW;
        key[r] += (int64_t)x * place;
        counts[x] += 1;
    }
    return OK;
}

static PyObject *add_indices(PyObject *self, PyObject *args) {
    PyObject *chunks, *key_obj, *counts_obj, *buf;
    Py_ssize_t k, i, at = 0, off, n, w, total = 0;
    long long place;
    Py_buffer key = {0}, counts = {0}, b;
    int e = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLO", &chunks, &key_obj, &place, &counts_obj)) return NULL;
    if (!PyList_Check(chunks)) {
        PyErr_SetString(PyExc_TypeError, "chunks must be a list of tuples");
        return NULL;
    }
    k = PyList_GET_SIZE(chunks);
    for (i = 0; i < k; i++) {
        if (!PyArg_ParseTuple(PyList_GET_ITEM(chunks, i), "Onnn", &buf, &off, &n, &w))
            return NULL;
        total += n;
    }
    if (out_array(key_obj, &key, total, "key") < 0) return NULL;
    if (out_array(counts_obj, &counts, 0, "counts") < 0) {
        PyBuffer_Release(&key);
        return NULL;
    }
    for (i = 0; e == OK && i < k; i++) {
        PyArg_ParseTuple(PyList_GET_ITEM(chunks, i), "Onnn", &buf, &off, &n, &w);
        if ((w != 1 && w != 2 && w != 4) || off < 0 || n < 0) {
            PyErr_SetString(PyExc_ValueError, "indices must be 1, 2 or 4 bytes wide");
            e = -1;
            break;
        }
        if (PyObject_GetBuffer(buf, &b, PyBUF_SIMPLE) < 0) {
            e = -1;
            break;
        }
        if (b.len / w < off + n) {
            PyErr_SetString(PyExc_ValueError, "indices buffer shorter than offset + n");
            e = -1;
        } else {
            Py_BEGIN_ALLOW_THREADS
            e = add_index_rows((const unsigned char *)b.buf + off * w, (int)w, n,
                               (int64_t *)key.buf + at, (int64_t)place, (int64_t *)counts.buf,
                               counts.len / 8);
            Py_END_ALLOW_THREADS
            if (e != OK) PyErr_SetString(PyExc_ValueError, "an index past the counts");
        }
        PyBuffer_Release(&b);
        at += n;
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&counts);
    if (e != OK) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS,
     "encode(chunks, ids[, seed[, limit]]) -> new strings (bytes) or None"},
    {"add_codes", add_codes, METH_VARARGS,
     "add_codes(chunks, seed, key, place, counts) -> whether every string is a seed's"},
    {"add_indices", add_indices, METH_VARARGS,
     "add_indices(chunks, key, place, counts) -> None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_arrow_codes",
                                    "Codes of a column read from its Arrow buffers.", -1, methods};

PyMODINIT_FUNC PyInit__arrow_codes(void) { return PyModule_Create(&module); }
