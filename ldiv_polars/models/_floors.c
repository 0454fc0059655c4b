/* Compiled capped (water-filling) suppression floor of entropy l-diversity (see
 * ldiv_polars/models/entropy_floor.py, which owns the definition, checks the arguments and holds
 * the numpy twin of this function: the parity oracle and the fallback without a compiler).
 *
 *   capped_entropy(cls, n, which, l, out) -> int
 *
 * The rows (class cls[r], count n[r]; int64) are grouped by class; which (one byte per class)
 * selects the classes to compute, out (float64, one per class) receives, for each of them,
 * |C| less the size of the largest capped multiset min(c_s, lam) whose entropy is at least
 * ln l: the counts in decreasing order, the first rank r whose cap lam = c_r passes (every
 * test widened by the entropy band 64 eps (m + 4) (1 + ln T) towards passing), then rounds of
 * a Newton step and a halving inside [c_r, c_{r-1}] from its top, a cap kept only where it
 * certainly fails (so the size used is at least the true one and the floor at most the true
 * floor). The other classes' entries are left as they are. Returns 0, or 1 when the rows are
 * not grouped by class; a class out of range raises IndexError, arrays of the wrong length
 * or item size ValueError. The GIL is released while the loop runs.
 *
 *   class_stats(cls, n, xlogx, j, distinct, r1, top, s) -> int
 *
 * One pass over the rows (grouped by class, cls non-decreasing; int64) giving per class the
 * rows (distinct values), the largest count r1, the sum of the j largest counts (1 <= j <= 64)
 * and, when s is not empty, sum n ln n read from the table xlogx (xlogx[v] = v ln v, made by
 * numpy: the same values, summed in row order as numpy's bincount does). The outputs of the
 * classes without rows are left as they are. Returns 0, or 1 when the rows are not grouped
 * by class, j is out of range or a count is outside the table (the caller's numpy twin then
 * decides, models/class_stats.py); a class out of range raises IndexError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define STEPS 8 /* entropy_floor.STEPS */

static double band(double m, double total) {
    return 64.0 * DBL_EPSILON * (m + 4.0) * (1.0 + log(total > 1.0 ? total : 1.0));
}

/* (T, H) of j values capped at lam beside values summing to rest (sum c ln c: rest_s). */
static double entropy_at(double lam, double j, double rest, double rest_s, double *total) {
    double t = j * lam + rest;
    *total = t;
    return log(t) - (j * lam * log(lam) + rest_s) / t;
}

static int desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The floor of one class of m counts c (sorted here, decreasingly); suf holds 2m doubles. */
static double one_class(double *c, Py_ssize_t m, double *suf, double thr) {
    Py_ssize_t r, first = -1;
    double size = 0.0, t, h, lo, hi, x, j, rest, rest_s, dm = (double)m;
    int k;
    qsort(c, (size_t)m, sizeof(double), desc);
    suf[m - 1] = c[m - 1];
    suf[2 * m - 1] = c[m - 1] * log(c[m - 1]);
    for (r = m - 2; r >= 0; r--) {
        suf[r] = suf[r + 1] + c[r];
        suf[m + r] = suf[m + r + 1] + c[r] * log(c[r]);
    }
    size = suf[0];
    for (r = 0; r < m; r++) {
        h = entropy_at(c[r], (double)r, suf[r], suf[m + r], &t);
        if (h + band(dm, t) >= thr) { first = r; break; }
    }
    if (first <= 0) return 0.0; /* the class passes whole, or none passes (numerically lost) */
    lo = c[first];
    hi = c[first - 1];
    j = (double)first;
    rest = suf[first];
    rest_s = suf[m + first];
    x = hi;
    for (k = 0; k < STEPS; k++) {
        double tot = j * x + rest, cand[2];
        double g = tot * log(tot) - j * x * log(x) - rest_s - tot * thr;
        double slope = j * (log(tot) - log(x) - thr);
        int i;
        cand[0] = slope < 0 ? x - g / slope : x;
        if (cand[0] < lo) cand[0] = lo;
        if (cand[0] > x) cand[0] = x;
        cand[1] = 0.5 * (lo + x);
        for (i = 0; i < 2; i++) {
            h = entropy_at(cand[i], j, rest, rest_s, &t);
            if (h + band(dm, t) < thr) { if (cand[i] < x) x = cand[i]; }
            else if (cand[i] > lo) lo = cand[i];
        }
    }
    t = size - (j * x + rest);
    return t > 0.0 ? t : 0.0;
}

static PyObject *capped_entropy(PyObject *self, PyObject *args) {
    Py_buffer cls, n, which, out;
    double l;
    int rc = 0;
    Py_ssize_t rows, classes, r = 0, widest = 0;
    double *buf = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*dw*", &cls, &n, &which, &l, &out)) return NULL;
    rows = cls.len / 8;
    classes = which.len;
    if (cls.len % 8 || n.len != cls.len || out.len != 8 * classes || l <= 1.0) {
        PyErr_SetString(PyExc_ValueError, "capped_entropy: arrays of inconsistent lengths");
        goto done;
    }
    {
        const int64_t *c_ = (const int64_t *)cls.buf;
        Py_ssize_t a = 0;
        for (r = 1; r <= rows; r++)
            if (r == rows || c_[r] != c_[a]) { if (r - a > widest) widest = r - a; a = r; }
    }
    buf = (double *)malloc(sizeof(double) * (size_t)(3 * (widest > 0 ? widest : 1)));
    if (!buf) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    {
        const int64_t *c_ = (const int64_t *)cls.buf, *n_ = (const int64_t *)n.buf;
        const unsigned char *w = (const unsigned char *)which.buf;
        double *o = (double *)out.buf, thr = log(l);
        int64_t last = -1;
        r = 0;
        while (r < rows) {
            int64_t c = c_[r];
            Py_ssize_t a = r, m;
            if (c < 0 || c >= classes) { rc = -1; break; }
            if (c <= last) { rc = 1; break; }
            last = c;
            while (r < rows && c_[r] == c) r++;
            if (!w[c]) continue;
            for (m = 0; m < r - a; m++) buf[m] = (double)n_[a + m];
            o[c] = one_class(buf, r - a, buf + (r - a), thr);
        }
    }
    Py_END_ALLOW_THREADS
    if (rc == -1) PyErr_SetString(PyExc_IndexError, "capped_entropy: a class out of range");
done:
    free(buf);
    PyBuffer_Release(&cls);
    PyBuffer_Release(&n);
    PyBuffer_Release(&which);
    PyBuffer_Release(&out);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(rc);
}

#define MAX_J 64 /* class_stats.MAX_J */

/* One class's rows a..r-1: the j largest counts kept in best (decreasing). */
static void top_of(const int64_t *n_, Py_ssize_t a, Py_ssize_t r, Py_ssize_t j, int64_t *best,
                   Py_ssize_t *kept) {
    Py_ssize_t k = 0, i;
    for (; a < r; a++) {
        int64_t v = n_[a];
        if (k == j && v <= best[j - 1]) continue;
        i = k < j ? k++ : j - 1;
        while (i > 0 && best[i - 1] < v) { best[i] = best[i - 1]; i--; }
        best[i] = v;
    }
    *kept = k;
}

static int stats_loop(const int64_t *c_, const int64_t *n_, Py_ssize_t rows, Py_ssize_t classes,
                      const double *xl, Py_ssize_t tab, Py_ssize_t j, int64_t *d, int64_t *r1,
                      int64_t *top, double *s) {
    int64_t best[MAX_J], last = -1;
    Py_ssize_t r = 0, a, k, i;
    while (r < rows) {
        int64_t c = c_[r], sum = 0;
        double acc = 0.0;
        if (c < 0 || c >= classes) return -1;
        if (c <= last) return 1;
        last = c;
        a = r;
        while (r < rows && c_[r] == c) {
            if (s) {
                if (n_[r] < 0 || n_[r] >= tab) return 1;
                acc += xl[n_[r]];
            }
            r++;
        }
        top_of(n_, a, r, j, best, &k);
        for (i = 0; i < k; i++) sum += best[i];
        d[c] = r - a;
        r1[c] = best[0];
        top[c] = sum;
        if (s) s[c] = acc;
    }
    return 0;
}

static PyObject *class_stats(PyObject *self, PyObject *args) {
    Py_buffer cls, n, xlogx, d, r1, top, s;
    Py_ssize_t j, rows, classes;
    int rc = 1;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*w*w*w*", &cls, &n, &xlogx, &j, &d, &r1, &top, &s))
        return NULL;
    rows = cls.len / 8;
    classes = d.len / 8;
    if (cls.len % 8 || n.len != cls.len || d.len % 8 || r1.len != d.len || top.len != d.len
        || (s.len && s.len != d.len) || xlogx.len % 8) {
        PyErr_SetString(PyExc_ValueError, "class_stats: arrays of inconsistent lengths");
    } else if (j >= 1 && j <= MAX_J && (!s.len || xlogx.len)) {
        Py_BEGIN_ALLOW_THREADS
        rc = stats_loop((const int64_t *)cls.buf, (const int64_t *)n.buf, rows, classes,
                        (const double *)xlogx.buf, xlogx.len / 8, j, (int64_t *)d.buf,
                        (int64_t *)r1.buf, (int64_t *)top.buf, s.len ? (double *)s.buf : NULL);
        Py_END_ALLOW_THREADS
        if (rc == -1) PyErr_SetString(PyExc_IndexError, "class_stats: a class out of range");
    }
    PyBuffer_Release(&cls);
    PyBuffer_Release(&n);
    PyBuffer_Release(&xlogx);
    PyBuffer_Release(&d);
    PyBuffer_Release(&r1);
    PyBuffer_Release(&top);
    PyBuffer_Release(&s);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(rc);
}

static PyMethodDef methods[] = {
    {"capped_entropy", capped_entropy, METH_VARARGS,
     "per selected class the capped suppression floor of entropy l-diversity"},
    {"class_stats", class_stats, METH_VARARGS,
     "per class: rows, largest count, sum of the j largest, sum n ln n (one pass)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_floors",
    "Compiled suppression floors (see ldiv_polars.models.entropy_floor).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__floors(void) { return PyModule_Create(&module); }
