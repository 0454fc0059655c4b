/* Compiled kernels of the lattice roll-ups (see ldiv_polars/search/counting.py, which checks
 * the arguments, owns the scratch arrays and holds the numpy twin of every function here).
 *
 * A roll-up's key of source row r is  sum_i digit_i(cols[i][r]) (+ extra[r]),  where a digit
 * is tables[i][code] * scales[i] (a lookup: the code's generalized value, or that value times
 * its place with scale 1) or code * scales[i] when the column has no table. The numpy path
 * builds that key array with one gather per column and groups it with a weighted bincount
 * over the whole key space, then reads the non-zero cells. Here the keys are built in blocks
 * that stay in L1, counted into a reused array, and each counted cell's bit set in a bitmap,
 * so the read-out visits only the occupied cells (in key order) and leaves the count array
 * zeroed for the next roll-up.
 *
 *   lookup_sum(cols, tables, scales, extra, out) -> None
 *       out[r] = key of row r (int64).
 *   count_keys(cols, tables, scales, extra, weights, counts, bitmap[, first, span[, flags]])
 *       -> int
 *       counts[key[r]] += weights[r]; bit key[r] of bitmap set; returns the occupied cells.
 *       With first and span (span -1: the whole key space, first 0): keys are checked against
 *       [0, span) and only those of the window [first, first + len(counts)) counted, at
 *       key - first (a wide key space counted window by window, in as many passes, into one
 *       bounded array). flags (uint8, all zero, a byte per cell rounded up to 64, or None):
 *       scratch for a whole key space (see FLAG_CELLS_PER_ROW), left zeroed.
 *   sort_sum(cols, tables, scales, extra, weights, span, wbits, keys, sums) -> int
 *       the distinct keys of the rows in increasing order and their summed weights, by a
 *       radix sort of the keys packed above their weights (see the function).
 *   read_cells(counts, bitmap, keys, sums[, first]) -> int
 *       the occupied cells in increasing order: keys[j] (+ first), sums[j]; counts and
 *       bitmap zeroed.
 *   read_cells_split(counts, bitmap, ns, s, n, row_class, class_keys, class_size[, first])
 *       -> (rows, classes): the same cells with their keys split as class * ns + id (see
 *       the function).
 *   masked_sum(values, mask) -> int
 *       sum of values[i] (int64) where mask[i] (bool bytes), with no temporary array.
 *
 * cols: uint16, int32 or int64 arrays of the same length; tables: int64 or uint16 arrays (a
 * uint16 lookup is a quarter of the cache lines: the QI groups' lookups, whose values are
 * below their span, are uint16 within 2**16) or None;
 * extra: int32 array or None; weights: int32 or int64; counts: int32 or int64 (all zero);
 * bitmap: uint64 (all zero, a bit per cell of counts). A code outside its table, or a key
 * outside counts, raises IndexError (nothing is read or written out of bounds; the cells
 * counted before it stay counted, the caller zeroes them). The GIL is released while the
 * loops run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 2048
/* A narrow key space (at most SPLIT_CELLS cells, counted whole) has its blocks of runs (at
 * least a quarter of the keys equal to the one before) counted into SPLIT partial histograms,
 * row j into histogram j % SPLIT, each touched cell flagged by a plain store, then summed into
 * counts and the bitmap once: rows of a source in key order hit the same few cells one after
 * another, and a single histogram (and its bitmap word) makes every increment wait for the one
 * before it (about twice the time). Blocks of scattered keys are counted directly (there the
 * partial histograms cost more). Used from SPLIT_MIN_ROWS_PER_CELL rows per cell (below,
 * zeroing and summing the partial histograms costs more than the chains). */
#define SPLIT 4
#define SPLIT_CELLS 1024
#define SPLIT_MIN_ROWS_PER_CELL 8
/* With a flag array (a byte per cell), a counted cell is flagged by a plain store and the
 * flags gathered into the bitmap at the end (eight per multiply), rather than its bit set by
 * a read-modify-write per row: rows in key order hit one bitmap word after another, and each
 * set waits for the one before it (about a third of the time of a 100-200K-row roll-up).
 * Used while the cells are at most FLAG_CELLS_PER_ROW per row (the gather reads them all). */
#define FLAG_CELLS_PER_ROW 8

typedef struct {
    Py_ssize_t q, rows;
    Py_buffer *col, *table;
    int *has_table;
    int64_t *scale;
    Py_buffer extra;
    int has_extra;
} Digits;

static void digits_release(Digits *d) {
    Py_ssize_t i;
    for (i = 0; i < d->q; i++) {
        if (d->col[i].obj) PyBuffer_Release(&d->col[i]);
        if (d->table[i].obj) PyBuffer_Release(&d->table[i]);
    }
    if (d->has_extra) PyBuffer_Release(&d->extra);
    PyMem_Free(d->col);
    PyMem_Free(d->table);
    PyMem_Free(d->has_table);
    PyMem_Free(d->scale);
    memset(d, 0, sizeof(*d));
}

/* A C-contiguous buffer of integers: uint16, or signed or unsigned 4- or 8-byte ones. */
static int get_int_buffer(PyObject *o, Py_buffer *b, int writable, const char *what) {
    const char *f;
    char code;
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                           (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    f = b->format ? b->format : "B";
    if (*f == '@' || *f == '=' || *f == (PY_LITTLE_ENDIAN ? '<' : '>')) f++;  /* native order */
    code = f[0] && !f[1] ? f[0] : '?';
    if (!((b->itemsize == 2 && code == 'H') ||
          ((b->itemsize == 4 || b->itemsize == 8) && strchr("iIlLqQnN", code)))) {
        PyErr_Format(PyExc_TypeError, "%s: uint16 or 4- or 8-byte integers expected", what);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* Acquire n buffers as get_int_buffer does; on a failure, release those acquired. */
static int get_int_buffers(int n, PyObject **objs, Py_buffer *bufs, const int *writable,
                           const char **names) {
    int i;
    for (i = 0; i < n; i++) {
        if (get_int_buffer(objs[i], &bufs[i], writable[i], names[i]) < 0) {
            while (i--) PyBuffer_Release(&bufs[i]);
            return -1;
        }
    }
    return 0;
}

static void release_buffers(int n, Py_buffer *bufs) {
    int i;
    for (i = 0; i < n; i++) PyBuffer_Release(&bufs[i]);
}

/* Parse (cols, tables, scales, extra) into d; rows of every column (and extra) checked. */
static int digits_parse(PyObject *cols, PyObject *tables, PyObject *scales, PyObject *extra,
                        Py_ssize_t rows, Digits *d) {
    Py_ssize_t i, q;
    memset(d, 0, sizeof(*d));
    if (!PyTuple_Check(cols) || !PyTuple_Check(tables) || !PyTuple_Check(scales)) {
        PyErr_SetString(PyExc_TypeError, "cols, tables and scales must be tuples");
        return -1;
    }
    q = PyTuple_GET_SIZE(cols);
    if (PyTuple_GET_SIZE(tables) != q || PyTuple_GET_SIZE(scales) != q) {
        PyErr_SetString(PyExc_ValueError, "cols, tables and scales differ in length");
        return -1;
    }
    d->rows = rows;
    d->col = PyMem_Calloc(q ? q : 1, sizeof(Py_buffer));
    d->table = PyMem_Calloc(q ? q : 1, sizeof(Py_buffer));
    d->has_table = PyMem_Calloc(q ? q : 1, sizeof(int));
    d->scale = PyMem_Calloc(q ? q : 1, sizeof(int64_t));
    if (!d->col || !d->table || !d->has_table || !d->scale) {
        digits_release(d);
        PyErr_NoMemory();
        return -1;
    }
    d->q = q;
    for (i = 0; i < q; i++) {
        PyObject *t = PyTuple_GET_ITEM(tables, i);
        if (get_int_buffer(PyTuple_GET_ITEM(cols, i), &d->col[i], 0, "cols") < 0) goto fail;
        if (d->col[i].len / d->col[i].itemsize != rows) {
            PyErr_SetString(PyExc_ValueError, "a column's length differs from the rows");
            goto fail;
        }
        d->has_table[i] = t != Py_None;
        if (d->has_table[i]) {
            if (get_int_buffer(t, &d->table[i], 0, "tables") < 0) goto fail;
            if (d->table[i].itemsize != 8 && d->table[i].itemsize != 2) {
                PyErr_SetString(PyExc_TypeError, "tables: int64 or uint16 expected");
                goto fail;
            }
        }
        d->scale[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(scales, i));
        if (d->scale[i] == -1 && PyErr_Occurred()) goto fail;
    }
    if (extra != Py_None) {
        if (get_int_buffer(extra, &d->extra, 0, "extra") < 0) goto fail;
        d->has_extra = 1;
        if (d->extra.itemsize != 4 || d->extra.len / 4 != rows) {
            PyErr_SetString(PyExc_ValueError, "extra: int32 of the rows' length expected");
            goto fail;
        }
    }
    return 0;
fail:
    digits_release(d);
    return -1;
}

/* Largest value of the m codes at p, as unsigned (a negative code is then past any table). */
#define BLOCK_MAX(U, p, m, out)                                                              \
    do {                                                                                     \
        U mx_ = 0;                                                                           \
        Py_ssize_t j_;                                                                       \
        for (j_ = 0; j_ < (m); j_++) mx_ = (U)(p)[j_] > mx_ ? (U)(p)[j_] : mx_;              \
        (out) = (uint64_t)mx_;                                                               \
    } while (0)

/* The keys of rows [lo, lo + m) into key; -1 when a code is outside its table (each column's
 * block is checked by its largest code, then gathered unchecked). The common case of the
 * search, up to four grouped uint16 columns with tables all uint16 (or all int64), is one
 * pass over the rows. */
static int block_keys(const Digits *d, Py_ssize_t lo, Py_ssize_t m, int64_t *key) {
    Py_ssize_t i, j;
    int fused = d->q >= 1 && d->q <= 4;
    const uint16_t *g[4];
    const int64_t *gt[4];
    const uint16_t *gu[4];
    int64_t gs[4];
    int narrow_tables = 1, wide_tables = 1;  /* every table uint16 / every one int64 */
    if (d->has_extra) {
        const int32_t *e = (const int32_t *)d->extra.buf + lo;
        for (j = 0; j < m; j++) key[j] = e[j];
    } else {
        memset(key, 0, (size_t)m * sizeof(int64_t));
    }
    if (!m) return 0;
    for (i = 0; i < d->q; i++) {
        Py_ssize_t size = d->col[i].itemsize;
        const void *c = (const char *)d->col[i].buf + lo * size;
        uint64_t mx;
        if (!d->has_table[i]) {
            fused = 0;
            continue;
        }
        if (size == 2) BLOCK_MAX(uint16_t, (const uint16_t *)c, m, mx);
        else if (size == 4) BLOCK_MAX(uint32_t, (const int32_t *)c, m, mx);
        else BLOCK_MAX(uint64_t, (const int64_t *)c, m, mx);
        if (mx >= (uint64_t)(d->table[i].len / d->table[i].itemsize)) return -1;
        if (size != 2) fused = 0;
        if (d->table[i].itemsize != 2) narrow_tables = 0;
        if (d->table[i].itemsize != 8) wide_tables = 0;
        if (i < 4) {
            g[i] = (const uint16_t *)c;
            gt[i] = (const int64_t *)d->table[i].buf;
            gu[i] = (const uint16_t *)d->table[i].buf;
            gs[i] = d->scale[i];
        }
    }
    if (fused && narrow_tables) {
        switch (d->q) {
        case 1:
            for (j = 0; j < m; j++) key[j] += (int64_t)gu[0][g[0][j]] * gs[0];
            break;
        case 2:
            for (j = 0; j < m; j++)
                key[j] += (int64_t)gu[0][g[0][j]] * gs[0] + (int64_t)gu[1][g[1][j]] * gs[1];
            break;
        case 3:
            for (j = 0; j < m; j++)
                key[j] += (int64_t)gu[0][g[0][j]] * gs[0] + (int64_t)gu[1][g[1][j]] * gs[1]
                          + (int64_t)gu[2][g[2][j]] * gs[2];
            break;
        default:
            for (j = 0; j < m; j++)
                key[j] += (int64_t)gu[0][g[0][j]] * gs[0] + (int64_t)gu[1][g[1][j]] * gs[1]
                          + (int64_t)gu[2][g[2][j]] * gs[2] + (int64_t)gu[3][g[3][j]] * gs[3];
        }
        return 0;
    }
    if (fused && wide_tables) {
        switch (d->q) {
        case 1:
            for (j = 0; j < m; j++) key[j] += gt[0][g[0][j]] * gs[0];
            break;
        case 2:
            for (j = 0; j < m; j++) key[j] += gt[0][g[0][j]] * gs[0] + gt[1][g[1][j]] * gs[1];
            break;
        case 3:
            for (j = 0; j < m; j++)
                key[j] += gt[0][g[0][j]] * gs[0] + gt[1][g[1][j]] * gs[1]
                          + gt[2][g[2][j]] * gs[2];
            break;
        default:
            for (j = 0; j < m; j++)
                key[j] += gt[0][g[0][j]] * gs[0] + gt[1][g[1][j]] * gs[1]
                          + gt[2][g[2][j]] * gs[2] + gt[3][g[3][j]] * gs[3];
        }
        return 0;
    }
    for (i = 0; i < d->q; i++) {
        Py_ssize_t size = d->col[i].itemsize;
        const uint16_t *c16 = (const uint16_t *)d->col[i].buf + lo;
        const int32_t *c32 = (const int32_t *)d->col[i].buf + lo;
        const int64_t *c64 = (const int64_t *)d->col[i].buf + lo;
        int64_t s = d->scale[i];
        if (d->has_table[i]) {  /* (codes checked above) */
#define ADD_LOOKUPS(T)                                                                       \
            do {                                                                             \
                const T *t = (const T *)d->table[i].buf;                                     \
                if (size == 2)                                                               \
                    for (j = 0; j < m; j++) key[j] += (int64_t)t[c16[j]] * s;                \
                else if (size == 4)                                                          \
                    for (j = 0; j < m; j++) key[j] += (int64_t)t[(uint32_t)c32[j]] * s;      \
                else                                                                         \
                    for (j = 0; j < m; j++) key[j] += (int64_t)t[(uint64_t)c64[j]] * s;      \
            } while (0)
            if (d->table[i].itemsize == 2) ADD_LOOKUPS(uint16_t);
            else ADD_LOOKUPS(int64_t);
#undef ADD_LOOKUPS
        } else {
            if (size == 2)
                for (j = 0; j < m; j++) key[j] += (int64_t)c16[j] * s;
            else if (size == 4)
                for (j = 0; j < m; j++) key[j] += (int64_t)c32[j] * s;
            else
                for (j = 0; j < m; j++) key[j] += c64[j] * s;
        }
    }
    return 0;
}

static PyObject *lookup_sum(PyObject *self, PyObject *args) {
    PyObject *cols, *tables, *scales, *extra, *out_o;
    Py_buffer out;
    Digits d;
    Py_ssize_t lo, rows;
    int bad = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOO", &cols, &tables, &scales, &extra, &out_o)) return NULL;
    if (get_int_buffer(out_o, &out, 1, "out") < 0) return NULL;
    if (out.itemsize != 8) {
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_TypeError, "out: int64 expected");
        return NULL;
    }
    rows = out.len / 8;
    if (digits_parse(cols, tables, scales, extra, rows, &d) < 0) {
        PyBuffer_Release(&out);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (lo = 0; lo < rows && !bad; lo += BLOCK) {
        Py_ssize_t m = rows - lo < BLOCK ? rows - lo : BLOCK;
        bad = block_keys(&d, lo, m, (int64_t *)out.buf + lo) < 0;
    }
    Py_END_ALLOW_THREADS
    digits_release(&d);
    PyBuffer_Release(&out);
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "a code is outside its lookup table");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* OR the cells flagged in flag (a byte per cell, 0 or 1, cells rounded up to 64 bytes) into
 * bits, zeroing the flags: eight flags at a time gathered into a byte of bits by a multiply. */
static void flags_to_bits(unsigned char *flag, Py_ssize_t cells, uint64_t *bits) {
    Py_ssize_t w, words = (cells + 63) / 64;
    for (w = 0; w < words; w++) {
        uint64_t b = 0, x;
        int k;
        for (k = 0; k < 8; k++) {
            memcpy(&x, flag + w * 64 + k * 8, 8);
            b |= ((x * 0x0102040810204080ULL) >> 56) << (k * 8);
        }
        if (b) {
            memset(flag + w * 64, 0, 64);
            bits[w] |= b;
        }
    }
}

static PyObject *count_keys(PyObject *self, PyObject *args) {
    PyObject *cols, *tables, *scales, *extra, *objs[3], *flags = Py_None;
    Py_buffer bufs[3], *w = &bufs[0], *cnt = &bufs[1], *bm = &bufs[2], fl;
    static const int writable[3] = {0, 1, 1};
    static const char *names[3] = {"weights", "counts", "bitmap"};
    Digits d;
    Py_ssize_t lo, rows, span, cells, words, distinct = 0, k, first = 0, total = -1;
    int bad = 0;
    int64_t key[BLOCK];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOO|nnO", &cols, &tables, &scales, &extra, &objs[0],
                          &objs[1], &objs[2], &first, &total, &flags))
        return NULL;
    memset(&fl, 0, sizeof(fl));
    if (get_int_buffers(3, objs, bufs, writable, names) < 0) return NULL;
    if (flags != Py_None) {
        if (PyObject_GetBuffer(flags, &fl, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
            fl.obj = NULL;
            goto fail;
        }
        if (fl.itemsize != 1) {
            PyErr_SetString(PyExc_TypeError, "flags: uint8 expected");
            goto fail;
        }
    }
    rows = w->len / w->itemsize;
    cells = cnt->len / cnt->itemsize;
    span = total < 0 ? cells : total;
    words = bm->len / 8;
    if (fl.obj != NULL && fl.len < (cells + 63) / 64 * 64) {
        PyErr_SetString(PyExc_ValueError, "flags: a byte per cell of counts (rounded up to 64)");
        goto fail;
    }
    if (w->itemsize == 2 || bm->itemsize != 8 || cnt->itemsize == 2 || words < (cells + 63) / 64) {
        PyErr_SetString(PyExc_TypeError, "weights and counts: int32 or int64; bitmap: "
                        "uint64 with a bit per cell of counts");
        goto fail;
    }
    if (first < 0 || (total < 0 && first) || (total >= 0 && first + cells > total)) {
        PyErr_SetString(PyExc_ValueError, "the counted window is outside the span");
        goto fail;
    }
    if (digits_parse(cols, tables, scales, extra, rows, &d) < 0) goto fail;
    {
        uint64_t *bits = (uint64_t *)bm->buf;
        const int32_t *w32 = (const int32_t *)w->buf;
        const int64_t *w64 = (const int64_t *)w->buf;
        int narrow = cnt->itemsize == 4, wnarrow = w->itemsize == 4;
        int32_t *c32 = (int32_t *)cnt->buf;
        int64_t *c64 = (int64_t *)cnt->buf;
        int64_t *part = NULL;
        unsigned char *seen = NULL;
        unsigned char *flag = fl.obj != NULL && cells == span &&
            cells <= FLAG_CELLS_PER_ROW * rows ? (unsigned char *)fl.buf : NULL;
        int splittable = cells > 0 && cells == span && cells <= SPLIT_CELLS &&
                         rows >= SPLIT_MIN_ROWS_PER_CELL * cells;
        Py_BEGIN_ALLOW_THREADS
        for (lo = 0; lo < rows && !bad; lo += BLOCK) {
            Py_ssize_t j, m = rows - lo < BLOCK ? rows - lo : BLOCK;
            uint64_t out = 0;
            if (block_keys(&d, lo, m, key) < 0) {
                bad = 1;
                break;
            }
#define COUNT_SPLIT(W)                                                   \
            for (j = 0; j < m; j++) {                                    \
                if ((uint64_t)key[j] >= (uint64_t)span) {                \
                    out = 1;                                             \
                    break;                                               \
                }                                                        \
            }                                                            \
            if (!out) {                                                  \
                int64_t *p0 = part, *p1 = part + cells,                  \
                        *p2 = part + 2 * cells, *p3 = part + 3 * cells;  \
                for (j = 0; j + 3 < m; j += 4) {                         \
                    int64_t k0 = key[j], k1 = key[j + 1],                \
                            k2 = key[j + 2], k3 = key[j + 3];            \
                    p0[k0] += (int64_t)W[lo + j];                        \
                    p1[k1] += (int64_t)W[lo + j + 1];                    \
                    p2[k2] += (int64_t)W[lo + j + 2];                    \
                    p3[k3] += (int64_t)W[lo + j + 3];                    \
                    seen[k0] = 1;                                        \
                    seen[k1] = 1;                                        \
                    seen[k2] = 1;                                        \
                    seen[k3] = 1;                                        \
                }                                                        \
                for (; j < m; j++) {                                     \
                    p0[key[j]] += (int64_t)W[lo + j];                    \
                    seen[key[j]] = 1;                                    \
                }                                                        \
            }
            if (splittable) {
                Py_ssize_t repeats = 0;
                for (j = 1; j < m; j++) repeats += key[j] == key[j - 1];
                if (4 * repeats >= m && part == NULL) {  /* (allocated at the first runs) */
                    part = (int64_t *)calloc((size_t)(SPLIT * cells), sizeof(int64_t));
                    seen = (unsigned char *)calloc((size_t)cells, 1);
                    if (part == NULL || seen == NULL) {  /* (no memory: the plain loop) */
                        free(part);
                        free(seen);
                        part = NULL;
                        seen = NULL;
                        splittable = 0;
                    }
                }
                if (4 * repeats >= m && part != NULL) {
                    if (wnarrow) { COUNT_SPLIT(w32) }
                    else { COUNT_SPLIT(w64) }
                    if (out) {
                        bad = 2;
                        break;
                    }
                    continue;
                }
            }
#undef COUNT_SPLIT
/* (a key outside the span stops the block before it is written; in a window, the keys
 * outside it are skipped) */
#define COUNT_BLOCK(C, W, T, MARK)                                       \
            for (j = 0; j < m; j++) {                                    \
                int64_t kk = key[j];                                     \
                if ((uint64_t)kk >= (uint64_t)span) {                    \
                    out = 1;                                             \
                    break;                                               \
                }                                                        \
                C[kk] += (T)W[lo + j];                                   \
                MARK(kk);                                                \
            }
#define MARK_BIT(kk) (bits[(kk) >> 6] |= (uint64_t)1 << ((kk) & 63))
#define MARK_FLAG(kk) (flag[kk] = 1)
#define COUNT_WINDOW(C, W, T)                                            \
            for (j = 0; j < m; j++) {                                    \
                int64_t kk = key[j];                                     \
                uint64_t rel = (uint64_t)(kk - first);                   \
                if ((uint64_t)kk >= (uint64_t)span) {                    \
                    out = 1;                                             \
                    break;                                               \
                }                                                        \
                if (rel < (uint64_t)cells) {                             \
                    C[rel] += (T)W[lo + j];                              \
                    bits[rel >> 6] |= (uint64_t)1 << (rel & 63);         \
                }                                                        \
            }
            if (flag != NULL) {
                if (narrow && wnarrow) { COUNT_BLOCK(c32, w32, int32_t, MARK_FLAG) }
                else if (narrow) { COUNT_BLOCK(c32, w64, int32_t, MARK_FLAG) }
                else if (wnarrow) { COUNT_BLOCK(c64, w32, int64_t, MARK_FLAG) }
                else { COUNT_BLOCK(c64, w64, int64_t, MARK_FLAG) }
            } else if (cells == span) {
                if (narrow && wnarrow) { COUNT_BLOCK(c32, w32, int32_t, MARK_BIT) }
                else if (narrow) { COUNT_BLOCK(c32, w64, int32_t, MARK_BIT) }
                else if (wnarrow) { COUNT_BLOCK(c64, w32, int64_t, MARK_BIT) }
                else { COUNT_BLOCK(c64, w64, int64_t, MARK_BIT) }
            } else {
                if (narrow && wnarrow) { COUNT_WINDOW(c32, w32, int32_t) }
                else if (narrow) { COUNT_WINDOW(c32, w64, int32_t) }
                else if (wnarrow) { COUNT_WINDOW(c64, w32, int64_t) }
                else { COUNT_WINDOW(c64, w64, int64_t) }
            }
#undef COUNT_BLOCK
#undef COUNT_WINDOW
#undef MARK_BIT
#undef MARK_FLAG
            if (out) {
                bad = 2;
                break;
            }
        }
        if (part != NULL) {  /* the partial histograms summed (also the cells counted
                                before a bad key: the caller zeroes them, as after the loop) */
            for (k = 0; k < cells; k++) {
                int64_t sum = 0;
                int p;
                if (!seen[k]) continue;
                for (p = 0; p < SPLIT; p++) sum += part[p * cells + k];
                if (narrow) c32[k] += (int32_t)sum;
                else c64[k] += sum;
                bits[k >> 6] |= (uint64_t)1 << (k & 63);
            }
            free(part);
            free(seen);
        }
        if (flag != NULL) flags_to_bits(flag, cells, bits);  /* (also after a bad key) */
        for (k = 0; k < words; k++) distinct += __builtin_popcountll(bits[k]);
        Py_END_ALLOW_THREADS
    }
    digits_release(&d);
    release_buffers(3, bufs);
    if (fl.obj != NULL) PyBuffer_Release(&fl);
    if (bad) {
        PyErr_SetString(PyExc_IndexError, bad == 1 ? "a code is outside its lookup table"
                                                    : "a key is outside the counted span");
        return NULL;
    }
    return PyLong_FromSsize_t(distinct);
fail:
    release_buffers(3, bufs);
    if (fl.obj != NULL) PyBuffer_Release(&fl);
    return NULL;
}

/* sort_sum(cols, tables, scales, extra, weights, span, wbits, keys, sums) -> int
 *     The rows' keys (as lookup_sum), each packed above its weight (key << wbits | weight, in a
 *     uint64: the caller checks that bits(span - 1) + wbits <= 64), sorted by a least
 *     significant digit radix sort on the key's bits (RADIX_BITS at most a pass; a pass whose
 *     digit is the same in every row is skipped), then the weights of each run of equal keys
 *     summed: the distinct keys in increasing order into keys[j], their sums into sums[j];
 *     returns the distinct keys. keys and sums (int64, at least the rows' length) are also the
 *     sort's two buffers (no other memory of the rows' size). For key spans too wide to count:
 *     one pass builds, packs and histograms the keys, a few passes scatter them, rather than a
 *     comparison sort and the gathers of the keys and weights by its order. A code outside its
 *     table or a key outside [0, span) raises IndexError, a weight outside [0, 2**wbits)
 *     ValueError (nothing is read or written out of bounds; keys and sums are then
 *     undefined). */
#define RADIX_BITS 11
#define RADIX_MAX_PASSES 6

/* LSD radix sort of the n packed values in *a (their key's bits from bit shift up, passes
 * digits of width bits, hist[p] the counts of pass p's digits), scattered between *a and *b;
 * *a holds the sorted values at the end (the two pointers swapped after each scatter). */
static void radix_sort_packed(uint64_t **a, uint64_t **b, Py_ssize_t n, int shift, int width,
                              int passes, Py_ssize_t (*hist)[1 << RADIX_BITS]) {
    Py_ssize_t j, x, mask = ((Py_ssize_t)1 << width) - 1;
    int p;
    for (p = 0; p < passes; p++) {
        Py_ssize_t *h = hist[p], sum = 0;
        int at = shift + p * width;
        uint64_t *src = *a, *dst = *b;
        for (x = 0; x <= mask; x++)
            if (h[x] == n) break;
        if (x <= mask) continue;  /* one digit in every row: the order stays */
        for (x = 0; x <= mask; x++) {
            Py_ssize_t c = h[x];
            h[x] = sum;
            sum += c;
        }
        for (j = 0; j < n; j++) dst[h[(src[j] >> at) & mask]++] = src[j];
        *a = dst;
        *b = src;
    }
}

/* The distinct keys of the n sorted packed values of a (key << wbits | weight) into keys and
 * their summed weights into sums; returns the distinct keys. a may be keys or sums itself:
 * value j is read before anything at or below j is written. */
static Py_ssize_t run_sums_packed(const uint64_t *a, Py_ssize_t n, int wbits, int64_t *keys,
                                  int64_t *sums) {
    Py_ssize_t j, distinct = 0;
    uint64_t wm = ((uint64_t)1 << wbits) - 1;
    for (j = 0; j < n; j++) {
        uint64_t v = a[j];
        int64_t k = (int64_t)(v >> wbits), wt = (int64_t)(v & wm);
        if (distinct && keys[distinct - 1] == k) {
            sums[distinct - 1] += wt;
        } else {
            keys[distinct] = k;
            sums[distinct] = wt;
            distinct++;
        }
    }
    return distinct;
}

static PyObject *sort_sum(PyObject *self, PyObject *args) {
    PyObject *cols, *tables, *scales, *extra, *objs[3];
    Py_buffer bufs[3], *w = &bufs[0], *ko = &bufs[1], *so = &bufs[2];
    static const int writable[3] = {0, 1, 1};
    static const char *names[3] = {"weights", "keys", "sums"};
    Digits d;
    Py_ssize_t rows, span, lo, j, distinct = 0;
    int wbits, bits, passes, width, bad = 0, p;
    uint64_t *a, *b;
    Py_ssize_t (*hist)[1 << RADIX_BITS] = NULL;
    int64_t key[BLOCK];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOniOO", &cols, &tables, &scales, &extra, &objs[0], &span,
                          &wbits, &objs[1], &objs[2]))
        return NULL;
    if (get_int_buffers(3, objs, bufs, writable, names) < 0) return NULL;
    rows = w->len / w->itemsize;
    bits = span > 1 ? 64 - __builtin_clzll((unsigned long long)(span - 1)) : 1;
    if (w->itemsize == 2 || ko->itemsize != 8 || so->itemsize != 8 || ko->len / 8 < rows
            || so->len / 8 < rows || span < 1 || wbits < 1 || bits + wbits > 64) {
        PyErr_SetString(PyExc_ValueError, "sort_sum: int32/int64 weights, int64 keys and sums "
                        "of the rows' length, bits(span - 1) + wbits <= 64 expected");
        release_buffers(3, bufs);
        return NULL;
    }
    if (digits_parse(cols, tables, scales, extra, rows, &d) < 0) {
        release_buffers(3, bufs);
        return NULL;
    }
    passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
    width = (bits + passes - 1) / passes;
    a = (uint64_t *)ko->buf;
    b = (uint64_t *)so->buf;
    hist = calloc((size_t)passes, sizeof(*hist));
    if (hist == NULL) {
        digits_release(&d);
        release_buffers(3, bufs);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    {
        const int32_t *w32 = (const int32_t *)w->buf;
        const int64_t *w64 = (const int64_t *)w->buf;
        uint64_t wmax = (uint64_t)1 << wbits, mask = ((uint64_t)1 << width) - 1;
        for (lo = 0; lo < rows && !bad; lo += BLOCK) {
            Py_ssize_t m = rows - lo < BLOCK ? rows - lo : BLOCK;
            if (block_keys(&d, lo, m, key) < 0) {
                bad = 1;
                break;
            }
            for (j = 0; j < m; j++) {
                uint64_t k = (uint64_t)key[j];
                uint64_t wt = w->itemsize == 4 ? (uint64_t)(int64_t)w32[lo + j]
                                               : (uint64_t)w64[lo + j];
                if (k >= (uint64_t)span) {
                    bad = 2;
                    break;
                }
                if (wt >= wmax) {
                    bad = 3;
                    break;
                }
                for (p = 0; p < passes; p++) hist[p][(k >> (p * width)) & mask]++;
                a[lo + j] = k << wbits | wt;
            }
        }
        if (!bad) {
            radix_sort_packed(&a, &b, rows, wbits, width, passes, hist);
            distinct = run_sums_packed(a, rows, wbits, (int64_t *)ko->buf, (int64_t *)so->buf);
        }
    }
    Py_END_ALLOW_THREADS
    free(hist);
    digits_release(&d);
    release_buffers(3, bufs);
    if (bad) {
        PyErr_SetString(bad == 3 ? PyExc_ValueError : PyExc_IndexError,
                        bad == 1 ? "a code is outside its lookup table"
                        : bad == 2 ? "a key is outside the sorted span"
                                   : "a weight is outside [0, 2**wbits)");
        return NULL;
    }
    return PyLong_FromSsize_t(distinct);
}

/* Each occupied cell i < span of the bitmap, in increasing order, its bit cleared, then
 * BODY with i set (a bit past the span is never set by count_keys: skipped). */
#define FOR_EACH_CELL(bits, words, span, i, ...)                                             \
    do {                                                                                     \
        Py_ssize_t w_;                                                                       \
        for (w_ = 0; w_ < (words); w_++) {                                                   \
            uint64_t b_ = (bits)[w_];                                                        \
            if (!b_) continue;                                                               \
            (bits)[w_] = 0;                                                                  \
            while (b_) {                                                                     \
                Py_ssize_t i = (w_ << 6) + __builtin_ctzll(b_);                              \
                b_ &= b_ - 1;                                                                \
                if (i >= (span)) continue;                                                   \
                __VA_ARGS__                                                                  \
            }                                                                                \
        }                                                                                    \
    } while (0)

/* The count of cell i of an int32 or int64 count array, the cell zeroed. */
static inline int64_t take_cell(const Py_buffer *cnt, Py_ssize_t i) {
    int64_t v;
    if (cnt->itemsize == 4) {
        v = ((int32_t *)cnt->buf)[i];
        ((int32_t *)cnt->buf)[i] = 0;
    } else {
        v = ((int64_t *)cnt->buf)[i];
        ((int64_t *)cnt->buf)[i] = 0;
    }
    return v;
}

static PyObject *read_cells(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    Py_buffer bufs[4], *cnt = &bufs[0], *bm = &bufs[1], *keys = &bufs[2], *sums = &bufs[3];
    static const int writable[4] = {1, 1, 1, 1};
    static const char *names[4] = {"counts", "bitmap", "keys", "sums"};
    Py_ssize_t words, span, cap, j = 0, first = 0;
    int over = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO|n", &objs[0], &objs[1], &objs[2], &objs[3], &first))
        return NULL;
    if (get_int_buffers(4, objs, bufs, writable, names) < 0) return NULL;
    span = cnt->len / cnt->itemsize;
    words = bm->len / 8;
    cap = keys->len / 8;
    if (bm->itemsize != 8 || keys->itemsize != 8 || sums->itemsize != 8 || sums->len != keys->len
            || cnt->itemsize == 2 || words < (span + 63) / 64) {
        PyErr_SetString(PyExc_TypeError, "read_cells: bad arguments");
        goto done;
    }
    {
        uint64_t *bits = (uint64_t *)bm->buf;
        int64_t *kk = (int64_t *)keys->buf, *ss = (int64_t *)sums->buf;
        Py_ssize_t w, occupied = 0;
        for (w = 0; w < words; w++) occupied += __builtin_popcountll(bits[w]);
        over = occupied > cap;  /* (checked before anything is written; bits past the span,
                                    never set by count_keys, only make this stricter) */
        if (!over) {
            Py_BEGIN_ALLOW_THREADS
            /* (one loop per count width: no test of the width or of the room per cell) */
#define READ_CELLS(T)                                                                        \
            do {                                                                             \
                T *c = (T *)cnt->buf;                                                        \
                FOR_EACH_CELL(bits, words, span, i, {                                        \
                    kk[j] = first + i;                                                       \
                    ss[j] = c[i];                                                            \
                    c[i] = 0;                                                                \
                    j++;                                                                     \
                });                                                                          \
            } while (0)
            if (cnt->itemsize == 4) READ_CELLS(int32_t);
            else READ_CELLS(int64_t);
#undef READ_CELLS
            Py_END_ALLOW_THREADS
        } else {  /* nothing written; the cells zeroed all the same (kept scratch arrays) */
            FOR_EACH_CELL(bits, words, span, i, { (void)take_cell(cnt, i); });
        }
    }
    if (over) PyErr_SetString(PyExc_ValueError, "read_cells: more occupied cells than room");
done:
    release_buffers(4, bufs);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(j);
}

/* read_cells_split(counts, bitmap, ns, s, n, row_class, class_keys, class_size[, first])
 *     -> (rows, classes): read_cells whose keys are class * ns + sensitive id, split as the
 *     search reads a roll-up: per occupied cell in key order its sensitive id s (int32), count
 *     n and class index row_class (int64); per class (a run of equal key // ns) its key
 *     class_keys and its summed count class_size (int64). counts and bitmap zeroed. */
static PyObject *read_cells_split(PyObject *self, PyObject *args) {
    PyObject *objs[7];
    Py_buffer bufs[7], *cnt = &bufs[0], *bm = &bufs[1];
    static const int writable[7] = {1, 1, 1, 1, 1, 1, 1};
    static const char *names[7] = {"counts", "bitmap", "s", "n", "row_class", "class_keys",
                                   "class_size"};
    Py_ssize_t words, span, cap, j = 0, first = 0, classes = 0;
    long long ns;
    int over = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLOOOOO|n", &objs[0], &objs[1], &ns, &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &first))
        return NULL;
    if (get_int_buffers(7, objs, bufs, writable, names) < 0) return NULL;
    span = cnt->len / cnt->itemsize;
    words = bm->len / 8;
    cap = bufs[3].len / 8;
    if (bm->itemsize != 8 || bufs[2].itemsize != 4 || bufs[3].itemsize != 8
            || bufs[4].itemsize != 8 || bufs[5].itemsize != 8 || bufs[6].itemsize != 8
            || bufs[2].len / 4 != cap || bufs[4].len / 8 != cap || bufs[5].len / 8 != cap
            || bufs[6].len / 8 != cap || cnt->itemsize == 2 || words < (span + 63) / 64
            || ns < 1) {
        PyErr_SetString(PyExc_TypeError, "read_cells_split: bad arguments");
        goto done;
    }
    {
        uint64_t *bits = (uint64_t *)bm->buf;
        int32_t *s = (int32_t *)bufs[2].buf;
        int64_t *nn = (int64_t *)bufs[3].buf, *rc = (int64_t *)bufs[4].buf;
        int64_t *ck = (int64_t *)bufs[5].buf, *cs = (int64_t *)bufs[6].buf;
        int64_t start = 0, end = 0;  /* the current class's keys: [start, end) */
        Py_BEGIN_ALLOW_THREADS
        FOR_EACH_CELL(bits, words, span, i, {
            int64_t v = take_cell(cnt, i), key = (int64_t)first + i;
            if (j >= cap) {
                over = 1;
                continue;
            }
            if (key >= end) {  /* a new class (keys ascend: classes come in key order; one
                                  division a class, not a cell) */
                int64_t c = key / ns;
                start = c * ns;
                end = start + ns;
                ck[classes] = c;
                cs[classes] = 0;
                classes++;
            }
            s[j] = (int32_t)(key - start);
            nn[j] = v;
            rc[j] = classes - 1;
            cs[classes - 1] += v;
            j++;
        });
        Py_END_ALLOW_THREADS
    }
    if (over) PyErr_SetString(PyExc_ValueError, "read_cells_split: more occupied cells than room");
done:
    release_buffers(7, bufs);
    if (PyErr_Occurred()) return NULL;
    return Py_BuildValue("(nn)", j, classes);
}

/* masked_sum(values, mask) -> int: the sum of values[i] (int64) where mask[i] (one byte each,
 * a numpy bool array, any non-zero byte counting as true), without the int64 copy of the mask
 * numpy's dot product makes (a fresh array per call). Both C-contiguous and of one length. */
static PyObject *masked_sum(PyObject *self, PyObject *args) {
    PyObject *vo, *mo;
    Py_buffer vb, mb;
    Py_ssize_t n, i;
    int64_t total = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &vo, &mo)) return NULL;
    if (PyObject_GetBuffer(vo, &vb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(mo, &mb, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&vb);
        return NULL;
    }
    n = mb.len;
    if (mb.itemsize != 1 || vb.itemsize != 8 || vb.len != 8 * n || !vb.format
            || !strchr("qln", vb.format[vb.format[0] == '<' || vb.format[0] == '=' ||
                                        vb.format[0] == '@'])) {
        PyErr_SetString(PyExc_TypeError, "masked_sum: int64 values and a byte mask of their "
                        "length expected");
    } else {
        const int64_t *v = (const int64_t *)vb.buf;
        const uint8_t *m = (const uint8_t *)mb.buf;
        Py_BEGIN_ALLOW_THREADS
        /* (branch-free: a scattered mask would mispredict a branch on about half the
         * classes) */
        for (i = 0; i < n; i++) total += v[i] & -(int64_t)(m[i] != 0);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&vb);
    PyBuffer_Release(&mb);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLongLong((long long)total);
}

static PyMethodDef methods[] = {
    {"lookup_sum", lookup_sum, METH_VARARGS, "out[r] = sum_i digit_i(cols[i][r]) + extra[r]"},
    {"count_keys", count_keys, METH_VARARGS,
     "count the rows' keys into counts (bitmap of occupied cells); returns the cells"},
    {"sort_sum", sort_sum, METH_VARARGS,
     "distinct keys of the rows in increasing order and their summed weights (radix sort)"},
    {"read_cells", read_cells, METH_VARARGS,
     "occupied cells in key order into keys/sums; counts and bitmap zeroed"},
    {"read_cells_split", read_cells_split, METH_VARARGS,
     "occupied cells in key order split into sensitive ids, counts, classes; zeroed"},
    {"masked_sum", masked_sum, METH_VARARGS, "sum of int64 values where a byte mask is set"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_counting",
    "Compiled roll-up kernels (see ldiv_polars.search.counting).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__counting(void) { return PyModule_Create(&module); }
