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
 *   add_columns(specs, key) -> bool
 *       Several columns in one pass, block by block of rows (the key's block stays in cache
 *       across the columns): each spec ("s", column, seed, place, counts) as add_codes,
 *       ("d", column, place, counts) as add_indices, ("t", column, table, low, place, counts)
 *       as add_table, ("n", column, ids, limit, out) numbering a string column's values in
 *       order of first appearance into ids (int64) as encode does, out (a list) then
 *       receiving its strings (bytes) in their numbers' order, or None alone when they are
 *       more than limit (ids unspecified); the columns have the key's length. False (key and
 *       counts partly
 *       updated) as soon as one value has no code. Every column is opened before any row is
 *       read: a TypeError leaves key and counts as they were. The seed's strings are looked
 *       up by their words (see Key3 below) in a table where each sits in its first slot.
 *       add_codes, add_indices and add_table are add_columns of one spec.
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

enum { OK = 0, E_MEM = 1, E_VIEW = 2, E_SEED = 3, E_LIMIT = 4, E_INDEX = 5 };

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

/* The data buffers of a chunk with none: entry 0 of both is read (and found empty) by
 * view_key without a branch on the buffer index. */
static const unsigned char *const NO_BUF[1] = {NULL};
static const int64_t NO_LEN[1] = {0};

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
    v->bufs = nd ? (const unsigned char *const *)(a->buffers + 2) : NO_BUF;
    v->buflen = nd ? a->buffers[a->n_buffers - 1] : NO_LEN;
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

/* ---- The seeded lookup of a pass adding codes to a key ---------------------------------------
 * A string of at most 20 bytes is wholly in three words: w0 (the view's first: its length and
 * first 4 bytes, the bytes past an inline string's end zeroed), a (its bytes 4 .. 11, zeroed
 * past its end) and b (its last 8 bytes when it is longer than 12, else 0); a longer one has
 * its bytes 12 .. len - 9 besides (its middle), hashed and compared apart. A row costs a few
 * loads, three products and one probe of a table holding the seed's strings only, each in its
 * first slot (so the probe's branches go the same way on every row of a seed string). */

typedef struct {
    uint64_t w0, a, b;
    const unsigned char *p;
    int32_t len;
} Key3;

typedef struct {
    uint64_t w0, a, b;
    const unsigned char *p;
} Leaf;

/* Per length 0 .. 13 (13: any longer): the bits of w0 and a an inline string's bytes hold. */
static const uint64_t MASK_W0[14] = {
    0xffffffffULL, 0xffffffffffULL, 0xffffffffffffULL, 0xffffffffffffffULL,
    ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL};
static const uint64_t MASK_A[14] = {
    0, 0, 0, 0, 0, 0xffULL, 0xffffULL, 0xffffffULL, 0xffffffffULL, 0xffffffffffULL,
    0xffffffffffffULL, 0xffffffffffffffULL, ~0ULL, ~0ULL};

/* The words of string r of the views; 0 when its view is malformed (as view_str: outside its
 * buffer, a negative length, a prefix that is not its bytes' first 4). Every address read is
 * within the views or the string's own bytes, whatever the view holds. */
static inline int view_key(const Views *v, Py_ssize_t r, Key3 *k) {
    const unsigned char *view = v->views + 16 * (v->offset + r), *base, *p;
    int32_t l, bi, off;
    uint32_t pv, pp, li;
    Py_ssize_t bs;
    int lng, inb, use;
    memcpy(&l, view, 4);
    if ((uint32_t)l <= 12) {  /* inline: its words are the view's (measured: a branch here
                                 costs less than the out-of-line path's loads, even where
                                 inline and longer strings alternate) */
        li = (uint32_t)l;
        k->w0 = load8(view) & MASK_W0[li];
        k->a = load8(view + 8) & MASK_A[li];
        k->b = 0;
        k->p = view + 4;
        k->len = l;
        return 1;
    }
    memcpy(&bi, view + 8, 4);
    memcpy(&off, view + 12, 4);
    lng = l > 12;
    inb = bi >= 0 && (Py_ssize_t)bi < v->nbuf;
    bs = inb ? bi : 0;  /* (entry 0 exists: NO_BUF when the chunk has no data buffer) */
    base = v->bufs[bs];
    use = lng & inb & (off >= 0) & ((int64_t)off + l <= v->buflen[bs]) & (base != NULL);
    p = use ? base + off : view + 4;
    memcpy(&pv, view + 4, 4);
    memcpy(&pp, p, 4);
    li = (uint32_t)l > 13 ? 13 : (uint32_t)l;
    k->w0 = load8(view) & MASK_W0[li];
    k->a = load8(p + 4) & MASK_A[li];
    k->b = load8(use ? p + l - 8 : view + 8) & (use ? ~0ULL : 0ULL);
    k->p = p;
    k->len = l;
    return (l >= 0) & ((!lng) | (use & (pv == pp)));
}

/* The words at p + 12, p + 20, ... covering a string's middle (bytes 12 .. len - 9; the last
 * one overlapping the one before), for a string of more than 20 bytes. */
static inline uint64_t middle_hash(const unsigned char *p, int32_t len) {
    uint64_t h = 0, c = 0x9E3779B97F4A7C15ULL;
    int32_t i;
    for (i = 12; i < len - 8; i += 8, c += 0x632BE59BD9B4E019ULL)
        h += load8(p + (i + 8 <= len - 8 ? i : len - 16)) * c;
    return h;
}

static inline int middle_equal(const unsigned char *p, const unsigned char *q, int32_t len) {
    int32_t i, j;
    for (i = 12; i < len - 8; i += 8) {
        j = i + 8 <= len - 8 ? i : len - 16;
        if (load8(p + j) != load8(q + j)) return 0;
    }
    return 1;
}

/* The seed's strings by their words: an open-addressing table read by a hash's top bits,
 * its multipliers chosen so that (on up to PERFECT_MAX strings) every seed string sits in its
 * first slot: a row's probe then never branches the wrong way. When the seed's strings differ
 * in their first words (length and 4-byte prefix) alone (w0only), the hash is of that word
 * only (one product a row instead of three); a row is still compared with all its words. */
typedef struct {
    int32_t *slots;
    Leaf *leaves;
    uint64_t mask, m0, m1, m2, seed;
    int shift, w0only;
    Py_ssize_t count, cap;
} Leaves;

/* Seeds of up to PERFECT_MAX strings, and numbered tables of up to RESEED_MAX, try up to
 * PERFECT_TRIES multipliers for one that leaves every string in its first slot. */
enum { PERFECT_MAX = 4096, PERFECT_TRIES = 24, RESEED_MAX = 256 };

static inline uint64_t key_hash(const Leaves *t, const Key3 *k) {
    uint64_t h;
    if (t->w0only) return k->w0 * t->m0;
    h = k->w0 * t->m0 + k->a * t->m1 + k->b * t->m2;
    if (k->len > 20) h += middle_hash(k->p, k->len);  /* (rare: a predictable branch) */
    return h;
}

/* The seed string equal to k (its number), or -1. */
static inline int32_t leaves_find(const Leaves *t, const Key3 *k) {
    uint64_t s = key_hash(t, k) >> t->shift;
    int32_t j;
    for (; (j = t->slots[s]) >= 0; s = (s + 1) & t->mask) {
        const Leaf *f = &t->leaves[j];
        if (f->w0 == k->w0 && f->a == k->a && f->b == k->b
            && (k->len <= 20 || middle_equal(k->p, f->p, k->len)))
            return j;
    }
    return -1;
}

static void leaves_free(Leaves *t) {
    free(t->slots);
    free(t->leaves);
    memset(t, 0, sizeof(*t));
}

/* The seed's strings placed in the slots with the multipliers of try `seed`; how many are not
 * in their first slot; -1 when one repeats. */
static Py_ssize_t leaves_place(Leaves *t, uint64_t seed) {
    uint64_t x = 0x9E3779B97F4A7C15ULL * (seed + 1), s;
    Py_ssize_t i, moved = 0;
    Key3 k;
    t->seed = seed;
    t->m0 = (x ^ 0xff51afd7ed558ccdULL) | 1;
    t->m1 = (x * 0xc4ceb9fe1a85ec53ULL) | 1;
    t->m2 = (x * 0xbf58476d1ce4e5b9ULL + 0x632BE59BD9B4E019ULL) | 1;
    memset(t->slots, 0xff, (size_t)(t->mask + 1) * sizeof(int32_t));
    for (i = 0; i < t->count; i++) {
        const Leaf *f = &t->leaves[i];
        k.w0 = f->w0, k.a = f->a, k.b = f->b, k.p = f->p, k.len = (int32_t)f->w0;
        if (leaves_find(t, &k) >= 0) return -1;
        s = key_hash(t, &k) >> t->shift;
        if (t->slots[s] >= 0) moved++;
        for (; t->slots[s] >= 0; s = (s + 1) & t->mask) {}
        t->slots[s] = (int32_t)i;
    }
    return moved;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Whether the seed's strings differ in their first words (length and prefix) alone. */
static int w0_distinct(const Leaves *t) {
    Py_ssize_t i;
    int ok = 1;
    uint64_t *w = malloc((size_t)(t->count + 1) * sizeof(uint64_t));
    if (!w) return 0;
    for (i = 0; i < t->count; i++) w[i] = t->leaves[i].w0;
    qsort(w, (size_t)t->count, sizeof(uint64_t), cmp_u64);
    for (i = 1; i < t->count && ok; i++) ok = w[i] != w[i - 1];
    free(w);
    return ok;
}

/* The table of the seed column's strings, numbered in their order; E_SEED when one repeats,
 * E_VIEW at a malformed view. */
static int leaves_init(Leaves *t, const Column *seed) {
    uint64_t size = 16, best_seed = 0, tries;
    int bits = 4;
    Py_ssize_t i, r, moved, best = -1;
    Key3 k;
    memset(t, 0, sizeof(*t));
    if (seed->rows >= INT32_MAX / 8) return E_MEM;
    while (size < (seed->rows <= PERFECT_MAX ? 4 : 2) * (uint64_t)seed->rows) size *= 2, bits++;
    t->slots = malloc((size_t)size * sizeof(int32_t));
    t->leaves = malloc((size_t)(seed->rows + 1) * sizeof(Leaf));
    if (!t->slots || !t->leaves) return E_MEM;
    t->mask = size - 1;
    t->shift = 64 - bits;
    t->cap = seed->rows + 1;
    for (i = 0; i < seed->k; i++)
        for (r = 0; r < seed->views[i].n; r++) {
            if (!view_key(&seed->views[i], r, &k)) return E_VIEW;
            t->leaves[t->count].w0 = k.w0;
            t->leaves[t->count].a = k.a;
            t->leaves[t->count].b = k.b;
            t->leaves[t->count++].p = k.p;
        }
    tries = seed->rows <= PERFECT_MAX ? PERFECT_TRIES : 1;
    t->w0only = seed->rows <= PERFECT_MAX && w0_distinct(t);
    for (r = 0; r < (Py_ssize_t)tries && best != 0; r++) {
        if ((moved = leaves_place(t, (uint64_t)r)) < 0) return E_SEED;
        if (best < 0 || moved < best) best = moved, best_seed = (uint64_t)r;
    }
    if (best > 0 && best_seed != (uint64_t)r - 1) leaves_place(t, best_seed);
    return OK;
}

/* An empty table numbering strings as they come (leaves_add). */
static int leaves_empty(Leaves *t) {
    memset(t, 0, sizeof(*t));
    t->slots = malloc(64 * sizeof(int32_t));
    t->leaves = malloc(16 * sizeof(Leaf));
    if (!t->slots || !t->leaves) return E_MEM;
    t->mask = 63;
    t->shift = 58;
    t->cap = 16;
    leaves_place(t, 0);
    return OK;
}

/* The string k (not in the table) as the next number: the table kept a quarter full at most
 * (doubled, every string placed again), and on up to RESEED_MAX strings re-placed with other
 * multipliers when k does not sit in its first slot. */
static int leaves_add(Leaves *t, const Key3 *k) {
    uint64_t s, first, best_seed;
    Py_ssize_t moved = 0, best, r;
    if (t->count == t->cap) {
        Leaf *l;
        if (t->cap >= INT32_MAX / 8) return E_MEM;
        if (!(l = realloc(t->leaves, (size_t)(2 * t->cap) * sizeof(Leaf)))) return E_MEM;
        t->leaves = l;
        t->cap *= 2;
    }
    t->leaves[t->count].w0 = k->w0;
    t->leaves[t->count].a = k->a;
    t->leaves[t->count].b = k->b;
    t->leaves[t->count++].p = k->p;
    if ((uint64_t)t->count * 4 > t->mask + 1) {
        int32_t *slots = realloc(t->slots, (size_t)(2 * (t->mask + 1)) * sizeof(int32_t));
        if (!slots) return E_MEM;
        t->slots = slots;
        t->mask = 2 * t->mask + 1;
        t->shift--;
        moved = leaves_place(t, t->seed);
    } else {
        for (s = key_hash(t, k) >> t->shift; t->slots[s] >= 0; s = (s + 1) & t->mask) moved = 1;
        t->slots[s] = (int32_t)(t->count - 1);
    }
    if (moved > 0 && t->count <= RESEED_MAX) {
        first = best_seed = t->seed;
        best = moved;
        for (r = 1; r <= PERFECT_TRIES && best > 0; r++)
            if ((moved = leaves_place(t, first + (uint64_t)r)) >= 0 && moved < best)
                best = moved, best_seed = first + (uint64_t)r;
        if (t->seed != best_seed) leaves_place(t, best_seed);
    }
    return OK;
}

/* ids[r - from] = the number of row r's string over rows from .. to - 1 (numbers in order of
 * first appearance); *over set, the rest left, once more than limit strings are numbered. */
static int number_rows(Leaves *t, const Views *v, Py_ssize_t from, Py_ssize_t to,
                       int64_t *ids, Py_ssize_t limit, int *over) {
    Py_ssize_t r;
    Key3 k;
    int32_t j;
    int e;
    for (r = from; r < to; r++) {
        if (!view_key(v, r, &k)) return E_VIEW;
        if ((j = leaves_find(t, &k)) < 0) {
            if (t->count >= limit) {
                *over = 1;
                return OK;
            }
            if ((e = leaves_add(t, &k)) != OK) return e;
            j = (int32_t)(t->count - 1);
        }
        ids[r - from] = j;
    }
    return OK;
}

/* key[r] += number * place and counts[number] += 1 over rows from .. to - 1 of the views;
 * E_LIMIT at a string that is not a seed's, E_VIEW at a malformed view. */
static int leaf_rows(const Leaves *t, const Views *v, Py_ssize_t from, Py_ssize_t to,
                     int64_t *key, int64_t place, int64_t *counts) {
    Py_ssize_t r;
    Key3 k;
    int32_t j;
    for (r = from; r < to; r++) {
        if (!view_key(v, r, &k)) return E_VIEW;
        if ((j = leaves_find(t, &k)) < 0) return E_LIMIT;
        key[r - from] += (int64_t)j * place;
        counts[j] += 1;
    }
    return OK;
}

/* key[r] += index * place, counts[index] += 1 over n indices of width w; E_INDEX on an index
 * past ncounts. */
static int add_index_rows(const unsigned char *p, int w, Py_ssize_t n, int64_t *key,
                          int64_t place, int64_t *counts, Py_ssize_t ncounts) {
    Py_ssize_t r;
    uint64_t x;
    for (r = 0; r < n; r++) {
        if (w == 1) x = p[r];
        else if (w == 2) x = ((const uint16_t *)p)[r];
        else x = ((const uint32_t *)p)[r];
        if (x >= (uint64_t)ncounts) return E_INDEX;
        key[r] += (int64_t)x * place;
        counts[x] += 1;
    }
    return OK;
}

/* key[r] += table[v - low] * place, counts[code] += 1 over n integers of width w (negative:
 * signed); E_LIMIT at a value outside the table or whose entry is -1, E_INDEX at an entry
 * past ncounts. */
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
        if (code >= ncounts) return E_INDEX;
        key[r] += code * place;
        counts[code] += 1;
    }
    return OK;
}

/* ---- One pass adding several columns' codes to one key ---------------------------------- */

/* A column of the pass: kind 's' (strings numbered by a seed), 'd' (dictionary indices) or
 * 't' (integers through a table); chunk and start: the cursor (the chunk holding row start
 * onwards). */
typedef struct {
    char kind;
    Column col, seed;
    Leaves leaves;
    Py_buffer table, counts, ids;
    int64_t low, place;
    Py_ssize_t chunk, start, limit;
    PyObject *out;  /* 'n': the list receiving the strings */
    int over;
} Source;

static void source_close(Source *s) {
    if (s->table.obj) PyBuffer_Release(&s->table);
    if (s->counts.obj) PyBuffer_Release(&s->counts);
    if (s->ids.obj) PyBuffer_Release(&s->ids);
    leaves_free(&s->leaves);
    column_close(&s->col);
    column_close(&s->seed);
}

/* Opens one spec: ("s", column, seed, place, counts), ("d", column, place, counts),
 * ("t", column, table, low, place, counts) or ("n", column, ids, limit, out); -1 with an
 * exception set. */
static int source_open(PyObject *spec, Source *s) {
    const char *kind;
    PyObject *col, *seed = NULL, *table = NULL, *counts = NULL, *ids = NULL;
    long long place = 0, low = 0;
    Py_ssize_t limit = 0;
    memset(s, 0, sizeof(*s));
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1) {
        PyErr_SetString(PyExc_ValueError, "a column spec is a tuple (kind, column, ...)");
        return -1;
    }
    if (!PyArg_Parse(PyTuple_GET_ITEM(spec, 0), "s", &kind)) return -1;
    s->kind = kind[0];
    if (s->kind == 's' && !kind[1]) {
        if (!PyArg_ParseTuple(spec, "sOOLO", &kind, &col, &seed, &place, &counts)) return -1;
    } else if (s->kind == 'd' && !kind[1]) {
        if (!PyArg_ParseTuple(spec, "sOLO", &kind, &col, &place, &counts)) return -1;
    } else if (s->kind == 't' && !kind[1]) {
        if (!PyArg_ParseTuple(spec, "sOOLLO", &kind, &col, &table, &low, &place, &counts))
            return -1;
    } else if (s->kind == 'n' && !kind[1]) {
        if (!PyArg_ParseTuple(spec, "sOOnO!", &kind, &col, &ids, &limit, &PyList_Type, &s->out))
            return -1;
    } else {
        PyErr_SetString(PyExc_ValueError, "a column spec's kind is 's', 'd', 't' or 'n'");
        return -1;
    }
    s->limit = limit;
    s->place = (int64_t)place;
    s->low = (int64_t)low;
    if (seed && column_open(seed, 16, &s->seed) < 0) return -1;
    if (column_open(col, s->kind == 's' || s->kind == 'n' ? 16 : s->kind == 'd' ? 0 : 1,
                    &s->col) < 0)
        return -1;
    if (ids) return out_array(ids, &s->ids, s->col.rows, "ids");
    if (out_array(counts, &s->counts, s->kind == 's' ? s->seed.rows : 0, "counts") < 0)
        return -1;
    if (table && out_array(table, &s->table, 0, "table") < 0) return -1;
    return 0;
}

/* Rows a .. b - 1 of source s added to key (key[0]: row a), chunk by chunk from its cursor. */
static int source_rows(Source *s, Py_ssize_t a, Py_ssize_t b, int64_t *key) {
    int e = OK;
    while (a < b && e == OK) {
        const struct ArrowArray *arr;
        Py_ssize_t from, n, w;
        while (s->start + (Py_ssize_t)s->col.arrays[s->chunk].length <= a)
            s->start += (Py_ssize_t)s->col.arrays[s->chunk++].length;
        arr = &s->col.arrays[s->chunk];
        from = a - s->start;
        n = (Py_ssize_t)arr->length - from;
        if (n > b - a) n = b - a;
        if (s->kind == 'n') {
            if (!s->over)
                e = number_rows(&s->leaves, &s->col.views[s->chunk], from, from + n,
                                (int64_t *)s->ids.buf + a, s->limit, &s->over);
        } else if (s->kind == 's') {
            e = leaf_rows(&s->leaves, &s->col.views[s->chunk], from, from + n, key, s->place,
                          (int64_t *)s->counts.buf);
        } else if (s->kind == 'd') {
            w = s->col.width;
            e = add_index_rows((const unsigned char *)arr->buffers[1] + (arr->offset + from) * w,
                               (int)w, n, key, s->place, (int64_t *)s->counts.buf,
                               s->counts.len / 8);
        } else {
            w = s->col.width < 0 ? -s->col.width : s->col.width;
            e = add_table_rows((const unsigned char *)arr->buffers[1] + (arr->offset + from) * w,
                               s->col.width, n, (const int64_t *)s->table.buf, s->table.len / 8,
                               s->low, key, s->place, (int64_t *)s->counts.buf,
                               s->counts.len / 8);
        }
        key += n;
        a += n;
    }
    return e;
}

enum { BLOCK = 2048 };  /* rows per block: the key's block (16 KiB) stays in L1 across columns */

/* The pass: every source's rows block by block into key; the failing source in *bad. */
static int add_sources(Source *src, Py_ssize_t k, Py_ssize_t rows, int64_t *key, Py_ssize_t *bad) {
    Py_ssize_t a, b, i;
    int e = OK;
    for (i = 0; i < k; i++)
        if ((src[i].kind == 's' && (e = leaves_init(&src[i].leaves, &src[i].seed)) != OK)
            || (src[i].kind == 'n' && (e = leaves_empty(&src[i].leaves)) != OK)) {
            *bad = i;
            return e;
        }
    for (a = 0; a < rows; a = b) {
        b = rows - a > BLOCK ? a + BLOCK : rows;
        for (i = 0; i < k; i++)
            if ((e = source_rows(&src[i], a, b, key + a)) != OK) {
                *bad = i;
                return e;
            }
    }
    return OK;
}

/* Each 'n' source's strings appended to its list (bytes, in their numbers' order), or None
 * when they were more than its limit; -1 with an exception set. */
static int numbered(const Source *src, Py_ssize_t k) {
    Py_ssize_t i, j;
    PyObject *b;
    for (i = 0; i < k; i++) {
        if (src[i].kind != 'n') continue;
        if (src[i].over) {
            if (PyList_Append(src[i].out, Py_None) < 0) return -1;
            continue;
        }
        for (j = 0; j < src[i].leaves.count; j++) {
            const Leaf *f = &src[i].leaves.leaves[j];
            b = PyBytes_FromStringAndSize((const char *)f->p, (Py_ssize_t)(int32_t)f->w0);
            if (!b || PyList_Append(src[i].out, b) < 0) {
                Py_XDECREF(b);
                return -1;
            }
            Py_DECREF(b);
        }
    }
    return 0;
}

/* add_columns(specs, key): see the module's comment; every column is opened (a TypeError for a
 * layout the kernel does not read, before anything is written) before the pass. */
static PyObject *add_columns_of(PyObject *specs, PyObject *key_obj) {
    PyObject *seq = PySequence_Fast(specs, "specs must be a sequence"), *result = NULL;
    Py_ssize_t k, i, opened = 0, bad = -1, rows = 0;
    Source *src = NULL;
    Py_buffer key = {0};
    int e = OK;
    if (!seq) return NULL;
    k = PySequence_Fast_GET_SIZE(seq);
    src = PyMem_Calloc((size_t)(k ? k : 1), sizeof(Source));
    if (!src) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (; opened < k; opened++) {
        if (source_open(PySequence_Fast_GET_ITEM(seq, opened), &src[opened]) < 0) {
            opened++;  /* (closed below, partly opened) */
            goto done;
        }
        if (opened && src[opened].col.rows != rows) {
            PyErr_SetString(PyExc_ValueError, "the columns differ in length");
            opened++;
            goto done;
        }
        rows = src[opened].col.rows;
    }
    if (out_array(key_obj, &key, rows, "key") < 0) goto done;
    Py_BEGIN_ALLOW_THREADS
    e = add_sources(src, k, rows, (int64_t *)key.buf, &bad);
    Py_END_ALLOW_THREADS
    if (e == E_INDEX)
        PyErr_SetString(PyExc_ValueError, src[bad].kind == 'd' ? "an index past the counts"
                                                                : "a table entry past the counts");
    else if (!raise_code(e) && numbered(src, k) == 0)
        result = PyBool_FromLong(e == OK);
done:
    if (key.obj) PyBuffer_Release(&key);
    for (i = 0; i < opened; i++) source_close(&src[i]);
    PyMem_Free(src);
    Py_DECREF(seq);
    return result;
}

static PyObject *add_columns(PyObject *self, PyObject *args) {
    PyObject *specs, *key;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &specs, &key)) return NULL;
    return add_columns_of(specs, key);
}

/* The one-column forms: (column, seed, key, place, counts), (column, key, place, counts),
 * (column, table, low, key, place, counts): add_columns of one spec. */
static PyObject *one_column(const char *kind, PyObject *args, Py_ssize_t key_at) {
    Py_ssize_t n = PyTuple_GET_SIZE(args), i, j = 1;
    PyObject *spec, *specs, *result;
    if (n <= key_at) {
        PyErr_SetString(PyExc_TypeError, "too few arguments");
        return NULL;
    }
    if (!(spec = PyTuple_New(n))) return NULL;
    PyTuple_SET_ITEM(spec, 0, PyUnicode_FromString(kind));
    for (i = 0; i < n; i++)
        if (i != key_at) {
            Py_INCREF(PyTuple_GET_ITEM(args, i));
            PyTuple_SET_ITEM(spec, j++, PyTuple_GET_ITEM(args, i));
        }
    if (!PyTuple_GET_ITEM(spec, 0) || !(specs = PyTuple_Pack(1, spec))) {
        Py_DECREF(spec);
        return NULL;
    }
    Py_DECREF(spec);
    result = add_columns_of(specs, PyTuple_GET_ITEM(args, key_at));
    Py_DECREF(specs);
    return result;
}

static PyObject *add_codes(PyObject *self, PyObject *args) {
    (void)self;
    return one_column("s", args, 2);
}

static PyObject *add_indices(PyObject *self, PyObject *args) {
    PyObject *r;
    (void)self;
    r = one_column("d", args, 1);
    if (r == Py_False) {  /* (indices are never "not a raw value") */
        Py_DECREF(r);
        PyErr_SetString(PyExc_ValueError, "an index past the counts");
        return NULL;
    }
    if (r) {
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    return NULL;
}

static PyObject *add_table(PyObject *self, PyObject *args) {
    (void)self;
    return one_column("t", args, 3);
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS,
     "encode(column, ids[, seed[, limit]]) -> new strings (bytes) or None"},
    {"add_codes", add_codes, METH_VARARGS,
     "add_codes(column, seed, key, place, counts) -> whether every string is a seed's"},
    {"add_indices", add_indices, METH_VARARGS,
     "add_indices(column, key, place, counts) -> None"},
    {"add_columns", add_columns, METH_VARARGS,
     "add_columns(specs, key) -> whether every value of every column has a code"},
    {"add_table", add_table, METH_VARARGS,
     "add_table(column, table, low, key, place, counts) -> whether every value is in it"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_arrow_codes",
                                    "Codes of a column read from its Arrow buffers.", -1, methods};

PyMODINIT_FUNC PyInit__arrow_codes(void) { return PyModule_Create(&module); }
