/* Compiled evaluation of the ordered-distance EMD of t-closeness (see
 * ldiv_polars/models/emd_arrays.py, which owns the definition, checks the arguments and holds
 * the numpy twin of this function: the parity oracle and the fallback without a compiler).
 *
 *   ordered_emd(cls, s, n, pos, size, cum_t, st, total, emd
 *               [, kept, kst, numer, spread]) -> int
 *
 * The rows (class cls[r], sensitive id s[r], count n[r]; int64, int32 or int64, int64) are
 * grouped by class and, within a class, in increasing position pos[s[r]] of their value
 * along the m values present in the
 * table (cum_t: the table's cumulative counts T_0 <= ... <= T_{m-1} = total along them; st:
 * their prefix sums, st[j] = T_0 + ... + T_{j-1}; size: each class's row count N_c). Per
 * class c with rows, in ONE pass over its rows and exact integer arithmetic:
 *
 *   emd[c] = sum_{i < m-1} |C_i N - T_i N_c| / ((m-1) N_c N)
 *
 * (C_i: the class's cumulative count; N = total), summed stretch by stretch: C is constant
 * from a value of the class to the next one, and each stretch splits where T_j N_c <= C N
 * stops holding (a scan of a short stretch, else a binary search over cum_t), so the
 * stretch's sum is closed-form from st. The integers are int64 when every sum fits
 * (4 m N^2 < 2^62), else 128-bit (a compiler without them skips this optional module); the
 * one division per class rounds once.
 *
 * With kept and kst (m entries each; the floor of the model's suppression, docs/anonymize.md:
 * kept[j] is the number of the gaps i -> i+1, i < j, that are not flat, kst[j] the sum of
 * their T_i), also
 *   numer[c]  = the same sum over the kept gaps only               (= f.(p - q))
 *   spread[c] = max over the class's values of f - f.q             (f in steps of 1/(m-1))
 * where f falls across a kept gap with C_i N >= T_i N_c, rises across the other kept gaps,
 * and is flat across the others (f = 0 at the first value).
 *
 * For a small domain ((m - 1) classes <= 8 rows, set_dense_ratio changes the 8) the EMD's
 * exact integers are summed class by class over the m positions instead (DEFINE_DENSE):
 * the same results bit for bit, the rows then grouped by class in any order within one.
 *
 * ordered_verdict and ordered_floor run the same pass and then the model's per-class
 * verdict or floor in the same call (one call per node of the search; see each).
 *
 * Classes without rows are left as they are (the caller zeroes the outputs). Returns 0, or 1
 * when the rows are not grouped by class in increasing position (then the outputs are
 * partial: the caller sorts the rows and calls again). A class or sensitive id out of range,
 * an id absent from the table, or arrays of the wrong length raise IndexError or ValueError.
 * The GIL is released while the loop runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef __SIZEOF_INT128__
#error "the ordered EMD kernel needs 128-bit integers (the build is optional: numpy is used)"
#endif
typedef __int128 wide_t;

/* A C-contiguous buffer of 2-, 4- or 8-byte integers, of doubles (want_float == 1) or of
 * numpy bools (want_float == 2). */
static int get_buffer(PyObject *o, Py_buffer *b, int writable, int want_float,
                      const char *what) {
    const char *f;
    char code;
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                           (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    f = b->format ? b->format : "B";
    if (*f == '@' || *f == '=' || *f == (PY_LITTLE_ENDIAN ? '<' : '>')) f++;
    code = f[0] && !f[1] ? f[0] : '?';
    if (want_float == 2 ? !(b->itemsize == 1 && code == '?')
        : want_float ? !(b->itemsize == 8 && code == 'd')
                     : !((b->itemsize == 2 && strchr("hH", code)) ||
                         ((b->itemsize == 4 || b->itemsize == 8) && strchr("iIlLqQnN", code)))) {
        PyErr_Format(PyExc_TypeError, "%s: %s expected", what,
                     want_float == 2 ? "bool" : want_float ? "float64"
                                                           : "2-, 4- or 8-byte integers");
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static inline Py_ssize_t len_of(const Py_buffer *b) { return b->len / b->itemsize; }

typedef struct {
    Py_buffer cls, s, n, pos, size, cum_t, st, emd, kept, kst, numer, spread;
    int floor;
    int64_t total;
} Args;

/* The pass over rows of sensitive ids of type S, in integers of type W (int64_t when every
 * sum fits: 4 m N^2 < 2^62, else 128-bit); 0, 1 (rows out of order), -1 (IndexError), -2
 * (an id absent from the table). cls, n, pos, size are int64. The split of a stretch is the
 * last j in [a, b] with T_j N_c <= C N (a - 1 when none), by binary search over cum_t. */
#define DEFINE_RUN(NAME, S, W)                                                              \
static int NAME(const Args *x) {                                                            \
    Py_ssize_t rows = len_of(&x->cls), r = 0, m = len_of(&x->cum_t);                        \
    Py_ssize_t classes = len_of(&x->emd), n_ids = len_of(&x->pos);                          \
    const int64_t *cls = (const int64_t *)x->cls.buf, *cnt = (const int64_t *)x->n.buf;     \
    const S *sid = (const S *)x->s.buf;                                                     \
    const int64_t *pos = (const int64_t *)x->pos.buf, *size = (const int64_t *)x->size.buf; \
    const int64_t *cum_t = (const int64_t *)x->cum_t.buf, *st = (const int64_t *)x->st.buf; \
    const int64_t *kept = x->floor ? (const int64_t *)x->kept.buf : NULL;                   \
    const int64_t *kst = x->floor ? (const int64_t *)x->kst.buf : NULL;                     \
    double *emd = (double *)x->emd.buf;                                                     \
    double *numer = x->floor ? (double *)x->numer.buf : NULL;                               \
    double *spread = x->floor ? (double *)x->spread.buf : NULL;                             \
    const W big_n = x->total;                                                               \
    int64_t last_c = -1;                                                                    \
    while (r < rows) {                                                                      \
        int64_t c = cls[r], id, nc;                                                         \
        Py_ssize_t a, prev = -1;                                                            \
        W acc = 0, acc_k = 0, fq = 0, cum = 0, f = 0, fmax = 0;                             \
        int first = 1;                                                                      \
        if (c < 0 || c >= classes) return -1;                                               \
        if (c < last_c) return 1; /* not grouped by class */                                \
        last_c = c;                                                                         \
        nc = size[c];                                                                       \
        for (; r < rows && cls[r] == c; r++) {                                              \
            Py_ssize_t b, s_, lo, hi;                                                       \
            W cn;                                                                           \
            id = sid[r];                                                                    \
            if (id < 0 || id >= n_ids) return -1;                                           \
            a = pos[id];                                                                    \
            if (a < 0 || a >= m) return -2;                                                 \
            if (a <= prev) return 1;                                                        \
            if (first) { /* the head: P = 0 < Q before the class's first value */           \
                acc += (W)nc * st[a];                                                       \
                if (kept) {                                                                 \
                    acc_k += (W)nc * kst[a];                                                \
                    fq += big_n * kept[a] - kst[a];                                         \
                    f = fmax = kept[a];                                                     \
                }                                                                           \
                first = 0;                                                                  \
            } else if (f > fmax) {                                                          \
                fmax = f;                                                                   \
            }                                                                               \
            cum += cnt[r];                                                                  \
            prev = a;                                                                       \
            b = m - 2;                                                                      \
            if (r + 1 < rows && cls[r + 1] == c) { /* up to the class's next value */       \
                int64_t next = sid[r + 1];                                                  \
                if (next < 0 || next >= n_ids) return -1;                                   \
                b = pos[next] - 1; /* (checked on its turn) */                              \
            }                                                                               \
            if (b < a) continue; /* the last value, or rows out of order: no gap */         \
            cn = cum * big_n;                                                               \
            if (b - a < 16) { /* a short stretch: a scan */                                 \
                s_ = a - 1;                                                                 \
                while (s_ < b && (W)cum_t[s_ + 1] * nc <= cn) s_++;                         \
            } else {                                                                        \
                lo = a;                                                                     \
                hi = b;                                                                     \
                while (lo <= hi) {                                                          \
                    Py_ssize_t mid = lo + (hi - lo) / 2;                                    \
                    if ((W)cum_t[mid] * nc <= cn) lo = mid + 1; else hi = mid - 1;          \
                }                                                                           \
                s_ = lo - 1;                                                                \
            }                                                                               \
            acc += cn * (s_ - a + 1) - (W)nc * (st[s_ + 1] - st[a])                         \
                   + (W)nc * (st[b + 1] - st[s_ + 1]) - cn * (b - s_);                      \
            if (kept) {                                                                     \
                int64_t falls = kept[s_ + 1] - kept[a], rises = kept[b + 1] - kept[s_ + 1]; \
                int64_t tf = kst[s_ + 1] - kst[a], tr = kst[b + 1] - kst[s_ + 1];           \
                acc_k += cn * falls - (W)nc * tf + (W)nc * tr - cn * rises;                 \
                fq += (big_n * rises - tr) - (big_n * falls - tf);                          \
                f += rises - falls;                                                         \
            }                                                                               \
        }                                                                                   \
        if (m > 1 && nc > 0) {                                                              \
            double scale = (double)(m - 1) * (double)nc * (double)x->total;                 \
            emd[c] = (double)acc / scale;                                                   \
            if (kept) {                                                                     \
                numer[c] = (double)acc_k / scale;                                           \
                spread[c] = (double)(fmax * big_n - fq)                                     \
                            / ((double)(m - 1) * (double)x->total);                         \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    return 0;                                                                               \
}

/* The EMD (not the floor's terms) class by class over the m positions: the class's counts
 * scattered into `at` (m zeros on entry, zeros again on exit), then one loop over the m - 1
 * gaps, each term |C_j N - T_j N_c| directly: the same exact integers as the stretches (so
 * the same results, bit for bit), O(m) a class and branch-free; chosen for small domains
 * (run()). The rows must be grouped by class (in increasing class); within a class any
 * order. Returns as DEFINE_RUN's (1 also for a (class, value) pair met twice). */
#define DEFINE_DENSE(NAME, S, W)                                                            \
static int NAME(const Args *x, int64_t *at) {                                               \
    Py_ssize_t rows = len_of(&x->cls), r = 0, m = len_of(&x->cum_t), j, r0;                 \
    Py_ssize_t classes = len_of(&x->emd), n_ids = len_of(&x->pos);                          \
    const int64_t *cls = (const int64_t *)x->cls.buf, *cnt = (const int64_t *)x->n.buf;     \
    const S *sid = (const S *)x->s.buf;                                                     \
    const int64_t *pos = (const int64_t *)x->pos.buf, *size = (const int64_t *)x->size.buf; \
    const int64_t *cum_t = (const int64_t *)x->cum_t.buf;                                   \
    double *emd = (double *)x->emd.buf;                                                     \
    const W big_n = x->total;                                                               \
    int64_t last_c = -1;                                                                    \
    while (r < rows) {                                                                      \
        int64_t c = cls[r], nc;                                                             \
        W acc = 0, cum = 0;                                                                 \
        int bad = 0;                                                                        \
        if (c < 0 || c >= classes) return -1;                                               \
        if (c <= last_c) return 1; /* not grouped by class */                               \
        last_c = c;                                                                         \
        nc = size[c];                                                                       \
        for (r0 = r; r < rows && cls[r] == c; r++) {                                        \
            int64_t id = sid[r], a;                                                         \
            if (id < 0 || id >= n_ids) bad = -1;                                            \
            else if ((a = pos[id]) < 0 || a >= m) bad = bad ? bad : -2;                     \
            else if (at[a]) bad = bad ? bad : 1;                                            \
            else at[a] = cnt[r];                                                            \
        }                                                                                   \
        if (bad) { /* leave `at` zeroed for the caller's next call */                       \
            for (; r0 < r; r0++) {                                                          \
                int64_t id = sid[r0];                                                       \
                if (id >= 0 && id < n_ids && pos[id] >= 0 && pos[id] < m) at[pos[id]] = 0;  \
            }                                                                               \
            return bad;                                                                     \
        }                                                                                   \
        for (j = 0; j < m - 1; j++) {                                                       \
            W d;                                                                            \
            cum += at[j];                                                                   \
            at[j] = 0;                                                                      \
            d = cum * big_n - (W)cum_t[j] * nc;                                             \
            acc += d >= 0 ? d : -d;                                                         \
        }                                                                                   \
        at[m - 1] = 0;                                                                      \
        if (m > 1 && nc > 0)                                                                \
            emd[c] = (double)acc / ((double)(m - 1) * (double)nc * (double)x->total);       \
    }                                                                                       \
    return 0;                                                                               \
}

DEFINE_RUN(run_i32_w64, int32_t, int64_t)
DEFINE_RUN(run_i64_w64, int64_t, int64_t)
DEFINE_RUN(run_i32_w128, int32_t, wide_t)
DEFINE_RUN(run_i64_w128, int64_t, wide_t)
DEFINE_DENSE(dense_i32_w64, int32_t, int64_t)
DEFINE_DENSE(dense_i64_w64, int64_t, int64_t)
DEFINE_DENSE(dense_i32_w128, int32_t, wide_t)
DEFINE_DENSE(dense_i64_w128, int64_t, wide_t)

/* Whether 4 m N^2 < 2^62: every sum of the pass fits in int64. */
static int fits_int64(int64_t total, Py_ssize_t m) {
    double bound = 4.0 * (double)(m + 1) * (double)total * (double)total;
    return bound < 4.0e18;
}

/* The dense pass (the EMD alone) when its m - 1 gaps a class cost at most this many rows'
 * stretches in all (set_dense_ratio: tests force either pass; 0 never dense). */
static double dense_ratio = 8.0;

static int run(const Args *x) {
    Py_ssize_t m = len_of(&x->cum_t), rows = len_of(&x->cls);
    int narrow = fits_int64(x->total, m), rc;
    int64_t *at;
    if (m > 1 && !x->floor
            && (double)(m - 1) * (double)len_of(&x->emd) <= dense_ratio * (double)rows
            && (at = (int64_t *)calloc((size_t)m, sizeof(int64_t))) != NULL) {
        if (x->s.itemsize == 4) rc = narrow ? dense_i32_w64(x, at) : dense_i32_w128(x, at);
        else rc = narrow ? dense_i64_w64(x, at) : dense_i64_w128(x, at);
        free(at);
        return rc;
    }
    if (x->s.itemsize == 4) return narrow ? run_i32_w64(x) : run_i32_w128(x);
    return narrow ? run_i64_w64(x) : run_i64_w128(x);
}

static PyObject *set_dense_ratio(PyObject *self, PyObject *arg) {
    double old = dense_ratio, v = PyFloat_AsDouble(arg);
    (void)self;
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    dense_ratio = v;
    return PyFloat_FromDouble(old);
}

/* get_buffer over o[0..count) into bufs (writes, kind: get_buffer's flags per buffer; wide:
 * int64 only; the ids, index 1, int32 or int64); *got counts the buffers to release. -1
 * with the error set. */
static int get_all(PyObject **o, Py_buffer **bufs, int count, const char *const *names,
                   const int *wide, const int *writes, const int *kind, int *got) {
    int i;
    for (i = 0; i < count; i++) {
        if (get_buffer(o[i], bufs[i], writes[i], kind[i], names[i]) < 0) return -1;
        (*got)++;
        if ((wide[i] && bufs[i]->itemsize != 8) || (i == 1 && bufs[i]->itemsize == 2)) {
            PyErr_Format(PyExc_TypeError, "%s: %s expected", names[i],
                         i == 1 ? "int32 or int64" : "int64");
            return -1;
        }
    }
    return 0;
}

/* The error of a pass's answer rc (-1: out of range, -2: absent id; others none). */
static void run_error(int rc) {
    if (rc == -1) PyErr_SetString(PyExc_IndexError, "ordered_emd: a class or id out of range");
    if (rc == -2) PyErr_SetString(PyExc_ValueError, "ordered_emd: an id absent from the table");
}

static PyObject *ordered_emd(PyObject *self, PyObject *args) {
    PyObject *o[12] = {NULL};
    Py_buffer *bufs[12];
    static const char *const names[12] = {"cls", "s", "n", "pos", "size", "cum_t", "st", "emd",
                                    "kept", "kst", "numer", "spread"};
    static const int wide[12] = {1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0};  /* int64 only */
    static const int fl[12] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1};
    Args x;
    long long total;
    int i, got = 0, rc = 0, nbuf;
    Py_ssize_t rows, m, classes;
    (void)self;
    memset(&x, 0, sizeof(x));
    if (!PyArg_ParseTuple(args, "OOOOOOOLO|OOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &total, &o[7], &o[8], &o[9], &o[10], &o[11]))
        return NULL;
    bufs[0] = &x.cls; bufs[1] = &x.s; bufs[2] = &x.n; bufs[3] = &x.pos; bufs[4] = &x.size;
    bufs[5] = &x.cum_t; bufs[6] = &x.st; bufs[7] = &x.emd; bufs[8] = &x.kept;
    bufs[9] = &x.kst; bufs[10] = &x.numer; bufs[11] = &x.spread;
    x.floor = o[8] != NULL;
    if (x.floor && (!o[9] || !o[10] || !o[11])) {
        PyErr_SetString(PyExc_TypeError, "ordered_emd: kept, kst, numer and spread together");
        return NULL;
    }
    nbuf = x.floor ? 12 : 8;
    if (get_all(o, bufs, nbuf, names, wide, fl, fl, &got) < 0) goto done;
    x.total = total;
    rows = len_of(&x.cls);
    m = len_of(&x.cum_t);
    classes = len_of(&x.emd);
    if (len_of(&x.s) != rows || len_of(&x.n) != rows || len_of(&x.st) != m + 1
            || len_of(&x.size) != classes || total < 0
            || (x.floor && (len_of(&x.kept) != m || len_of(&x.kst) != m
                            || len_of(&x.numer) != classes || len_of(&x.spread) != classes))) {
        PyErr_SetString(PyExc_ValueError, "ordered_emd: arrays of inconsistent lengths");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = run(&x);
    Py_END_ALLOW_THREADS
    run_error(rc);
done:
    for (i = 0; i < got; i++) PyBuffer_Release(bufs[i]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(rc);
}

/* Per class after the pass: passed = EMD <= t or no rows, uncertain = |EMD - t| <= band (one
 * bound, or one per class) for a class with rows; the number of uncertain classes. */
static Py_ssize_t verdicts(const Args *x, double t, const Py_buffer *band_buf, char *passed,
                           char *unc) {
    const double *emd = (const double *)x->emd.buf, *band = (const double *)band_buf->buf;
    const int64_t *size = (const int64_t *)x->size.buf;
    Py_ssize_t c, classes = len_of(&x->emd), step = len_of(band_buf) == 1 ? 0 : 1, n = 0;
    for (c = 0; c < classes; c++) {
        double e = emd[c], d = e - t;
        int has = size[c] > 0;
        passed[c] = (char)(!has || e <= t);
        unc[c] = (char)(has && (d < 0 ? -d : d) <= band[c * step]);
        n += unc[c];
    }
    return n;
}

/* Per class after the floor's pass: the ordered floor of t-closeness (ordered_floor's). */
static void floors(const Args *x, double tau, const Py_buffer *band_buf, double *floor_) {
    const double *emd = (const double *)x->emd.buf, *band = (const double *)band_buf->buf;
    const double *numer = (const double *)x->numer.buf;
    const double *spread = (const double *)x->spread.buf;
    const int64_t *size = (const int64_t *)x->size.buf;
    Py_ssize_t c, classes = len_of(&x->emd), step = len_of(band_buf) == 1 ? 0 : 1;
    for (c = 0; c < classes; c++) {
        double b = band[c * step], excess = numer[c] - b - tau, top, den;
        floor_[c] = 0.0;
        if (size[c] <= 0 || !(emd[c] - b > tau) || !(excess > 0)) continue;
        top = spread[c] > numer[c] ? spread[c] : numer[c];
        den = (top + b - tau) * (1.0 + 1e-12);
        floor_[c] = (double)size[c] * excess / den;
    }
}

/* ordered_verdict(cls, s, n, pos, size, cum_t, st, total, emd, t, band, passed, uncertain)
 *   -> int
 *
 * The pass of ordered_emd (same first nine arguments; emd is zeroed first), then per class
 * the model's array verdict (TCloseness.array_verdict owns it; its numpy form is the parity
 * oracle): passed[c] = EMD <= t, uncertain[c] = |EMD - t| <= band (band: one float64 for
 * every class, or one per class); a class without rows (size 0) passes and is certain.
 * Returns the number of uncertain classes, or -1 when the rows are not grouped by class in
 * increasing position (the outputs are then partial: the caller sorts and calls again).
 * Errors as ordered_emd's. */
static PyObject *ordered_verdict(PyObject *self, PyObject *args) {
    PyObject *o[12] = {NULL};
    Py_buffer *bufs[12];
    static const char *const names[12] = {"cls", "s", "n", "pos", "size", "cum_t", "st", "emd",
                                    "band", "passed", "uncertain", ""};
    static const int wide[11] = {1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    static const int kind[11] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2};
    static const int writes[11] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1};
    Py_buffer band_buf, passed_buf, unc_buf;
    Args x;
    long long total;
    double t;
    int i, got = 0, rc = 0;
    Py_ssize_t classes, n_unc = 0;
    (void)self;
    memset(&x, 0, sizeof(x));
    if (!PyArg_ParseTuple(args, "OOOOOOOLOdOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &total, &o[7], &t, &o[8], &o[9], &o[10]))
        return NULL;
    bufs[0] = &x.cls; bufs[1] = &x.s; bufs[2] = &x.n; bufs[3] = &x.pos; bufs[4] = &x.size;
    bufs[5] = &x.cum_t; bufs[6] = &x.st; bufs[7] = &x.emd; bufs[8] = &band_buf;
    bufs[9] = &passed_buf; bufs[10] = &unc_buf;
    if (get_all(o, bufs, 11, names, wide, writes, kind, &got) < 0) goto done;
    x.total = total;
    classes = len_of(&x.emd);
    if (len_of(&x.s) != len_of(&x.cls) || len_of(&x.n) != len_of(&x.cls)
            || len_of(&x.st) != len_of(&x.cum_t) + 1 || len_of(&x.size) != classes
            || total < 0 || len_of(&passed_buf) != classes || len_of(&unc_buf) != classes
            || (len_of(&band_buf) != 1 && len_of(&band_buf) != classes)) {
        PyErr_SetString(PyExc_ValueError, "ordered_verdict: arrays of inconsistent lengths");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    memset(x.emd.buf, 0, (size_t)classes * sizeof(double));
    rc = run(&x);
    if (rc == 0) n_unc = verdicts(&x, t, &band_buf, (char *)passed_buf.buf, (char *)unc_buf.buf);
    Py_END_ALLOW_THREADS
    run_error(rc);
done:
    for (i = 0; i < got; i++) PyBuffer_Release(bufs[i]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(rc == 1 ? -1 : n_unc);
}

/* ordered_floor(cls, s, n, pos, size, cum_t, st, total, emd, kept, kst, numer, spread, tau,
 *               band, floor) -> int
 *
 * The floor's pass of ordered_emd (same arguments up to spread; emd, numer and spread are
 * zeroed first), then per class the ordered suppression floor of t-closeness
 * (TCloseness.suppression_floor owns it; its numpy form is the parity oracle), with tau =
 * t + slack and the rounding bound band (one float64, or one per class): 0 unless the class
 * has rows, EMD - band > tau and numer - band - tau > 0; then
 *   size * (numer - band - tau) / ((max(spread, numer) + band - tau) (1 + 1e-12)).
 * Returns 0, or -1 when the rows are not grouped by class in increasing position (the
 * caller sorts and calls again). Errors as ordered_emd's. */
static PyObject *ordered_floor(PyObject *self, PyObject *args) {
    PyObject *o[14] = {NULL};
    Py_buffer *bufs[14];
    static const char *const names[14] = {"cls", "s", "n", "pos", "size", "cum_t", "st", "emd",
                                    "kept", "kst", "numer", "spread", "band", "floor"};
    static const int wide[14] = {1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0};
    static const int fl[14] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1};
    static const int writes[14] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 1};
    Py_buffer band_buf, floor_buf;
    Args x;
    long long total;
    double tau;
    int i, got = 0, rc = 0;
    Py_ssize_t classes, m;
    (void)self;
    memset(&x, 0, sizeof(x));
    if (!PyArg_ParseTuple(args, "OOOOOOOLOOOOOdOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &total, &o[7], &o[8], &o[9], &o[10], &o[11], &tau, &o[12],
                          &o[13]))
        return NULL;
    bufs[0] = &x.cls; bufs[1] = &x.s; bufs[2] = &x.n; bufs[3] = &x.pos; bufs[4] = &x.size;
    bufs[5] = &x.cum_t; bufs[6] = &x.st; bufs[7] = &x.emd; bufs[8] = &x.kept;
    bufs[9] = &x.kst; bufs[10] = &x.numer; bufs[11] = &x.spread; bufs[12] = &band_buf;
    bufs[13] = &floor_buf;
    if (get_all(o, bufs, 14, names, wide, writes, fl, &got) < 0) goto done;
    x.floor = 1;
    x.total = total;
    classes = len_of(&x.emd);
    m = len_of(&x.cum_t);
    if (len_of(&x.s) != len_of(&x.cls) || len_of(&x.n) != len_of(&x.cls)
            || len_of(&x.st) != m + 1 || len_of(&x.size) != classes || total < 0
            || len_of(&x.kept) != m || len_of(&x.kst) != m || len_of(&x.numer) != classes
            || len_of(&x.spread) != classes || len_of(&floor_buf) != classes
            || (len_of(&band_buf) != 1 && len_of(&band_buf) != classes)) {
        PyErr_SetString(PyExc_ValueError, "ordered_floor: arrays of inconsistent lengths");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    memset(x.emd.buf, 0, (size_t)classes * sizeof(double));
    memset(x.numer.buf, 0, (size_t)classes * sizeof(double));
    memset(x.spread.buf, 0, (size_t)classes * sizeof(double));
    rc = run(&x);
    if (rc == 0) floors(&x, tau, &band_buf, (double *)floor_buf.buf);
    Py_END_ALLOW_THREADS
    run_error(rc);
done:
    for (i = 0; i < got; i++) PyBuffer_Release(bufs[i]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(rc == 1 ? -1 : 0);
}

static PyMethodDef methods[] = {
    {"ordered_emd", ordered_emd, METH_VARARGS,
     "per class the ordered-distance EMD (and the ordered floor's terms) in one pass"},
    {"ordered_verdict", ordered_verdict, METH_VARARGS,
     "per class the ordered-distance EMD and t-closeness's array verdict in one call"},
    {"set_dense_ratio", set_dense_ratio, METH_O,
     "set the rows-per-gap ratio below which the dense pass runs; returns the old one"},
    {"ordered_floor", ordered_floor, METH_VARARGS,
     "per class the ordered-distance EMD and t-closeness's ordered floor in one call"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_emd",
    "Compiled ordered EMD of t-closeness (see ldiv_polars.models.emd_arrays).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__emd(void) { return PyModule_Create(&module); }
