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

static PyMethodDef methods[] = {
    {"capped_entropy", capped_entropy, METH_VARARGS,
     "per selected class the capped suppression floor of entropy l-diversity"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_floors",
    "Compiled suppression floors (see ldiv_polars.models.entropy_floor).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__floors(void) { return PyModule_Create(&module); }
