/* Compiled codes of a column read from its Arrow buffers: the dictionary encoding of a string
 * column's string views, and the indices of a dictionary (Enum) column (see
 * ldiv_polars/core/engines/arrow_codes.py, which checks the arguments and holds the Polars
 * path that gives the same codes without this module).
 *
 * A column is passed as an Arrow C stream capsule (``Series.__arrow_c_stream__()``, the Arrow
 * PyCapsule interface: zero-copy, one array per chunk, no pyarrow): string views (format
 * "vu") or a dictionary with unsigned 8-, 16- or 32-bit indices ("C", "S", "I"); no nulls
 * (the caller checks). The stream is consumed (moved out of the capsule) and released here.
 *
 *   encode(column, ids[, seed[, limit]]) -> list of bytes | None
 *       Numbers the distinct strings of a string column and writes each row's number to
 *       ids[r] (int64): with seed (a string column of distinct strings, or None) the seed's
 *       strings are numbers 0 .. len(seed) - 1 in its order, every other string gets the
 *       next free number at its first row. Returns the strings past the seed's, in the order
 *       of their numbers; None (ids unspecified) when they are more than limit (default: no
 *       limit).
 *   add_codes(column, seed, key, place, counts) -> bool
 *       The same numbers (seed required) added to a mixed-radix key instead of written:
 *       key[r] += number * place (int64) and counts[number] += 1 (int64, len(seed) cells).
 *       False, key and counts partly updated, as soon as a string is not one of the seed's.
 *   add_indices(column, key, place, counts) -> None
 *       The same for a dictionary column's indices: key[r] += index * place and
 *       counts[index] += 1; an index past counts raises ValueError (key and counts then
 *       partly updated).
 *   add_table(column, table, low, key, place, counts) -> bool
 *       The same for a plain integer column (8 to 64 bits, signed, or unsigned up to 32) and
 *       its values' codes table[v - low] (int64, -1: none): False, key and counts partly
 *       updated, at a value outside the table or without a code.
 *
 * A view (Arrow's BinaryView layout: int32 length, then the bytes themselves when at most 12,
 * else a 4-byte prefix, int32 buffer index and int32 offset into that data buffer, whose size
 * the stream's variadic sizes give) pointing outside its buffer, a negative length, an
 * out-of-line view whose prefix is not its bytes' first 4, or a repeated seed string raises
 * ValueError: nothing is read out of bounds. A stream of another
 * layout (format, a chunk with nulls or without its buffers, consumed already) raises
 * TypeError before anything is written: the caller then takes Polars' path. Two strings get
 * one number exactly when their bytes are equal (hash, then length and a comparison of their
 * bytes). The GIL is released while the rows are read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    void (*release)(struct ArrowArrayStream *);
    void *private_data;
};
#endif

/* One chunk of string views: rows offset .. offset + n - 1 of views, nbuf data buffers. */
typedef struct {
    const unsigned char *views;
    Py_ssize_t offset, n, nbuf;
    const unsigned char *const *bufs;
    const int64_t *buflen;
} Views;

/* A column consumed from its stream: its chunks (kept until closed) and, for strings, their
 * views; for indices, their width in bytes. */
typedef struct {
    struct ArrowArrayStream stream;
    struct ArrowArray *arrays;
    Views *views;
    Py_ssize_t k, rows;
    int width;
} Column;

typedef struct {
    int32_t *slots;          /* number per slot, -1 empty */
    uint64_t mask;
    uint64_t *hash;          /* per number: hash, the Str's words and bytes */
    uint64_t *w0, *w1;
    const unsigned char **ptr;
    Py_ssize_t count, cap;
} Table;

enum { OK = 0, E_MEM = 1, E_VIEW = 2, E_SEED = 3, E_LIMIT = 4 };

static void column_close(Column *c) {
    Py_ssize_t i;
    for (i = 0; i < c->k; i++)
        if (c->arrays[i].release) c->arrays[i].release(&c->arrays[i]);
    PyMem_Free(c->arrays);
    PyMem_Free(c->views);
    if (c->stream.release) c->stream.release(&c->stream);
    memset(c, 0, sizeof(*c));
}

/* A stream the kernel does not read (before anything is written): TypeError. */
static int fail(Column *c, const char *why) {
    PyErr_SetString(PyExc_TypeError, why);
    column_close(c);
    return -1;
}

/* The width of a column's elements: 16 for string views, 1/2/4 for dictionary indices
 * (unsigned); with ints, a plain integer column's: +-1/2/4/8 (negative: signed). */
static int format_width(const struct ArrowSchema *schema, int ints) {
    const char *f = schema->format;
    if (!f || (schema->dictionary == NULL && !ints)) return f && strcmp(f, "vu") == 0 ? 16 : 0;
    if (!f[0] || f[1] || (schema->dictionary != NULL) == ints) return 0;
    switch (f[0]) {
        case 'C': return 1;
        case 'S': return 2;
        case 'I': return 4;
        case 'c': return ints ? -1 : 0;
        case 's': return ints ? -2 : 0;
        case 'i': return ints ? -4 : 0;
        case 'l': return ints ? -8 : 0;
        default: return 0;
    }
}

/* Checks chunk a (no nulls; the buffers its format needs) and, for strings, its views. */
static int chunk_views(const struct ArrowArray *a, int width, Views *v) {
    int64_t nd;
    if (a->length < 0 || a->offset < 0 || a->n_buffers < 1
        || (a->null_count != 0 && a->buffers[0] != NULL))
        return -1;
    if (width != 16) return a->n_buffers == 2 && (a->length == 0 || a->buffers[1]) ? 0 : -1;
    if (a->n_buffers < 3) return -1;
    nd = a->n_buffers - 3;  /* validity, views, data buffers..., variadic sizes */
    if ((a->length && !a->buffers[1]) || (nd && !a->buffers[a->n_buffers - 1])) return -1;
    v->views = a->buffers[1];
    v->offset = (Py_ssize_t)a->offset;
    v->n = (Py_ssize_t)a->length;
    v->nbuf = (Py_ssize_t)nd;
    v->bufs = (const unsigned char *const *)(a->buffers + 2);
    v->buflen = a->buffers[a->n_buffers - 1];
    return 0;
}

/* Moves the stream out of the capsule and reads its chunks; want: 16 (strings), 0 (any
 * dictionary index width) or 1 (any integer width). -1 with an exception set. */
static int column_open(PyObject *capsule, int want, Column *c) {
    struct ArrowArrayStream *src;
    struct ArrowSchema schema;
    struct ArrowArray a;
    Py_ssize_t cap = 0;
    memset(c, 0, sizeof(*c));
    src = PyCapsule_GetPointer(capsule, "arrow_array_stream");
    if (!src) return -1;
    if (!src->release) {
        PyErr_SetString(PyExc_TypeError, "the stream was consumed already");
        return -1;
    }
    c->stream = *src;
    src->release = NULL;  /* moved: released by column_close */
    if (c->stream.get_schema(&c->stream, &schema) != 0) return fail(c, "no schema");
    c->width = format_width(&schema, want == 1);
    schema.release(&schema);
    if (c->width == 0 || (want == 16) != (c->width == 16))
        return fail(c, "not a column of string views or dictionary indices");
    for (;;) {
        if (c->stream.get_next(&c->stream, &a) != 0) return fail(c, "the stream failed");
        if (!a.release) break;
        if (c->k == cap) {
            struct ArrowArray *arrays;
            Views *views;
            cap = 2 * cap + 4;
            arrays = PyMem_Realloc(c->arrays, (size_t)cap * sizeof(*arrays));
            if (arrays) c->arrays = arrays;
            views = PyMem_Realloc(c->views, (size_t)cap * sizeof(*views));
            if (views) c->views = views;
            if (!arrays || !views) {
                a.release(&a);
                column_close(c);
                PyErr_NoMemory();
                return -1;
            }
        }
        c->arrays[c->k] = a;
        memset(&c->views[c->k], 0, sizeof(Views));
        c->k++;
        if (chunk_views(&a, c->width, &c->views[c->k - 1]) < 0)
            return fail(c, "a chunk with nulls or without its buffers");
        c->rows += (Py_ssize_t)a.length;
    }
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

/* String r of the views; E_VIEW when it points outside its buffer, or its prefix is not the
 * first 4 of its bytes (a malformed view: two equal strings could otherwise get two numbers). */
static inline int view_str(const Views *v, Py_ssize_t r, Str *s) {
    const unsigned char *view = v->views + 16 * (v->offset + r);
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
    if (bi < 0 || bi >= v->nbuf || off < 0 || (int64_t)off + l > v->buflen[bi] || !v->bufs[bi])
        return E_VIEW;
    s->p = v->bufs[bi] + off;
    /* w0 holds the prefix, which the comparisons trust: it must be the bytes' own */
    if (memcmp(view + 4, s->p, 4) != 0) return E_VIEW;
    return OK;
}

/* A hash of the string's bytes (with its length): independent products of its words (the two
 * of an inline string, else its 8-byte words, the last one overlapping the one before:
 * len > 12 >= 8), summed, then mixed (MurmurHash3's fmix64) so that every bit reaches the low
 * bits the table reads: a product carries a word's high bytes to its high bits only, and
 * strings differing in their last bytes alone (codes, numbered labels) would otherwise share
 * one probe chain. */
static inline uint64_t str_hash(const Str *s) {
    uint64_t h = s->w0 * 0x9E3779B97F4A7C15ULL, k = 0xff51afd7ed558ccdULL;
    int32_t i;
    if (s->len <= 12) {
        h += s->w1 * k;
    } else {
        for (i = 0; i + 8 < s->len; i += 8, k += 0x9E3779B97F4A7C16ULL) h += load8(s->p + i) * k;
        h += load8(s->p + s->len - 8) * 0xc4ceb9fe1a85ec53ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* Whether a string of more than 12 bytes has the bytes at p (of its length). */
static inline int str_rest_equal(const Str *a, const unsigned char *p) {
    int32_t i;
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
        /* an inline string is its two words; a longer one its length, prefix and bytes */
        if (t->w0[j] == x->w0 && (x->len <= 12 ? t->w1[j] == x->w1
                                  : t->hash[j] == h && str_rest_equal(x, t->ptr[j]))) {
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

/* Numbers rows of one chunk into o; E_LIMIT once more than limit strings past the nseed
 * seed strings are numbered (over every chunk so far). */
static int encode_rows(Table *t, const Views *v, Out o, Py_ssize_t nseed, Py_ssize_t limit) {
    Py_ssize_t r;
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
    else if (e == E_VIEW)
        PyErr_SetString(PyExc_ValueError,
                        "a string view outside its buffer, or whose prefix is not its bytes'");
    else if (e == E_SEED) PyErr_SetString(PyExc_ValueError, "the seed strings repeat");
    return e != OK && e != E_LIMIT;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    PyObject *col_obj, *ids_obj, *seed_obj = Py_None, *result = NULL;
    Py_ssize_t limit = PY_SSIZE_T_MAX, i, at = 0;
    Column v = {0}, seed = {0};
    Py_buffer ids = {0};
    Table t;
    int e = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO|On", &col_obj, &ids_obj, &seed_obj, &limit)) return NULL;
    if (seed_obj != Py_None && column_open(seed_obj, 16, &seed) < 0) return NULL;
    if (column_open(col_obj, 16, &v) < 0) goto done;
    if (out_array(ids_obj, &ids, v.rows, "ids") < 0) goto done;
    Py_BEGIN_ALLOW_THREADS
    e = table_init(&t, seed.rows + 64);
    for (i = 0; e == OK && i < seed.k; i++) e = encode_seed(&t, &seed.views[i]);
    for (i = 0; e == OK && i < v.k; at += v.views[i].n, i++) {
        Out o = {(int64_t *)ids.buf + at, NULL, NULL, 0};
        e = encode_rows(&t, &v.views[i], o, seed.rows, limit);
    }
    Py_END_ALLOW_THREADS
    if (e == E_LIMIT) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (!raise_code(e)) {
        result = new_strings(&t, seed.rows);
    }
    table_free(&t);
    PyBuffer_Release(&ids);
done:
    column_close(&v);
    column_close(&seed);
    return result;
}

static PyObject *add_codes(PyObject *self, PyObject *args) {
    PyObject *col_obj, *seed_obj, *key_obj, *counts_obj, *result = NULL;
    Py_ssize_t i, at = 0;
    long long place;
    Column v = {0}, seed = {0};
    Py_buffer key = {0}, counts = {0};
    Table t;
    int e = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOLO", &col_obj, &seed_obj, &key_obj, &place, &counts_obj))
        return NULL;
    if (column_open(seed_obj, 16, &seed) < 0) return NULL;
    if (column_open(col_obj, 16, &v) < 0) goto done;
    if (out_array(key_obj, &key, v.rows, "key") < 0 ||
        out_array(counts_obj, &counts, seed.rows, "counts") < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    e = table_init(&t, seed.rows + 64);
    for (i = 0; e == OK && i < seed.k; i++) e = encode_seed(&t, &seed.views[i]);
    for (i = 0; e == OK && i < v.k; at += v.views[i].n, i++) {
        Out o = {NULL, (int64_t *)key.buf + at, (int64_t *)counts.buf, (int64_t)place};
        e = encode_rows(&t, &v.views[i], o, seed.rows, 0);
    }
    Py_END_ALLOW_THREADS
    if (!raise_code(e)) result = PyBool_FromLong(e == OK);
    table_free(&t);
done:
    if (key.obj) PyBuffer_Release(&key);
    if (counts.obj) PyBuffer_Release(&counts);
    column_close(&v);
    column_close(&seed);
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
    PyObject *col_obj, *key_obj, *counts_obj, *result = NULL;
    Py_ssize_t i, at = 0;
    long long place;
    Column c = {0};
    Py_buffer key = {0}, counts = {0};
    int e = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLO", &col_obj, &key_obj, &place, &counts_obj)) return NULL;
    if (column_open(col_obj, 0, &c) < 0) return NULL;
    if (out_array(key_obj, &key, c.rows, "key") < 0 ||
        out_array(counts_obj, &counts, 0, "counts") < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; e == OK && i < c.k; at += (Py_ssize_t)c.arrays[i].length, i++) {
        const struct ArrowArray *a = &c.arrays[i];
        e = add_index_rows((const unsigned char *)a->buffers[1] + a->offset * c.width, c.width,
                           (Py_ssize_t)a->length, (int64_t *)key.buf + at, (int64_t)place,
                           (int64_t *)counts.buf, counts.len / 8);
    }
    Py_END_ALLOW_THREADS
    if (e != OK) PyErr_SetString(PyExc_ValueError, "an index past the counts");
    else result = Py_None, Py_INCREF(Py_None);
done:
    if (key.obj) PyBuffer_Release(&key);
    if (counts.obj) PyBuffer_Release(&counts);
    column_close(&c);
    return result;
}

/* key[r] += table[v - low] * place, counts[code] += 1 over n integers of width w (negative:
 * signed); E_LIMIT at a value outside the table or whose entry is -1, E_VIEW at an entry past
 * ncounts. */
static int add_table_rows(const unsigned char *p, int w, Py_ssize_t n, const int64_t *table,
                          Py_ssize_t span, int64_t low, int64_t *key, int64_t place,
                          int64_t *counts, Py_ssize_t ncounts) {
    Py_ssize_t r;
    int64_t v, code;
    uint64_t i;
    for (r = 0; r < n; r++) {
        switch (w) {
            case 1: v = p[r]; break;
            case 2: v = ((const uint16_t *)p)[r]; break;
            case 4: v = ((const uint32_t *)p)[r]; break;
            case -1: v = ((const int8_t *)p)[r]; break;
            case -2: v = ((const int16_t *)p)[r]; break;
            case -4: v = ((const int32_t *)p)[r]; break;
            default: v = ((const int64_t *)p)[r]; break;
        }
        i = (uint64_t)v - (uint64_t)low;  /* v < low wraps past span */
        if (i >= (uint64_t)span || (code = table[i]) < 0) return E_LIMIT;
        if (code >= ncounts) return E_VIEW;
        key[r] += code * place;
        counts[code] += 1;
    }
    return OK;
}

static PyObject *add_table(PyObject *self, PyObject *args) {
    PyObject *col_obj, *table_obj, *key_obj, *counts_obj, *result = NULL;
    Py_ssize_t i, at = 0;
    long long low, place;
    Column c = {0};
    Py_buffer table = {0}, key = {0}, counts = {0};
    int e = OK;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLOLO", &col_obj, &table_obj, &low, &key_obj, &place,
                          &counts_obj))
        return NULL;
    if (column_open(col_obj, 1, &c) < 0) return NULL;
    if (out_array(table_obj, &table, 0, "table") < 0 || out_array(key_obj, &key, c.rows, "key") < 0
        || out_array(counts_obj, &counts, 0, "counts") < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; e == OK && i < c.k; at += (Py_ssize_t)c.arrays[i].length, i++) {
        const struct ArrowArray *a = &c.arrays[i];
        int w = c.width < 0 ? -c.width : c.width;
        e = add_table_rows((const unsigned char *)a->buffers[1] + a->offset * w, c.width,
                           (Py_ssize_t)a->length, (const int64_t *)table.buf, table.len / 8,
                           (int64_t)low, (int64_t *)key.buf + at, (int64_t)place,
                           (int64_t *)counts.buf, counts.len / 8);
    }
    Py_END_ALLOW_THREADS
    if (e == E_VIEW) PyErr_SetString(PyExc_ValueError, "a table entry past the counts");
    else result = PyBool_FromLong(e == OK);
done:
    if (table.obj) PyBuffer_Release(&table);
    if (key.obj) PyBuffer_Release(&key);
    if (counts.obj) PyBuffer_Release(&counts);
    column_close(&c);
    return result;
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS,
     "encode(column, ids[, seed[, limit]]) -> new strings (bytes) or None"},
    {"add_codes", add_codes, METH_VARARGS,
     "add_codes(column, seed, key, place, counts) -> whether every string is a seed's"},
    {"add_indices", add_indices, METH_VARARGS,
     "add_indices(column, key, place, counts) -> None"},
    {"add_table", add_table, METH_VARARGS,
     "add_table(column, table, low, key, place, counts) -> whether every value is in it"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_arrow_codes",
                                    "Codes of a column read from its Arrow buffers.", -1, methods};

PyMODINIT_FUNC PyInit__arrow_codes(void) { return PyModule_Create(&module); }
