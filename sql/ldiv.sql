-- ldiv_polars: privacy models as DuckDB SQL macros (closed forms).
--
-- Load with the DuckDB CLI:   .read sql/ldiv.sql
-- or from Python:             import ldiv_polars.duckdb as ld; ld.install(con)
--
-- Every table macro takes
--   tbl  the name of a table or view (a string; wrap read_parquet(...) in a view),
--   qi   a list of quasi-identifier column names, e.g. ['age', 'zip'],
--   s    the name of the sensitive column,
-- and selects the columns with COLUMNS(lambda c: ...): names are compared as strings, never
-- pasted into SQL, so any column name works (spaces, quotes, reserved words, unicode), and, as
-- everywhere in DuckDB, case-insensitively ('AGE' names the column age). The arguments are
-- checked as the Python API checks them (an empty or duplicated QI list, the sensitive column
-- among the QIs, an unknown column, k <= 0, a negative or NaN l/t/c/delta/beta, alpha outside
-- (0, 1], ...): an error (DuckDB's error()), never a verdict.
-- The only pass over the rows is one GROUP BY qi..., s (the frequency set); everything else
-- reads that small relation. NULL is a value of its own (GROUP BY groups NULLs together);
-- the Python API raises on NULLs unless nulls='value'.
--
-- Exact verdicts. A model's float statistic comes with a rigorous bound of its rounding error;
-- a class within that bound of the threshold is *undecided* by floating point. Loaded from
-- Python (ldiv_polars.duckdb.install), such classes are decided exactly by the model's own
-- routine (a Python UDF, see ldiv_udf.sql), as in the Polars engine. Loaded alone (this file
-- in the DuckDB CLI), the model macros report them: undecided_classes counts them and passed is
-- NULL when the verdict depends on them (never a silently different answer).
--
-- Internal macros start with ldiv__ (two underscores); their "f" argument names a relation
-- (ec STRUCT, sv, n) = class key, sensitive value, count.

-- ---------------------------------------------------------------------------------------------
-- Argument checks
-- ---------------------------------------------------------------------------------------------

-- The float64 machine epsilon (2^-52): the unit of the rounding bounds.
CREATE OR REPLACE MACRO ldiv__eps() AS 2.220446049250313e-16;

-- true, or an error with msg.
CREATE OR REPLACE MACRO ldiv__need(ok, msg) AS CASE WHEN ok THEN true ELSE error(msg) END;

-- c is one of names, compared case-insensitively (as DuckDB compares identifiers).
CREATE OR REPLACE MACRO ldiv__in(names, c) AS
    list_contains(list_transform(names, lambda x: lower(x)), lower(c));

-- The column names of a relation (read from an empty row: no data is scanned).
CREATE OR REPLACE MACRO ldiv__columns(tbl) AS
    (SELECT json_keys(to_json(z)) FROM (FROM query_table(tbl) LIMIT 0) z RIGHT JOIN (SELECT 1) ON true);

-- true, or an error: qi is a non-empty list of distinct known columns, s (NULL for none) a
-- known column that is not among them (the messages of ldiv_polars' validate_columns).
CREATE OR REPLACE MACRO ldiv__args_of(qi, s, cols) AS
    CASE WHEN qi IS NULL OR len(qi) = 0
             THEN error('the list of quasi-identifier columns is empty')
         WHEN len(list_distinct(list_transform(qi, lambda x: lower(x)))) < len(qi)
             THEN error('quasi-identifier column(s) named twice: ' || array_to_string(qi, ', '))
         WHEN s IS NOT NULL AND ldiv__in(qi, s)
             THEN error('sensitive column ''' || s || ''' also listed as quasi-identifier')
         WHEN len(list_intersect(list_transform(list_concat(qi, CASE WHEN s IS NULL THEN []
                                                                 ELSE [s] END),
                                                lambda x: lower(x)),
                                 list_transform(cols, lambda x: lower(x))))
              < len(qi) + CASE WHEN s IS NULL THEN 0 ELSE 1 END
             THEN error('unknown column(s) among ' || array_to_string(list_concat(qi,
                        CASE WHEN s IS NULL THEN [] ELSE [s] END), ', ') || ' (available: '
                        || array_to_string(cols, ', ') || ')')
         ELSE true END;

-- ldiv__args_of on the columns of tbl, read once.
CREATE OR REPLACE MACRO ldiv__args_ok(tbl, qi, s) AS
    (SELECT ldiv__args_of(qi, s, cols) FROM (SELECT ldiv__columns(tbl) AS cols));

-- true, or an error: x is a number in the range [low, high] (an end excluded when its *_open
-- flag is set), an integer when integer is set. As ldiv_polars.core.validate.
CREATE OR REPLACE MACRO ldiv__number(x, name, low, high, low_open, high_open, integer) AS
    CASE WHEN x IS NULL OR isnan(x::DOUBLE)
             THEN error(name || ' must be a number, got ' || coalesce(x::VARCHAR, 'NULL'))
         WHEN x::DOUBLE < low OR (low_open AND x::DOUBLE = low)
              OR x::DOUBLE > high OR (high_open AND x::DOUBLE = high)
             THEN error(name || ' must be in ' || CASE WHEN low_open THEN '(' ELSE '[' END
                        || low::VARCHAR || ', ' || high::VARCHAR
                        || CASE WHEN high_open THEN ')' ELSE ']' END || ', got ' || x::VARCHAR)
         WHEN integer AND x::DOUBLE <> floor(x::DOUBLE)
             THEN error(name || ' must be an integer, got ' || x::VARCHAR)
         ELSE true END;

-- Whether an integer lhs compared with x * n (n an integer) is within the product's rounding
-- bound (4 eps x n); never when x is an integer and the product below 2^53 (then exact).
CREATE OR REPLACE MACRO ldiv__near_product(lhs, x, n) AS
    abs(lhs - x::DOUBLE * n) <= 4 * ldiv__eps() * x::DOUBLE * n
    AND NOT (x::DOUBLE = floor(x::DOUBLE) AND x::DOUBLE * n < 9007199254740992);

-- The usual parameter domains.
CREATE OR REPLACE MACRO ldiv__count_ok(x, name) AS
    CASE WHEN x IS NULL OR isnan(x::DOUBLE) OR x::DOUBLE < 1 OR x::DOUBLE <> floor(x::DOUBLE)
             THEN error(name || ' must be an integer >= 1, got ' || coalesce(x::VARCHAR, 'NULL'))
         ELSE true END;
-- the l of every l-diversity model: a finite number in [1, L_MAX], an integer unless integer
-- is false (entropy l), message for message as ldiv_polars.models.l_diversity._require_l
-- (L_MAX = 10^6: the recursive models sum the l - 1 largest counts, max(n, k) takes k < 10^6)
CREATE OR REPLACE MACRO ldiv__l_in(x, name, integer) AS
    CASE WHEN x IS NOT NULL AND isinf(x::DOUBLE)
             THEN error(name || ' must be a finite number, got ' || x::VARCHAR)
         ELSE ldiv__number(x, name, 1.0, 1000000.0, false, false, integer) END;
CREATE OR REPLACE MACRO ldiv__top_l_ok(x, name) AS ldiv__l_in(x, name, true);
CREATE OR REPLACE MACRO ldiv__positive_ok(x, name) AS
    ldiv__number(x, name, 0.0, 'inf'::DOUBLE, true, false, false);
-- l and c of the l-diversity family are finite (as the models' validation says)
CREATE OR REPLACE MACRO ldiv__finite_positive_ok(x, name) AS
    ldiv__number(x, name, 0.0, 'inf'::DOUBLE, true, true, false);
CREATE OR REPLACE MACRO ldiv__l_ok(x, name := 'l') AS ldiv__l_in(x, name, false);
CREATE OR REPLACE MACRO ldiv__distance_ok(distance) AS
    ldiv__need(distance IN ('auto', 'equal', 'ordered'),
               'distance must be ''auto'', ''equal'' or ''ordered''');

-- ---------------------------------------------------------------------------------------------
-- Frequency set and equivalence classes
-- ---------------------------------------------------------------------------------------------

-- Frequency set: one row per (quasi-identifier vector, sensitive value) with its count n.
-- Columns: the QI columns (in table order), the sensitive column, n. A QI or sensitive column
-- named n is an error (the count column's name; rename it in a view).
CREATE OR REPLACE MACRO ldiv_frequency_set(tbl, qi, s) AS TABLE
    SELECT COLUMNS(lambda c: ldiv__in(qi, c)), COLUMNS(lambda c: lower(c) = lower(s)),
           count(*) AS n
    FROM query_table(tbl)
    WHERE ldiv__args_ok(tbl, qi, s)
      AND ldiv__need(NOT ldiv__in(list_concat(qi, [s]), 'n'),
                     'a quasi-identifier or sensitive column is named n, the name of the '
                     || 'count column: rename it in a view')
    GROUP BY ALL;

-- Internal frequency set: class key packed into one struct (so that no QI name can clash with
-- the helper columns), sensitive value renamed sv. The count is the grouped relation's only
-- column that is not a key, whatever DuckDB named it (a key may be called like the count).
-- ok: a condition on the scan (true, or an error: see ldiv__fs_checked).
CREATE OR REPLACE MACRO ldiv__fs(tbl, qi, s, ok := true) AS TABLE
    SELECT struct_pack(*COLUMNS(lambda c: ldiv__in(qi, c))) AS ec,
           COLUMNS(lambda c: lower(c) = lower(s)) AS sv,
           COLUMNS(lambda c: NOT ldiv__in(qi, c) AND lower(c) <> lower(s)) AS n
    FROM (SELECT COLUMNS(lambda c: ldiv__in(qi, c) OR lower(c) = lower(s)), count(*) AS "ldiv__n"
          FROM query_table(tbl)
          WHERE ok
          GROUP BY ALL);

-- The frequency set of a public macro: ldiv__fs, with the table and column arguments and the
-- model's parameters (ok: a boolean that raises on a bad value) checked as the scan starts.
CREATE OR REPLACE MACRO ldiv__fs_checked(tbl, qi, s, ok) AS TABLE
    FROM ldiv__fs(tbl, qi, s, ok AND (SELECT ldiv__args_ok(tbl, qi, s)));

-- Class sizes only (no sensitive column): one row per equivalence class.
-- The arguments are checked as the scan starts (ok: the caller's parameter check).
CREATE OR REPLACE MACRO ldiv__sizes(tbl, qi, ok := true) AS TABLE
    SELECT COLUMNS(lambda c: NOT ldiv__in(qi, c)) AS size
    FROM (SELECT COLUMNS(lambda c: ldiv__in(qi, c)), count(*) AS "ldiv__n"
          FROM query_table(tbl)
          WHERE ok AND (SELECT ldiv__args_ok(tbl, qi, NULL))
          GROUP BY ALL);

-- TRUE for numeric and temporal DuckDB types: t-closeness then uses the ordered distance
-- (as the Polars side does for numeric and temporal dtypes).
CREATE OR REPLACE MACRO ldiv_is_ordered(x) AS
    typeof(x) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT',
                  'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT', 'FLOAT', 'DOUBLE',
                  'DATE', 'TIME', 'TIMESTAMP', 'TIMESTAMP_S', 'TIMESTAMP_MS', 'TIMESTAMP_NS',
                  'TIMESTAMP WITH TIME ZONE', 'TIME WITH TIME ZONE', 'INTERVAL')
    OR typeof(x) LIKE 'DECIMAL%';

-- Sensitive-value domain of the table counts c (sv, tn): value, table count tn, rank drk in
-- ascending order (NULL first, as Polars sorts), cumulative table count ctn.
CREATE OR REPLACE MACRO ldiv__dom_counts(c) AS TABLE
    SELECT sv, tn,
           row_number() OVER (ORDER BY sv ASC NULLS FIRST) AS drk,
           sum(tn) OVER (ORDER BY sv ASC NULLS FIRST
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)::BIGINT AS ctn
    FROM query_table(c);

-- The same domain from a frequency set f (ec, sv, n).
CREATE OR REPLACE MACRO ldiv__dom(f) AS TABLE
    WITH "ldiv__c" AS (SELECT sv, sum(n)::BIGINT AS tn FROM query_table(f) GROUP BY sv)
    FROM ldiv__dom_counts('ldiv__c');

-- Frequency set joined with per-class and per-table quantities:
-- cid (class id, unique within one evaluation: materialize this relation once and share it),
-- size (class size), tn/drk/ctn (see ldiv__dom), total (row count), m (distinct sensitive
-- values in the table). Class sizes come from a GROUP BY joined back (cheaper than windows
-- partitioned by the struct key).
CREATE OR REPLACE MACRO ldiv__fsx(f) AS TABLE
    WITH d AS (FROM ldiv__dom(f)),
         c AS (SELECT ec, sum(n)::BIGINT AS size, row_number() OVER () AS cid
               FROM query_table(f) GROUP BY ec)
    SELECT c.cid, x.ec, x.sv, x.n, c.size, d.tn, d.drk, d.ctn, t.total, t.m
    FROM query_table(f) x
    JOIN c ON x.ec IS NOT DISTINCT FROM c.ec
    JOIN d ON x.sv IS NOT DISTINCT FROM d.sv
    CROSS JOIN (SELECT sum(tn)::BIGINT AS total, count(*)::BIGINT AS m FROM d) t;

-- Per-class statistics of an extended frequency set x (see ldiv__fsx); l is the
-- recursive-(c,l) tail start.
--   size, distinct_values, entropy (natural log), max_count,
--   tail = r_l + ... + r_m (size minus the l-1 largest counts, a bounded top-k
--   aggregate; NULL when fewer than l distinct values; l <= 1: the whole class),
-- Grouped by the integer cid only, with fixed-size aggregate states (plus the top-k for
-- l >= 3), so that the aggregation spills under a memory limit; join the class key back from x
-- on cid where it is needed.
--   alpha = max_count/size, emd_equal (t-closeness, equal distance), delta_present
--   (max |ln(p/q)| over values present), missing_values (table values absent from the class),
--   beta (max (p-q)/q over p > q, 0 if none), m (distinct values of the table), min_count.
CREATE OR REPLACE MACRO ldiv__class_stats_x(x, l) AS TABLE
    SELECT cid, size, sv_ordered, distinct_values, entropy, max_count,
           CASE WHEN l <= 1 THEN size
                WHEN distinct_values < l THEN NULL
                WHEN l = 2 THEN size - max_count
                ELSE size - list_sum(top) END::BIGINT AS tail,
           max_count / size AS alpha, emd_equal, delta_present, missing_values, beta, m,
           min_count
    FROM (SELECT cid, size,
                 bool_or(ldiv_is_ordered(sv)) AS sv_ordered,
                 count(*)::BIGINT AS distinct_values,
                 -sum((n / size) * ln(n / size)) AS entropy,
                 max(n) AS max_count,
                 min(n) AS min_count,
                 max(n, CAST(greatest(l - 1, 1) AS BIGINT)) AS top,
                 0.5 * (sum(abs(n / size - tn / total))
                        + (any_value(total) - sum(tn)) / any_value(total)) AS emd_equal,
                 max(abs(ln((n / size) / (tn / total)))) AS delta_present,
                 (any_value(m) - count(*))::BIGINT AS missing_values,
                 coalesce(max((n / size - tn / total) / (tn / total))
                          FILTER (WHERE n / size > tn / total), 0.0) AS beta,
                 any_value(m) AS m
          FROM query_table(x)
          GROUP BY cid, size);

-- Per-class statistics of a frequency set f (ec, sv, n): see ldiv__class_stats_x.
CREATE OR REPLACE MACRO ldiv__class_stats(f, l) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__class_stats_x('ldiv__x', l);

-- Ordered-distance EMD per class (values sorted ascending, NULL first):
-- (1/(m-1)) * sum_{i<m} |P_i - Q_i| with cumulative distributions P (class) and Q (table);
-- 0 when m = 1. Sparse: between two values present in a class P is constant, so each stretch
-- is summed in closed form from prefix sums SQ of Q, split where Q crosses P (an ASOF join);
-- the cost is the size of the frequency set, not classes x domain. Computed only when
-- distance = 'ordered', or distance = 'auto' and the sensitive column is numeric or temporal
-- (empty result otherwise). x is an extended frequency set (ldiv__fsx). Also returns the
-- class's distinct values d and the domain size m (for the rounding bound).
CREATE OR REPLACE MACRO ldiv__emd_ordered_x(x, distance) AS TABLE
    WITH r AS (SELECT cid, size, total, m, drk, ctn, n FROM query_table(x)
               WHERE distance = 'ordered' OR (distance = 'auto' AND ldiv_is_ordered(sv))),
         dq AS (SELECT drk, ctn / total AS q,
                       sum(ctn / total) OVER (ORDER BY drk
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                           AS sq
                FROM (SELECT DISTINCT drk, ctn, total FROM r)),
         seg AS (SELECT cid, size, m, drk AS a,
                        sum(n) OVER (PARTITION BY cid ORDER BY drk
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) / size
                            AS p,
                        least(coalesce(lead(drk) OVER (PARTITION BY cid ORDER BY drk) - 1, m - 1),
                              m - 1) AS b,
                        drk = min(drk) OVER (PARTITION BY cid) AS first
                 FROM r),
         g AS (SELECT seg.*, coalesce(dq.drk, 0) AS gi
               FROM seg ASOF LEFT JOIN dq ON seg.p >= dq.q),
         sp AS (SELECT *, least(greatest(gi, a - 1), b) AS split FROM g),
         v AS (SELECT sp.cid, sp.size, sp.m,
                      CASE WHEN sp.b >= sp.a
                           THEN sp.p * (sp.split - sp.a + 1)
                                - (coalesce(s2.sq, 0.0) - coalesce(s1.sq, 0.0))
                                + (coalesce(s3.sq, 0.0) - coalesce(s2.sq, 0.0))
                                - sp.p * (sp.b - sp.split)
                           ELSE 0.0 END
                      + CASE WHEN sp.first THEN coalesce(s1.sq, 0.0) ELSE 0.0 END AS part
               FROM sp
               LEFT JOIN dq s1 ON s1.drk = sp.a - 1
               LEFT JOIN dq s2 ON s2.drk = sp.split
               LEFT JOIN dq s3 ON s3.drk = sp.b)
    SELECT cid, any_value(size) AS size, count(*)::BIGINT AS d, any_value(m) AS m,
           CASE WHEN any_value(m) <= 1 THEN 0.0
                ELSE sum(part) / (any_value(m) - 1) END AS emd_ordered
    FROM v
    GROUP BY cid;

-- One row per equivalence class: the QI values, then size, distinct_values, entropy,
-- l_entropy = exp(entropy), max_count, counts (descending), tail (r_l + ... + r_m), alpha,
-- emd_equal, delta_present, missing_values, beta.
CREATE OR REPLACE MACRO ldiv_classes(tbl, qi, s, l := 2) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs_checked(tbl, qi, s, ldiv__top_l_ok(l, 'l'))),
         "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx('ldiv__f')),
         cn AS (SELECT cid, any_value(ec) AS ec, list_sort(list(n), 'DESC') AS counts
                FROM "ldiv__x" GROUP BY cid)
    SELECT unnest(ec), size, distinct_values, entropy, exp(entropy) AS l_entropy, max_count,
           counts, tail, alpha, emd_equal, delta_present, missing_values, beta
    FROM ldiv__class_stats_x('ldiv__x', l) JOIN cn USING (cid)
    ORDER BY size, cid;

-- ---------------------------------------------------------------------------------------------
-- Verdicts. Every model has
--   ldiv__<model>_classes_x(x, ...)  one row per class: cid, size, ok (the float verdict),
--                                    v (the class's value; 'inf' where infinite), unc (the
--                                    float statistic is within its rounding bound of the
--                                    threshold: ok may be wrong)
--   ldiv__<model>_x(x, ..., spec)    the table's verdict (one row, see ldiv__result), the
--                                    undecided classes decided by ldiv__decide_x
--   ldiv__<model>_fs(f, ..., spec)   the same over a frequency set relation f (ec, sv, n)
--   ldiv_<model>(tbl, qi, s, ...)    the public macro (arguments checked).
-- spec is the model as JSON ({"model": <name>, <parameter>: <value>, ...}): what the exact
-- step rebuilds the model from (ldiv_polars.models.spec).
-- ---------------------------------------------------------------------------------------------

-- x, or NULL where infinite.
CREATE OR REPLACE MACRO ldiv__finite(x) AS CASE WHEN isinf(x) THEN NULL ELSE x END;

-- The exact step over a per-class relation cl (cid, size, ok, v, unc). Without Python it
-- leaves the undecided classes as they are (unc stays true); ldiv_udf.sql replaces this macro
-- by one that decides them with the models' own exact routine.
CREATE OR REPLACE MACRO ldiv__decide_x(cl, x, spec) AS TABLE FROM query_table(cl);

-- One row per model macro: model, passed (NULL when the verdict depends on undecided
-- classes), achieved (the table's best parameter: min of v when higher is better, else max;
-- NULL where infinite), failing_classes, failing_rows (decided failures), undecided_classes.
CREATE OR REPLACE MACRO ldiv__result(cl, model_name, higher) AS TABLE
    SELECT model_name AS model,
           CASE WHEN bool_or(NOT ok AND NOT unc) THEN false
                WHEN bool_or(unc) THEN NULL
                ELSE true END AS passed,
           ldiv__finite(CASE WHEN higher THEN min(v) ELSE max(v) END) AS achieved,
           count(*) FILTER (WHERE NOT ok AND NOT unc)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok AND NOT unc), 0)::BIGINT AS failing_rows,
           count(*) FILTER (WHERE unc)::BIGINT AS undecided_classes
    FROM query_table(cl);

-- The table verdict of a per-class relation cl: the exact step, then ldiv__result.
CREATE OR REPLACE MACRO ldiv__verdict(cl, x, spec, model_name, higher) AS TABLE
    WITH "ldiv__d" AS (FROM ldiv__decide_x(cl, x, spec))
    FROM ldiv__result('ldiv__d', model_name, higher);

-- k-anonymity: every class has at least k rows. achieved = smallest class size.
CREATE OR REPLACE MACRO ldiv__k_anonymity_classes_st(x, st, k) AS TABLE
    SELECT cid, size, size >= k AS ok, size::DOUBLE AS v, false AS unc
    FROM query_table(st);
CREATE OR REPLACE MACRO ldiv__k_anonymity_classes_x(x, k) AS TABLE
    WITH "ldiv__st" AS (SELECT DISTINCT cid, size FROM query_table(x))
    FROM ldiv__k_anonymity_classes_st(x, 'ldiv__st', k);
CREATE OR REPLACE MACRO ldiv__k_anonymity_of(sizes_rel, k) AS TABLE
    WITH "ldiv__c" AS (SELECT 0 AS cid, size, size >= k AS ok, size::DOUBLE AS v, false AS unc
                       FROM query_table(sizes_rel))
    FROM ldiv__result('ldiv__c', 'k_anonymity', true);
CREATE OR REPLACE MACRO ldiv__k_anonymity_x(x, k, spec := NULL) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__k_anonymity_classes_x(x, k))
    FROM ldiv__result('ldiv__c', 'k_anonymity', true);
CREATE OR REPLACE MACRO ldiv__k_anonymity_fs(f, k) AS TABLE
    WITH "ldiv__z" AS (SELECT sum(n)::BIGINT AS size FROM query_table(f) GROUP BY ec)
    FROM ldiv__k_anonymity_of('ldiv__z', k);
CREATE OR REPLACE MACRO ldiv_k_anonymity(tbl, qi, k) AS TABLE
    WITH "ldiv__z" AS (FROM ldiv__sizes(tbl, qi, ldiv__count_ok(k, 'k')))
    FROM ldiv__k_anonymity_of('ldiv__z', k);

-- Distinct l-diversity: at least l distinct sensitive values per class.
CREATE OR REPLACE MACRO ldiv__distinct_l_classes_st(x, st, l) AS TABLE
    SELECT cid, size, distinct_values >= l AS ok, distinct_values::DOUBLE AS v, false AS unc
    FROM query_table(st);
CREATE OR REPLACE MACRO ldiv__distinct_l_classes_x(x, l) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, 1))
    FROM ldiv__distinct_l_classes_st(x, 'ldiv__st', l);
CREATE OR REPLACE MACRO ldiv__distinct_l_x(x, l, spec := NULL) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__distinct_l_classes_x(x, l))
    FROM ldiv__result('ldiv__c', 'distinct_l', true);
CREATE OR REPLACE MACRO ldiv__distinct_l_fs(f, l) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__distinct_l_x('ldiv__x', l);
CREATE OR REPLACE MACRO ldiv_distinct_l(tbl, qi, s, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs_checked(tbl, qi, s, ldiv__top_l_ok(l, 'l')))
    FROM ldiv__distinct_l_fs('ldiv__f', l);

-- Entropy l-diversity: -sum p ln p >= ln(l) in every class, exact (a class spread uniformly
-- over l values passes). achieved = exp(smallest class entropy). A uniform class (equal counts)
-- has entropy ln(its distinct values) exactly; another one is undecided within 64 eps (m + 4)
-- (1 + ln N) of ln l (the entropy's rounding bound, m values in a class of N rows).
CREATE OR REPLACE MACRO ldiv__entropy_l_classes_st(x, st, l) AS TABLE
    SELECT cid, size,
           CASE WHEN l::DOUBLE = 1 THEN true
                WHEN max_count = min_count THEN distinct_values >= ceil(l::DOUBLE)
                ELSE entropy >= ln(l::DOUBLE) END AS ok,
           CASE WHEN max_count = min_count THEN distinct_values::DOUBLE
                ELSE exp(entropy) END AS v,
           l::DOUBLE <> 1 AND max_count <> min_count AND abs(entropy - ln(l::DOUBLE))
               <= 64 * ldiv__eps() * (distinct_values + 4) * (1 + ln(size)) AS unc
    FROM query_table(st);
CREATE OR REPLACE MACRO ldiv__entropy_l_classes_x(x, l) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, 1))
    FROM ldiv__entropy_l_classes_st(x, 'ldiv__st', l);
CREATE OR REPLACE MACRO ldiv__entropy_l_x(x, l, spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__entropy_l_classes_x(x, l))
    FROM ldiv__verdict('ldiv__c', x, spec, 'entropy_l', true);
CREATE OR REPLACE MACRO ldiv__entropy_l_fs(f, l, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__entropy_l_x('ldiv__x', l, spec);
CREATE OR REPLACE MACRO ldiv_entropy_l(tbl, qi, s, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs_checked(tbl, qi, s, ldiv__l_ok(l)))
    FROM ldiv__entropy_l_fs('ldiv__f', l, to_json({'model': 'entropy_l', 'l': l::DOUBLE}));

-- Recursive (c,l)-diversity: r1 < c * (r_l + ... + r_m) (strict); a class with fewer than l
-- distinct values fails; l = 1 always passes. achieved = largest r1 / (r_l + ... + r_m)
-- (NULL = infinite when some class has fewer than l distinct values; 0 for l = 1: no c is
-- needed). Undecided: r1 within the rounding of c * tail (ldiv__near_product).
CREATE OR REPLACE MACRO ldiv__recursive_cl_classes_st(x, st, c, l) AS TABLE
    SELECT cid, size,
           l <= 1 OR (tail IS NOT NULL AND max_count < c::DOUBLE * tail) AS ok,
           CASE WHEN l <= 1 THEN 0.0 WHEN tail > 0 THEN max_count / tail
                ELSE 'inf'::DOUBLE END AS v,
           coalesce(l > 1 AND ldiv__near_product(max_count, c, tail), false) AS unc
    FROM query_table(st);
CREATE OR REPLACE MACRO ldiv__recursive_cl_classes_x(x, c, l) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, l))
    FROM ldiv__recursive_cl_classes_st(x, 'ldiv__st', c, l);
-- The same with c written as the decimal num/den (its exact value; Model.sql_call passes both
-- when they fit BIGINT): r1 * den < num * tail on HUGEINT decides every class at once (none is
-- left uncertain); v is r1 / tail, moved one ulp below c where it rounds onto c but the class
-- passes (the value agrees with the verdict, as ldiv_polars.models.exact.agreeing does).
CREATE OR REPLACE MACRO ldiv__recursive_cl_exact_classes_st(x, st, c, l, num, den) AS TABLE
    SELECT cid, size, l <= 1 OR coalesce(below, false) AS ok,
           CASE WHEN l <= 1 THEN 0.0
                WHEN tail > 0 AND below AND max_count / tail >= c::DOUBLE
                    THEN nextafter(max_count / tail, '-inf'::DOUBLE)
                WHEN tail > 0 THEN max_count / tail
                ELSE 'inf'::DOUBLE END AS v,
           false AS unc
    FROM (SELECT cid, size, max_count, tail,
                 max_count::HUGEINT * den::HUGEINT < num::HUGEINT * tail::HUGEINT AS below
          FROM query_table(st));
CREATE OR REPLACE MACRO ldiv__recursive_cl_exact_classes_x(x, c, l, num, den) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, l))
    FROM ldiv__recursive_cl_exact_classes_st(x, 'ldiv__st', c, l, num, den);
CREATE OR REPLACE MACRO ldiv__recursive_cl_x(x, c, l, spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__recursive_cl_classes_x(x, c, l))
    FROM ldiv__verdict('ldiv__c', x, spec, 'recursive_cl', false);
CREATE OR REPLACE MACRO ldiv__recursive_cl_fs(f, c, l, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__recursive_cl_x('ldiv__x', c, l, spec);
CREATE OR REPLACE MACRO ldiv_recursive_cl(tbl, qi, s, c, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s,
                              ldiv__finite_positive_ok(c, 'c') AND ldiv__top_l_ok(l, 'l')))
    FROM ldiv__recursive_cl_fs('ldiv__f', c, l,
                               to_json({'model': 'recursive_cl', 'c': c::DOUBLE, 'l': l}));

-- (alpha,k)-anonymity: size >= k and max n <= alpha * size in every class (exact).
-- achieved = largest n/size; achieved_k = smallest class size.
CREATE OR REPLACE MACRO ldiv__alpha_k_classes_st(x, st, alpha, k) AS TABLE
    SELECT cid, size,
           size >= k AND max_count <= alpha::DOUBLE * size AS ok,
           max_count / size AS v,
           size >= k AND ldiv__near_product(max_count, alpha, size) AS unc
    FROM query_table(st);
CREATE OR REPLACE MACRO ldiv__alpha_k_classes_x(x, alpha, k) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, 1))
    FROM ldiv__alpha_k_classes_st(x, 'ldiv__st', alpha, k);
-- The same with alpha written as the decimal num/den (its exact value; Model.sql_call passes
-- both when they fit BIGINT): max n * den <= num * size on HUGEINT decides every class at once
-- (none is left uncertain); v is max n / size, moved one ulp above alpha where it rounds onto
-- alpha but the class fails (the value agrees with the verdict).
CREATE OR REPLACE MACRO ldiv__alpha_k_exact_classes_st(x, st, alpha, k, num, den) AS TABLE
    SELECT cid, size, size >= k AND within AS ok,
           CASE WHEN NOT within AND max_count / size <= alpha::DOUBLE
                    THEN nextafter(max_count / size, 'inf'::DOUBLE)
                ELSE max_count / size END AS v,
           false AS unc
    FROM (SELECT cid, size, max_count,
                 max_count::HUGEINT * den::HUGEINT <= num::HUGEINT * size::HUGEINT AS within
          FROM query_table(st));
CREATE OR REPLACE MACRO ldiv__alpha_k_exact_classes_x(x, alpha, k, num, den) AS TABLE
    WITH "ldiv__st" AS (SELECT cid, size, max(n) AS max_count
                        FROM query_table(x) GROUP BY cid, size)
    FROM ldiv__alpha_k_exact_classes_st(x, 'ldiv__st', alpha, k, num, den);
CREATE OR REPLACE MACRO ldiv__alpha_k_x(x, alpha, k, spec) AS TABLE
    WITH "ldiv__c" AS MATERIALIZED (FROM ldiv__alpha_k_classes_x(x, alpha, k))
    SELECT *, (SELECT min(size) FROM "ldiv__c")::BIGINT AS achieved_k
    FROM ldiv__verdict('ldiv__c', x, spec, 'alpha_k', false);
CREATE OR REPLACE MACRO ldiv__alpha_k_fs(f, alpha, k, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__alpha_k_x('ldiv__x', alpha, k, spec);
CREATE OR REPLACE MACRO ldiv_alpha_k(tbl, qi, s, alpha, k) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s, ldiv__number(alpha, 'alpha', 0.0, 1.0, true, false,
                                                       false) AND ldiv__count_ok(k, 'k')))
    FROM ldiv__alpha_k_fs('ldiv__f', alpha, k,
                          to_json({'model': 'alpha_k', 'alpha': alpha::DOUBLE, 'k': k}));

-- t-closeness: EMD(class, table) <= t in every class. distance: 'equal' (0.5 * sum |p - q|),
-- 'ordered' (values sorted ascending, (1/(m-1)) sum |P_i - Q_i|) or 'auto' (ordered for a
-- numeric or temporal sensitive column, equal otherwise). achieved = largest EMD. Rounding
-- bound: 64 eps (d + 4) for the equal distance (d values in the class), times (m + 4) for the
-- ordered one (m values in the table). The hierarchical distance: ldiv_t_closeness_hierarchical.
CREATE OR REPLACE MACRO ldiv__t_closeness_classes_st(x, st, t, distance) AS TABLE
    WITH e AS (SELECT cid, size, emd_equal AS emd,
                      64 * ldiv__eps() * (distinct_values + 4) AS band
               FROM query_table(st)
               WHERE NOT (distance = 'ordered' OR (distance = 'auto' AND sv_ordered))
               UNION ALL
               SELECT cid, size, emd_ordered AS emd,
                      64 * ldiv__eps() * (d + 4) * (m + 4) AS band
               FROM ldiv__emd_ordered_x(x, distance))
    SELECT cid, size, emd <= t::DOUBLE AS ok, emd AS v, abs(emd - t::DOUBLE) <= band AS unc
    FROM e
    WHERE distance IN ('auto', 'equal', 'ordered')
       OR error('distance must be ''auto'', ''equal'' or ''ordered''');
CREATE OR REPLACE MACRO ldiv__t_closeness_classes_x(x, t, distance) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, 1))
    FROM ldiv__t_closeness_classes_st(x, 'ldiv__st', t, distance);
CREATE OR REPLACE MACRO ldiv__t_closeness_x(x, t, distance, spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__t_closeness_classes_x(x, t, distance))
    FROM ldiv__verdict('ldiv__c', x, spec, 't_closeness', false);
CREATE OR REPLACE MACRO ldiv__t_closeness_fs(f, t, distance, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__t_closeness_x('ldiv__x', t, distance, spec);
-- The distance 'auto' stands for (as the Polars side chooses it).
CREATE OR REPLACE MACRO ldiv__distance_of(f, distance) AS
    CASE WHEN distance <> 'auto' THEN distance
         WHEN (SELECT bool_or(ldiv_is_ordered(sv)) FROM query_table(f)) THEN 'ordered'
         ELSE 'equal' END;
CREATE OR REPLACE MACRO ldiv_t_closeness(tbl, qi, s, t, distance := 'auto') AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s, ldiv__number(t, 't', 0.0, 1.0, false, false, false)
                                          AND ldiv__distance_ok(distance)))
    FROM ldiv__t_closeness_fs('ldiv__f', t, distance,
                              to_json({'model': 't_closeness', 't': t::DOUBLE,
                                       'distance': ldiv__distance_of('ldiv__f', distance)}));

-- Delta-disclosure: |ln(p/q)| < delta for every value present in a class, and no value of the
-- table missing from a class. achieved = largest |ln(p/q)| (NULL = infinite when a class lacks
-- a value of the table). Rounding bound: 16 eps (|ln(p/q)| + 2).
CREATE OR REPLACE MACRO ldiv__delta_disclosure_classes_st(x, st, delta) AS TABLE
    SELECT cid, size,
           missing_values = 0 AND delta_present < delta::DOUBLE AS ok,
           CASE WHEN missing_values > 0 THEN 'inf'::DOUBLE ELSE delta_present END AS v,
           missing_values = 0 AND abs(delta_present - delta::DOUBLE)
                                  <= 16 * ldiv__eps() * (delta_present + 2) AS unc
    FROM query_table(st);
CREATE OR REPLACE MACRO ldiv__delta_disclosure_classes_x(x, delta) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, 1))
    FROM ldiv__delta_disclosure_classes_st(x, 'ldiv__st', delta);
CREATE OR REPLACE MACRO ldiv__delta_disclosure_x(x, delta, spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__delta_disclosure_classes_x(x, delta))
    FROM ldiv__verdict('ldiv__c', x, spec, 'delta_disclosure', false);
CREATE OR REPLACE MACRO ldiv__delta_disclosure_fs(f, delta, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__delta_disclosure_x('ldiv__x', delta, spec);
CREATE OR REPLACE MACRO ldiv_delta_disclosure(tbl, qi, s, delta) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s, ldiv__positive_ok(delta, 'delta')))
    FROM ldiv__delta_disclosure_fs('ldiv__f', delta,
                                   to_json({'model': 'delta_disclosure',
                                            'delta': delta::DOUBLE}));

-- Beta-likeness: for every value with p > q in a class, (p - q)/q <= beta (basic) or
-- <= min(beta, -ln q) (enhanced). achieved = largest (p - q)/q over p > q (0 if none);
-- enhanced: NULL (infinite) when some gain exceeds its own cap -ln q, whatever beta.
-- Undecided: a value's gain within 16 eps (|gain| + 2) of beta (enhanced: or of -ln q).
CREATE OR REPLACE MACRO ldiv__beta_likeness_classes_x(x, beta, enhanced) AS TABLE
    WITH r AS (SELECT cid, size, n / size AS p, tn / total AS q FROM query_table(x)),
         g AS (SELECT cid, size, p, q, (p - q) / q AS gain FROM r)
    SELECT cid, any_value(size) AS size,
           coalesce(bool_and(gain <= CASE WHEN enhanced THEN least(beta::DOUBLE, -ln(q))
                                          ELSE beta::DOUBLE END)
                    FILTER (WHERE p > q), true) AS ok,
           CASE WHEN enhanced AND coalesce(max(gain / (-ln(q))) FILTER (WHERE p > q), 0.0) > 1.0
                THEN 'inf'::DOUBLE
                ELSE coalesce(max(gain) FILTER (WHERE p > q), 0.0) END AS v,
           bool_or(abs(gain - beta::DOUBLE) <= 16 * ldiv__eps() * (abs(gain) + 2)
                   OR (enhanced AND abs(gain + ln(q))
                                    <= 16 * ldiv__eps() * (abs(gain) + abs(ln(q)) + 2))) AS unc
    FROM g GROUP BY cid;
CREATE OR REPLACE MACRO ldiv__beta_likeness_x(x, beta, enhanced, spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__beta_likeness_classes_x(x, beta, enhanced))
    FROM ldiv__verdict('ldiv__c', x, spec, 'beta_likeness', false);
CREATE OR REPLACE MACRO ldiv__beta_likeness_fs(f, beta, enhanced, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__beta_likeness_x('ldiv__x', beta, enhanced, spec);
CREATE OR REPLACE MACRO ldiv_beta_likeness(tbl, qi, s, beta, enhanced := false) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s, ldiv__positive_ok(beta, 'beta')))
    FROM ldiv__beta_likeness_fs('ldiv__f', beta, enhanced,
                                to_json({'model': 'beta_likeness', 'beta': beta::DOUBLE,
                                         'enhanced': enhanced}));

-- Positive-disclosure-recursive (c,l)-diversity with a don't-care set Y (Def 4.3), and its
-- npd extension (Def 4.4) requiring every value of W at >= c2 percent of every class.
-- s_y = the most frequent value not in Y, r_y its count; tail = size - r_y - (the l-2 largest
-- other counts) (paper-notes §2.7 single formula; ties do not change the sums). A class passes
-- iff l = 1, or r_y = 0 (only don't-care values), or r_y < c * tail; npd also needs the
-- smallest W share (a missing W value counts 0%) >= c2. Values compare as VARCHAR; a NULL
-- value is neither in Y nor out of it when Y is not empty (as Polars' is_in).
-- achieved = largest r_y / tail (0 for r_y = 0 and for l = 1, which every class passes; NULL =
-- infinite when tail = 0).
CREATE OR REPLACE MACRO ldiv__pd_classes_x(x, c, l, dont_care, w_values, c2) AS TABLE
    SELECT cid, size,
           (l <= 1 OR r_y = 0 OR r_y < c::DOUBLE * tail) AND w_pct >= c2::DOUBLE AS ok,
           CASE WHEN l <= 1 OR r_y = 0 THEN 0.0 WHEN tail > 0 THEN r_y / tail
                ELSE 'inf'::DOUBLE END AS v,
           (l > 1 AND r_y > 0 AND ldiv__near_product(r_y, c, tail))
           OR (len(w_values) > 0 AND c2::DOUBLE > 0
               AND abs(w_pct - c2::DOUBLE) <= 8 * ldiv__eps() * (w_pct + c2::DOUBLE)) AS unc
    FROM (SELECT cid, size, r_y, w_pct,
                 size - r_y
                 - CASE WHEN l <= 1 THEN -r_y  -- l = 1: the tail is the whole class
                        WHEN r_y > 0 AND (top[CAST(l - 1 AS BIGINT)] IS NULL
                                          OR r_y >= top[CAST(l - 1 AS BIGINT)])
                        THEN coalesce(list_sum(top[1:CAST(l - 1 AS BIGINT)]), 0) - r_y
                        ELSE coalesce(list_sum(top[1:CAST(l - 2 AS BIGINT)]), 0) END AS tail
          FROM (SELECT cid, size,
                       coalesce(max(n) FILTER (WHERE ny), 0) AS r_y,
                       max(n, CAST(greatest(l - 1, 1) AS BIGINT)) AS top,
                       CASE WHEN len(w_values) = 0 THEN 100.0
                            WHEN count(*) FILTER (WHERE inw) < len(list_distinct(w_values))
                            THEN 0.0
                            ELSE min(n * 100.0 / size) FILTER (WHERE inw) END AS w_pct
                FROM (SELECT cid, size, n,
                             -- a NULL value is outside Y (as in_set on the Polars side)
                             CASE WHEN len(dont_care) = 0 THEN true
                                  ELSE coalesce(NOT list_contains(CAST(dont_care AS VARCHAR[]),
                                                                  CAST(sv AS VARCHAR)), true)
                                  END AS ny,
                             coalesce(list_contains(CAST(w_values AS VARCHAR[]),
                                                    CAST(sv AS VARCHAR)), false) AS inw
                      FROM query_table(x))
                GROUP BY cid, size));
CREATE OR REPLACE MACRO ldiv__pd_recursive_cl_classes_x(x, c, l, dont_care) AS TABLE
    FROM ldiv__pd_classes_x(x, c, l, dont_care, []::VARCHAR[], 0.0);
CREATE OR REPLACE MACRO ldiv__pd_recursive_cl_x(x, c, l, dont_care, spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__pd_recursive_cl_classes_x(x, c, l, dont_care))
    FROM ldiv__verdict('ldiv__c', x, spec, 'pd_recursive_cl', false);
CREATE OR REPLACE MACRO ldiv__pd_recursive_cl_fs(f, c, l, dont_care, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__pd_recursive_cl_x('ldiv__x', c, l, dont_care, spec);
CREATE OR REPLACE MACRO ldiv_pd_recursive_cl(tbl, qi, s, c, l, dont_care := []) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s,
                              ldiv__finite_positive_ok(c, 'c') AND ldiv__top_l_ok(l, 'l')))
    FROM ldiv__pd_recursive_cl_fs('ldiv__f', c, l, dont_care,
                                  to_json({'model': 'pd_recursive_cl', 'c': c::DOUBLE, 'l': l,
                                           'dont_care': CAST(dont_care AS VARCHAR[])}));

CREATE OR REPLACE MACRO ldiv__npd_recursive_cl_classes_x(x, c1, c2, l, dont_care,
                                                          w_values) AS TABLE
    FROM ldiv__pd_classes_x(x, c1, l, dont_care, w_values, c2);
CREATE OR REPLACE MACRO ldiv__npd_recursive_cl_x(x, c1, c2, l, dont_care, w_values,
                                                  spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__npd_recursive_cl_classes_x(x, c1, c2, l, dont_care, w_values))
    FROM ldiv__verdict('ldiv__c', x, spec, 'npd_recursive_cl', false);
CREATE OR REPLACE MACRO ldiv__npd_recursive_cl_fs(f, c1, c2, l, dont_care, w_values,
                                                   spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__npd_recursive_cl_x('ldiv__x', c1, c2, l, dont_care, w_values, spec);
CREATE OR REPLACE MACRO ldiv_npd_recursive_cl(tbl, qi, s, c1, c2, l, dont_care := [],
                                              w_values := []) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s,
                              ldiv__finite_positive_ok(c1, 'c1') AND ldiv__top_l_ok(l, 'l')
                              AND ldiv__number(c2, 'c2', 0.0, 100.0, false, true, false)))
    FROM ldiv__npd_recursive_cl_fs('ldiv__f', c1, c2, l, dont_care, w_values,
                                   to_json({'model': 'npd_recursive_cl', 'c1': c1::DOUBLE,
                                            'c2': c2::DOUBLE, 'l': l,
                                            'dont_care': CAST(dont_care AS VARCHAR[]),
                                            'protected': CAST(w_values AS VARCHAR[])}));

-- Risk macros: integer class sizes, always decided (undecided_classes = 0, for a uniform shape).
-- Prosecutor re-identification risk: 1/size per class. passed = largest risk <= max_risk.
-- achieved = largest risk = 1/k; average_risk = classes / rows.
CREATE OR REPLACE MACRO ldiv__prosecutor_risk_of(sizes_rel, max_risk) AS TABLE
    SELECT 'prosecutor_risk' AS model,
           coalesce(bool_and(1.0 / size <= max_risk), true) AS passed,
           1.0 / min(size) AS achieved,
           count(*) FILTER (WHERE 1.0 / size > max_risk)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE 1.0 / size > max_risk), 0)::BIGINT AS failing_rows,
           count(*) / sum(size) AS average_risk,
           0::BIGINT AS undecided_classes
    FROM query_table(sizes_rel);
CREATE OR REPLACE MACRO ldiv_prosecutor_risk(tbl, qi, max_risk := 1.0) AS TABLE
    WITH "ldiv__z" AS (FROM ldiv__sizes(tbl, qi))
    FROM ldiv__prosecutor_risk_of('ldiv__z', max_risk);

-- Marketer re-identification risk (sample = population): expected fraction of rows
-- re-identified = classes / rows. A table-level measure: failing_classes/rows are NULL.
CREATE OR REPLACE MACRO ldiv_marketer_risk(tbl, qi, max_risk := 1.0) AS TABLE
    SELECT 'marketer_risk' AS model,
           coalesce(count(*) / sum(size) <= max_risk, true) AS passed,
           count(*) / sum(size) AS achieved,
           NULL::BIGINT AS failing_classes,
           NULL::BIGINT AS failing_rows,
           0::BIGINT AS undecided_classes
    FROM ldiv__sizes(tbl, qi);

-- Sample uniques: rows alone in their class. passed = uniques <= max_uniques.
CREATE OR REPLACE MACRO ldiv_sample_uniques(tbl, qi, max_uniques := 0) AS TABLE
    SELECT 'sample_uniques' AS model,
           count(*) FILTER (WHERE size = 1) <= max_uniques AS passed,
           count(*) FILTER (WHERE size = 1)::DOUBLE AS achieved,
           count(*) FILTER (WHERE size = 1)::BIGINT AS failing_classes,
           count(*) FILTER (WHERE size = 1)::BIGINT AS failing_rows,
           count(*) FILTER (WHERE size = 1) / sum(size) AS fraction,
           0::BIGINT AS undecided_classes
    FROM ldiv__sizes(tbl, qi);

-- ---------------------------------------------------------------------------------------------
-- Violations and the summary
-- ---------------------------------------------------------------------------------------------

-- A violation's parameter and measured value as text, the same on every engine (the models'
-- reason(): ldiv_polars.models.base.reason_param / reason_number): a parameter without an
-- integral float's ".0" below 1e15, an integer as it is, a larger float as Python's repr
-- (DuckDB writes a double as repr does); a measured value with six decimals (half away from
-- zero), or inf.
CREATE OR REPLACE MACRO ldiv__reason_param(x) AS
    CASE WHEN typeof(x) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT',
                            'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT') THEN x::VARCHAR
         WHEN isinf(x::DOUBLE) THEN 'inf'
         WHEN x::DOUBLE = floor(x::DOUBLE) AND abs(x::DOUBLE) < 1e15
             THEN TRY_CAST(x::DOUBLE AS BIGINT)::VARCHAR
         ELSE (x::DOUBLE)::VARCHAR END;
CREATE OR REPLACE MACRO ldiv__reason_number(x) AS
    CASE WHEN isinf(x::DOUBLE) THEN 'inf'
         ELSE printf('%d.%06d', round(x::DOUBLE * 1000000)::BIGINT // 1000000,
                     round(x::DOUBLE * 1000000)::BIGINT % 1000000) END;

-- Classes that violate any of the requested models (NULL = not checked), with the reasons.
-- Columns: the QI values, size, distinct_values, reasons (list of strings), undecided (the
-- models whose verdict on the class floating point cannot decide; always empty when installed
-- from Python, which decides them exactly). c checks recursive (c, recursive_l); t uses
-- distance ('auto', 'equal', 'ordered'); alpha is checked as (alpha, 1)-anonymity.
CREATE OR REPLACE MACRO ldiv_violations(tbl, qi, s, k := NULL, l := NULL, entropy_l := NULL,
                                        c := NULL, recursive_l := 2, alpha := NULL,
                                        t := NULL, distance := 'auto', delta := NULL,
                                        beta := NULL, enhanced := false) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
             FROM ldiv__fs_checked(tbl, qi, s,
                 (k IS NULL OR ldiv__count_ok(k, 'k')) AND (l IS NULL OR ldiv__top_l_ok(l, 'l'))
                 AND (entropy_l IS NULL OR ldiv__l_ok(entropy_l, 'entropy_l'))
                 AND (c IS NULL OR (ldiv__finite_positive_ok(c, 'c')
                                    AND ldiv__top_l_ok(recursive_l, 'recursive_l')))
                 AND (alpha IS NULL OR ldiv__number(alpha, 'alpha', 0.0, 1.0, true, false, false))
                 AND (t IS NULL OR (ldiv__number(t, 't', 0.0, 1.0, false, false, false)
                                    AND ldiv__distance_ok(distance)))
                 AND (delta IS NULL OR ldiv__positive_ok(delta, 'delta'))
                 AND (beta IS NULL OR ldiv__positive_ok(beta, 'beta')))),
         "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx('ldiv__f')),
         ent AS (FROM ldiv__entropy_l_classes_x('ldiv__x', entropy_l) WHERE entropy_l IS NOT NULL),
         ent_d AS (FROM ldiv__decide_x('ent', 'ldiv__x',
                                       to_json({'model': 'entropy_l',
                                                'l': entropy_l::DOUBLE}))),
         rec AS (FROM ldiv__recursive_cl_classes_x('ldiv__x', c, recursive_l) WHERE c IS NOT NULL),
         rec_d AS (FROM ldiv__decide_x('rec', 'ldiv__x',
                                       to_json({'model': 'recursive_cl', 'c': c::DOUBLE,
                                                'l': recursive_l}))),
         alp AS (FROM ldiv__alpha_k_classes_x('ldiv__x', alpha, 1) WHERE alpha IS NOT NULL),
         alp_d AS (FROM ldiv__decide_x('alp', 'ldiv__x',
                                       to_json({'model': 'alpha_k', 'alpha': alpha::DOUBLE,
                                                'k': 1}))),
         tc AS (FROM ldiv__t_closeness_classes_x('ldiv__x', t, distance) WHERE t IS NOT NULL),
         tc_d AS (FROM ldiv__decide_x('tc', 'ldiv__x',
                                      to_json({'model': 't_closeness', 't': t::DOUBLE,
                                               'distance': ldiv__distance_of('ldiv__f',
                                                                             distance)}))),
         dl AS (FROM ldiv__delta_disclosure_classes_x('ldiv__x', delta) WHERE delta IS NOT NULL),
         dl_d AS (FROM ldiv__decide_x('dl', 'ldiv__x',
                                      to_json({'model': 'delta_disclosure',
                                               'delta': delta::DOUBLE}))),
         bt AS (FROM ldiv__beta_likeness_classes_x('ldiv__x', beta, enhanced)
                WHERE beta IS NOT NULL),
         bt_d AS (FROM ldiv__decide_x('bt', 'ldiv__x',
                                      to_json({'model': 'beta_likeness', 'beta': beta::DOUBLE,
                                               'enhanced': enhanced}))),
         ecs AS (SELECT cid, any_value(ec) AS ec FROM "ldiv__x" GROUP BY cid),
         st AS (SELECT st.*, ecs.ec,
                       ent_d.ok AS ent_ok, ent_d.unc AS ent_unc,
                       rec_d.ok AS rec_ok, rec_d.unc AS rec_unc,
                       alp_d.ok AS alp_ok, alp_d.unc AS alp_unc, alp_d.v AS alp_v,
                       tc_d.ok AS tc_ok, tc_d.unc AS tc_unc, tc_d.v AS emd,
                       dl_d.ok AS dl_ok, dl_d.unc AS dl_unc,
                       bt_d.ok AS bt_ok, bt_d.unc AS bt_unc, bt_d.v AS bt_v
                FROM ldiv__class_stats_x('ldiv__x', recursive_l) st
                JOIN ecs USING (cid)
                LEFT JOIN ent_d USING (cid) LEFT JOIN rec_d USING (cid)
                LEFT JOIN alp_d USING (cid) LEFT JOIN tc_d USING (cid)
                LEFT JOIN dl_d USING (cid) LEFT JOIN bt_d USING (cid)),
         r AS (SELECT ec, size, distinct_values, list_filter([
                 CASE WHEN size < k
                      THEN printf('class size %d < k=%s', size, ldiv__reason_param(k)) END,
                 CASE WHEN distinct_values < l
                      THEN printf('%d distinct sensitive value(s) < l=%s', distinct_values,
                                  ldiv__reason_param(l)) END,
                 CASE WHEN NOT ent_ok AND NOT ent_unc
                      THEN printf('entropy %s nats < ln(%s)', ldiv__reason_number(entropy),
                                  ldiv__reason_param(entropy_l)) END,
                 CASE WHEN NOT rec_ok AND NOT rec_unc
                      THEN printf('r1=%d not < c=%s * (r_%d+...+r_m)=%d', max_count,
                                  ldiv__reason_param(c), recursive_l, coalesce(tail, 0)) END,
                 CASE WHEN NOT alp_ok AND NOT alp_unc
                      THEN printf('size %d (k=1), top share %s (alpha=%s)', size,
                                  ldiv__reason_number(alp_v), ldiv__reason_param(alpha)) END,
                 CASE WHEN NOT tc_ok AND NOT tc_unc
                      THEN printf('EMD (%s) %s > t=%s', ldiv__distance_of('ldiv__f', distance),
                                  ldiv__reason_number(emd), ldiv__reason_param(t)) END,
                 CASE WHEN NOT dl_ok AND NOT dl_unc
                      THEN printf('max |ln(p/q)| %s not < delta=%s',
                                  CASE WHEN missing_values > 0 THEN 'inf'
                                       ELSE ldiv__reason_number(delta_present) END,
                                  ldiv__reason_param(delta)) END,
                 CASE WHEN NOT bt_ok AND NOT bt_unc AND isinf(bt_v)
                      THEN printf('a relative gain (p-q)/q > -ln q (enhanced, beta=%s)',
                                  ldiv__reason_param(beta))
                      WHEN NOT bt_ok AND NOT bt_unc
                      THEN printf('largest relative gain (p-q)/q %s > beta=%s',
                                  ldiv__reason_number(bt_v), ldiv__reason_param(beta))
                 END
               ], lambda x: x IS NOT NULL) AS reasons,
               list_filter([CASE WHEN ent_unc THEN 'entropy-l' END,
                            CASE WHEN rec_unc THEN 'recursive-(c,l)' END,
                            CASE WHEN alp_unc THEN 'alpha' END,
                            CASE WHEN tc_unc THEN 't-closeness' END,
                            CASE WHEN dl_unc THEN 'delta-disclosure' END,
                            CASE WHEN bt_unc THEN 'beta-likeness' END],
                           lambda x: x IS NOT NULL) AS undecided
               FROM st)
    SELECT unnest(ec), size, distinct_values, reasons, undecided
    FROM r
    WHERE len(reasons) > 0 OR len(undecided) > 0
    ORDER BY size, distinct_values;

-- ---------------------------------------------------------------------------------------------
-- The summary over a packed class key (ldiv_summary_packed's plan)
-- ---------------------------------------------------------------------------------------------
-- Each value of a quasi-identifier is replaced by its dense code (its row in a DISTINCT
-- dictionary of its column; NULL is a value of its own) and the codes, with the sensitive
-- value's rank, are packed into one BIGINT  k = ((c_1 * m_2 + c_2) * ... + c_q) * m + rank_s
-- when the product of the distinct counts fits in 62 bits. The frequency set is then one GROUP BY
-- on a fixed-width key, the class of a row is k // m and the class statistics are one GROUP BY
-- of the frequency set on it (no struct key, no join back). A table whose key does not fit, or
-- whose key space is small (see ldiv__summary_sql), takes the frequency set with its struct key
-- (ldiv__fs, ldiv__summary_fs) instead: both plans are in one statement, the one not taken
-- never scans the table.
--
-- The plan is SQL text built from the names and run by query(): every name is a string literal
-- in it (a column is selected by a lambda comparing names, as everywhere in this file), so a
-- name is never an identifier of the text.

-- x as an SQL string literal.
CREATE OR REPLACE MACRO ldiv__sql_str(x) AS '''' || replace(x, '''', '''''') || '''';

-- A list of strings as an SQL list literal.
CREATE OR REPLACE MACRO ldiv__sql_list(xs) AS
    '[' || array_to_string(list_transform(xs, lambda x: ldiv__sql_str(x)), ', ') || ']';

-- A value as an SQL literal of its own type.
CREATE OR REPLACE MACRO ldiv__sql_value(x) AS
    CASE WHEN x IS NULL THEN 'NULL'
         ELSE 'CAST(' || ldiv__sql_str(x::VARCHAR) || ' AS ' || typeof(x) || ')' END;

-- The rows of tbl, with an all-NULL column ldiv__none (the value of a missing column).
CREATE OR REPLACE MACRO ldiv__sql_scan(tbl) AS
    '(SELECT *, NULL AS "ldiv__none" FROM query_table(' || ldiv__sql_str(tbl) || '))';

-- The column called name (case-insensitively) of ldiv__sql_scan; NULL when there is none, so
-- that the text binds and the argument check (ldiv__args_ok) names the missing column.
CREATE OR REPLACE MACRO ldiv__sql_col(name) AS
    'coalesce(*COLUMNS(lambda c: lower(c) = lower(' || ldiv__sql_str(name)
    || ') OR c = ''ldiv__none''))';

-- The dictionaries "ldiv__d<i>" (v, c) of the quasi-identifiers, the sensitive domain
-- "ldiv__s" (ldiv__dom_counts with code = drk - 1), "ldiv__w": the distinct counts cs of the
-- quasi-identifiers, m of the sensitive column, the rows total, the table counts tns by code,
-- whether the sensitive column is ordered, the prefix sums sq0 of its cumulative table shares
-- Q and the ranks h with Q < 1/2 (see ldiv__emd_ordered_high),
-- whether the packed plan is taken (fits: the key fits in 62 bits and its space has at least
-- min_cells cells), and the strides
-- ws (ws[i] = cs[i+1] * ... * cs[q] * m); and "ldiv__e<i>" (v, c): the dictionaries with the
-- codes times their stride, so that the key of a row is a sum.
CREATE OR REPLACE MACRO ldiv__sql_dicts(tbl, qi, s, min_cells, gate := 'true') AS
    array_to_string(list_transform(range(1, len(qi) + 1), lambda i:
        '"ldiv__d' || i::VARCHAR || '" AS MATERIALIZED (SELECT v, (row_number() OVER () - 1)'
        || '::BIGINT AS c FROM (SELECT DISTINCT ' || ldiv__sql_col(qi[i]) || ' AS v FROM '
        || ldiv__sql_scan(tbl) || ' WHERE ' || gate || ')), '), '')
    || '"ldiv__sc" AS (SELECT ' || ldiv__sql_col(s) || ' AS sv, count(*)::BIGINT AS tn FROM '
    || ldiv__sql_scan(tbl) || ' WHERE ' || gate || ' GROUP BY ALL), '
    || '"ldiv__s" AS MATERIALIZED (SELECT *, drk - 1 AS code FROM ldiv__dom_counts(''ldiv__sc'')), '
    || '"ldiv__w" AS MATERIALIZED (SELECT *, CASE WHEN fits THEN list_transform(range(1, len(cs) '
    || '+ 1), lambda i: list_reduce(list_concat(list_slice(cs, i + 1, len(cs)), [m]), '
    || 'lambda a, b: a * b)) END AS ws FROM (SELECT *, list_sum(list_transform(cs, lambda x: '
    || 'ln(greatest(x, 1)))) + ln(greatest(m, 1)) AS bits, bits < 62 * ln(2) AND bits >= ln('
    || ldiv__sql_value(min_cells) || ') AND ' || gate || ' AS fits FROM (SELECT list(n ORDER BY i)::BIGINT[] AS cs '
    || 'FROM ('
    || array_to_string(list_transform(range(1, len(qi) + 1), lambda i:
           'SELECT ' || i::VARCHAR || ' AS i, count(*) AS n FROM "ldiv__d' || i::VARCHAR || '"'),
           ' UNION ALL ')
    || ')) CROSS JOIN (SELECT count(*) AS m, sum(tn)::BIGINT AS total, '
    || 'list(tn ORDER BY code) AS tns, bool_or(ldiv_is_ordered(sv)) AS ordered, '
    || 'count(*) FILTER (WHERE ctn * 2 < t) AS h, list_concat([0.0], list(sq ORDER BY code)) '
    || 'AS sq0 FROM (SELECT *, sum(ctn / t) OVER (ORDER BY code ROWS BETWEEN UNBOUNDED '
    || 'PRECEDING AND CURRENT ROW) AS sq FROM (SELECT *, sum(tn) OVER () AS t FROM "ldiv__s")))))'
    || array_to_string(list_transform(range(1, len(qi) + 1), lambda i:
        ', "ldiv__e' || i::VARCHAR || '" AS MATERIALIZED (SELECT v, c * (SELECT ws['
        || i::VARCHAR || '] FROM "ldiv__w") AS c FROM "ldiv__d' || i::VARCHAR || '")'), '');

-- The packed frequency set "ldiv__f" (k, n) of the rows that pass the argument checks (the
-- scan does not run when the key does not fit).
CREATE OR REPLACE MACRO ldiv__sql_packed_fs(tbl, qi, s, l) AS
    '"ldiv__f" AS MATERIALIZED (SELECT "ldiv__k" AS k, count(*)::BIGINT AS n FROM (SELECT '
    || array_to_string(list_transform(range(1, len(qi) + 1), lambda i:
           '"ldiv__e' || i::VARCHAR || '".c + '), '')
    || '"ldiv__s".code AS "ldiv__k" FROM (SELECT '
    || array_to_string(list_transform(range(1, len(qi) + 1), lambda i:
           ldiv__sql_col(qi[i]) || ' AS "ldiv__q' || i::VARCHAR || '", '), '')
    || ldiv__sql_col(s) || ' AS "ldiv__qs" FROM ' || ldiv__sql_scan(tbl)
    || ' WHERE (SELECT fits FROM "ldiv__w") AND (SELECT ldiv__args_ok(' || ldiv__sql_str(tbl)
    || ', ' || ldiv__sql_list(qi) || ', ' || ldiv__sql_str(s) || ')) AND ldiv__top_l_ok('
    || ldiv__sql_value(l) || ', ''l'')) "ldiv__t"'
    || array_to_string(list_transform(range(1, len(qi) + 1), lambda i:
           ' JOIN "ldiv__e' || i::VARCHAR || '" ON "ldiv__t"."ldiv__q' || i::VARCHAR
           || '" IS NOT DISTINCT FROM "ldiv__e' || i::VARCHAR || '".v'), '')
    || ' JOIN "ldiv__s" ON "ldiv__t"."ldiv__qs" IS NOT DISTINCT FROM "ldiv__s".sv) GROUP BY ALL)';

-- The plan of ldiv_summary, chosen from the data by ldiv_polars.duckdb.summary_plan's rule: the
-- packed plan (go) on a table of at least min_rows rows of which at least half of the first
-- probe_rows rows are distinct on the columns cols, else the struct key. The text of a CTE
-- "ldiv__go" (go BOOLEAN): one row count (metadata for a table, a Parquet file or an Arrow
-- table), then the prefix is read only on a table that large. A CSV, TSV or TXT file (counted
-- by reading it: its every pass parses it) keeps the struct key unread, as summary() does.
CREATE OR REPLACE MACRO ldiv__sql_go(tbl, cols, min_rows, probe_rows) AS
    '"ldiv__big" AS MATERIALIZED (SELECT '
    || CASE WHEN regexp_matches(lower(tbl), '\.(csv|tsv|txt)$') THEN 'false AS big'
            ELSE 'count(*) >= ' || ldiv__sql_value(min_rows) || ' AS big FROM query_table('
                 || ldiv__sql_str(tbl) || ')' END
    || '), "ldiv__go" AS MATERIALIZED (SELECT big AND 2 * (SELECT count(*) FROM (SELECT '
    || 'DISTINCT ' || array_to_string(list_transform(range(1, len(cols) + 1), lambda i:
           ldiv__sql_col(cols[i]) || ' AS "ldiv__p' || i::VARCHAR || '"'), ', ')
    || ' FROM (FROM ' || ldiv__sql_scan(tbl) || ' WHERE (SELECT big FROM "ldiv__big") LIMIT '
    || ldiv__sql_value(probe_rows) || '))) >= ' || ldiv__sql_value(probe_rows)
    || ' AS go FROM "ldiv__big")';

-- The plan ldiv_summary takes on tbl (qi, s): 'packed' or 'struct' (see ldiv__sql_go; the
-- defaults are ldiv_polars.duckdb.PACKED_MIN_ROWS and PROBE_ROWS).
CREATE OR REPLACE MACRO ldiv_summary_plan(tbl, qi, s, min_rows := 1000000, probe_rows := 50000)
    AS TABLE
    FROM query('WITH ' || ldiv__sql_go(tbl, list_concat(qi, [s]), min_rows, probe_rows)
               || ' SELECT CASE WHEN go THEN ''packed'' ELSE ''struct'' END AS plan FROM "ldiv__go"');

-- The statement of ldiv_summary_packed (see there): the packed plan when the key fits and its space
-- has at least min_cells cells (default 2^20), else the frequency set with its struct key: a
-- frequency set of fewer rows than that is grouped in cache on the raw columns for less than
-- the packed plan's per-row dictionary joins cost.
-- go: NULL, or the text of a CTE "ldiv__go" (go BOOLEAN, see ldiv__sql_go) that gates the
-- packed plan's scans: when go is false they read no row and the struct key is taken.
CREATE OR REPLACE MACRO ldiv__summary_sql(tbl, qi, s, l, min_cells := 1048576, go := NULL) AS
    'WITH ' || CASE WHEN go IS NULL THEN '' ELSE go || ', ' END
    || ldiv__sql_dicts(tbl, qi, s, min_cells,
                       CASE WHEN go IS NULL THEN 'true' ELSE '(SELECT go FROM "ldiv__go")' END)
    || ', ' || ldiv__sql_packed_fs(tbl, qi, s, l)
    || ', "ldiv__f0" AS MATERIALIZED (FROM ldiv__fs_checked(' || ldiv__sql_str(tbl) || ', '
    || ldiv__sql_list(qi) || ', ' || ldiv__sql_str(s) || ', ldiv__top_l_ok('
    || ldiv__sql_value(l) || ', ''l'') AND NOT (SELECT fits FROM "ldiv__w")))'
    || ' FROM ldiv__summary_packed(''ldiv__f'', ''ldiv__s'', ''ldiv__w'', ' || ldiv__sql_value(l)
    || ') WHERE (SELECT fits FROM "ldiv__w") UNION ALL FROM ldiv__summary_fs(''ldiv__f0'', '
    || ldiv__sql_value(l) || ') WHERE NOT (SELECT fits FROM "ldiv__w")';

-- The rows of a packed frequency set f (k, n) with their class cls = k // m, the sensitive
-- value's code and table count tn (w holds m, total and the counts tns by code: a list
-- lookup, not a join) and nt = n * (total + 1) + tn, which orders them by n and holds tn.
-- ok: a condition on f's scan (a pass that may not be needed reads no row).
CREATE OR REPLACE MACRO ldiv__packed_rows(f, w, ok := true) AS TABLE
    SELECT cls, code, n, tn, n::HUGEINT * (total + 1) + tn AS nt, total, m
    FROM (SELECT cls, code, n, tns[code + 1] AS tn, total, m
          FROM (SELECT f.k // w.m AS cls, f.k % w.m AS code, f.n, w.total, w.m, w.tns
                FROM query_table(f) f CROSS JOIN query_table(w) w WHERE ok));

-- Bounds of a class's ordered EMD (1/(m-1)) sum_{i<m} |P_i - Q_i| over the ranks 1..m of the
-- table's m values, from the table's prefix sums sq0 (sq0[j + 1] = Q_1 + ... + Q_j) and h (the
-- ranks with Q_i < 1/2). Lower: |sum_i (P_i - Q_i)| = |E_P[rank] - E_Q[rank]|, where
-- sum_{i<m} P_i = m - E_P[rank] = m - 1 - ec (ec: the class's mean code, rank - 1). Upper, for
-- a class whose codes span lo..hi: P_i = 0 below rank lo + 1, 1 from rank hi + 1, and between
-- them |P_i - Q_i| <= max(Q_i, 1 - Q_i) (= 1 - Q_i up to rank h, Q_i above). Exact for a class
-- of one value. 0 when m = 1.
CREATE OR REPLACE MACRO ldiv__emd_ordered_low(ec, m, sq0) AS
    CASE WHEN m <= 1 THEN 0.0 ELSE abs(m - 1 - ec - sq0[m]) / (m - 1) END;
CREATE OR REPLACE MACRO ldiv__sq_range(sq0, x, y) AS
    CASE WHEN y >= x THEN sq0[y + 1] - sq0[x] ELSE 0.0 END;
CREATE OR REPLACE MACRO ldiv__emd_ordered_high(lo, hi, m, h, sq0) AS
    CASE WHEN m <= 1 THEN 0.0
         ELSE least(1.0, (sq0[lo + 1]
                          + greatest(least(hi, h) - lo, 0) - ldiv__sq_range(sq0, lo + 1, least(hi, h))
                          + ldiv__sq_range(sq0, greatest(lo + 1, h + 1), hi)
                          + (m - 1 - hi) - ldiv__sq_range(sq0, hi + 1, m - 1)) / (m - 1)) END;

-- Per class of a packed frequency set (see ldiv__packed_rows): the statistics of
-- ldiv__class_stats_x from sums that need no class size inside them: entropy = ln(size) -
-- sum(n ln n) / size, the tail from the l-1 largest counts (summed over the rows ranked in
-- their class only when l >= 3), and the equal-distance EMD (= 1 - sum over present values of
-- min(p, q)) exact for the classes of one or two values (from the count and table count of
-- the largest value and the class's totals: emd) and bounded for the others: emd_low <= EMD
-- <= emd_high, each present value adding at least min(1/size, the smallest table share).
-- For an ordered sensitive column (w.ordered) the same three columns hold the ordered EMD's:
-- exact (emd) for a class of one value, bounded by ldiv__emd_ordered_low/_high otherwise.
-- The columns of ldiv__summary_row (delta_present and sv_ordered NULL: see
-- ldiv__summary_packed).
CREATE OR REPLACE MACRO ldiv__packed_classes(f, w, l, ok := true) AS TABLE
    WITH t AS (SELECT list_min(tns) AS tmin, total, m, ordered, h, sq0 FROM query_table(w)),
         st AS (SELECT cls, sum(n)::BIGINT AS size, count(*)::BIGINT AS d, max(nt) AS top_nt,
                       sum(n * ln(n)) AS nln, sum(tn)::BIGINT AS tp, min(code) AS lo,
                       max(code) AS hi, sum(n * code) AS nc
                FROM ldiv__packed_rows(f, w, ok) GROUP BY cls),
         tops AS (SELECT cls, sum(n)::BIGINT AS top
                  FROM (SELECT cls, n, row_number() OVER (PARTITION BY cls ORDER BY n DESC) AS r
                        FROM ldiv__packed_rows(f, w, ok AND l >= 3))
                  WHERE r < l GROUP BY cls),
         sx AS (SELECT st.*, t.*, (top_nt // (total + 1))::BIGINT AS mx,
                       (top_nt % (total + 1))::BIGINT AS ta FROM st CROSS JOIN t)
    SELECT sx.cls, size, d AS distinct_values, mx AS max_count, total, m,
           CASE WHEN d = 1 THEN 0.0 ELSE ln(size) - nln / size END AS entropy,
           CASE WHEN l <= 1 THEN size
                WHEN d < l THEN NULL
                WHEN l = 2 THEN size - mx
                ELSE size - tops.top END::BIGINT AS tail,
           CASE WHEN ordered THEN ldiv__emd_ordered_high(lo, hi, m, h, sq0) END AS emd_ord_high,
           CASE WHEN ordered AND d = 1 THEN emd_ord_high
                WHEN ordered THEN ldiv__emd_ordered_low(nc / size, m, sq0)
                WHEN d = 1 THEN (total - tp) / total
                WHEN d = 2 THEN 0.5 * (abs(mx / size - ta / total)
                                       + abs((size - mx) / size - (tp - ta) / total)
                                       + (total - tp) / total)
                ELSE greatest((total - tp) / total, mx / size - ta / total) END AS emd_low,
           CASE WHEN ordered AND d = 1 THEN emd_ord_high
                WHEN d <= 2 AND NOT ordered THEN emd_low END AS emd,
           CASE WHEN ordered AND d >= 2 THEN emd_ord_high
                WHEN d >= 3 AND NOT ordered THEN 1.0 - least(mx / size, ta / total)
                                 - (d - 1) * least(1.0 / size, tmin / total) END AS emd_high,
           m - d AS missing_values, NULL::DOUBLE AS delta_present, NULL::BOOLEAN AS sv_ordered
    FROM sx LEFT JOIN tops USING (cls);

-- The largest delta_present (max |ln(p/q)| over the values present) of the classes of a
-- packed frequency set, from the extreme n/tn of each class (ok: see ldiv__packed_rows).
CREATE OR REPLACE MACRO ldiv__packed_delta(f, w, ok) AS TABLE
    SELECT max(greatest(ln(hi * total / size), -ln(lo * total / size))) AS delta
    FROM (SELECT cls, sum(n) AS size, max(n / tn) AS hi, min(n / tn) AS lo,
                 any_value(total) AS total
          FROM ldiv__packed_rows(f, w, ok) GROUP BY cls);

-- The aggregates of both summary plans over a per-class relation st (cls, size,
-- distinct_values, entropy, max_count, tail, emd, emd_low, emd_high, total, missing_values,
-- delta_present, sv_ordered): the summary's keys but t and delta, and for them the largest emd
-- and delta_present, whether the sensitive column is ordered and whether every class holds
-- every value (complete); for the packed plan's EMD the largest lower bound less the rounding
-- slack (reach) and the 1024 classes of the highest upper bounds emd_high (top).
CREATE OR REPLACE MACRO ldiv__summary_row(st, l) AS TABLE
    SELECT coalesce(sum(size), 0)::BIGINT AS rows,
           count(*)::BIGINT AS classes,
           min(size)::BIGINT AS k,
           min(distinct_values)::BIGINT AS l_distinct,
           exp(min(entropy)) AS l_entropy,
           CASE WHEN count(*) = 0 THEN NULL
                WHEN l <= 1 THEN 0.0
                WHEN bool_and(tail IS NOT NULL) THEN max(max_count / tail) END AS recursive_c,
           max(max_count / size) AS alpha,
           max(emd) AS emd,
           bool_or(sv_ordered) AS ordered,
           coalesce(max(missing_values), 0) = 0 AS complete,
           max(delta_present) AS delta_present,
           1.0 / min(size) AS prosecutor_max,
           count(*) / sum(size) AS prosecutor_avg,
           count(*) FILTER (WHERE size = 1)::BIGINT AS sample_uniques,
           max(emd_low) - 1e-6 AS reach,
           arg_max({'cls': cls, 'size': size, 'total': total, 'high': emd_high},
                   emd_high, 1024) FILTER (WHERE emd_high IS NOT NULL) AS top
    FROM query_table(st);

-- The exact equal-distance EMD (as ldiv__class_stats_x sums it) of the classes of cand (cls,
-- size, total) over the rows of a packed frequency set (ldiv__packed_rows; ok: idem); the
-- rows are filtered by a semi-join, whose build side is cand.
CREATE OR REPLACE MACRO ldiv__packed_emd(f, w, cand, ok := true) AS TABLE
    SELECT cls, 0.5 * (sum(abs(r.n / c.size - r.tn / c.total))
                       + (any_value(c.total) - sum(r.tn)) / any_value(c.total)) AS e
    FROM (FROM ldiv__packed_rows(f, w, ok) WHERE cls IN (SELECT cls FROM query_table(cand))) r
    JOIN query_table(cand) c USING (cls)
    GROUP BY cls;

-- ldiv_summary of a packed frequency set (see ldiv__packed_classes), in one pass over the
-- classes. The equal-distance t is the largest exact EMD: the classes of one or two values have
-- theirs; of the others, only a class whose upper bound reaches the best lower bound of the
-- table can hold the maximum: the pass keeps the 1024 classes with the highest upper bounds
-- and sums those exactly; when more classes could hold it, every class of three values or more
-- is summed exactly. The ordered distance (w.ordered) likewise: the classes of one value have
-- theirs, the others are bounded (ldiv__emd_ordered_low/_high) and the candidates summed by
-- ldiv__emd_ordered_x, over their rows and the table's domain (a class of EMD 0).
CREATE OR REPLACE MACRO ldiv__summary_packed(f, sd, w, l) AS TABLE
    WITH st AS NOT MATERIALIZED (FROM ldiv__packed_classes(f, w, l)),
         agg AS MATERIALIZED (FROM ldiv__summary_row('st', l)),
         over AS MATERIALIZED (SELECT len(top) = 1024 AND top[1024].high >= reach AS over
                               FROM agg),
         cand AS (SELECT c.cls, c.size, c.total
                  FROM (SELECT unnest(top, recursive := true) FROM agg) c, agg, over
                  WHERE c.high >= agg.reach AND NOT over.over
                  UNION ALL
                  SELECT cls, size, total
                  FROM ldiv__packed_classes(f, w, l, (SELECT over FROM over))
                  WHERE emd_high IS NOT NULL),
         ord AS MATERIALIZED (SELECT ordered FROM query_table(w)),
         ce AS (SELECT max(e) AS e
                FROM ldiv__packed_emd(f, w, 'cand', NOT (SELECT ordered FROM ord))),
         dl AS (FROM ldiv__packed_delta(f, w, (SELECT complete FROM agg))),
         xo AS (SELECT r.cls AS cid, c.size, c.total, r.m, s.drk, s.ctn, r.n, s.sv
                FROM (FROM ldiv__packed_rows(f, w, (SELECT ordered FROM ord))
                      WHERE cls IN (SELECT cls FROM cand)) r
                JOIN query_table(sd) s USING (code) JOIN cand c USING (cls)
                UNION ALL  -- the table as a class of its own (EMD 0): every value in the domain
                SELECT -1, w.total, w.total, w.m, s.drk, s.ctn, s.tn, s.sv
                FROM query_table(sd) s, query_table(w) w WHERE w.ordered),
         eo AS (FROM ldiv__emd_ordered_x('xo', 'auto'))
    SELECT rows, classes, k, l_distinct, l_entropy, recursive_c, alpha,
           greatest(emd, CASE WHEN (SELECT ordered FROM ord) THEN (SELECT max(emd_ordered) FROM eo)
                              ELSE (SELECT e FROM ce) END) AS t,
           CASE WHEN complete THEN (SELECT delta FROM dl) END AS delta,
           prosecutor_max, prosecutor_avg, sample_uniques
    FROM agg;

-- The summary of a frequency set relation f (see ldiv_summary).
CREATE OR REPLACE MACRO ldiv__summary_fs(f, l) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f)),
         st AS (SELECT *, cid AS cls, emd_equal AS emd, emd_equal AS emd_low,
                       NULL::DOUBLE AS emd_high, NULL::BIGINT AS total
                FROM ldiv__class_stats_x('ldiv__x', l)),
         eo AS (FROM ldiv__emd_ordered_x('ldiv__x', 'auto'))
    SELECT rows, classes, k, l_distinct, l_entropy, recursive_c, alpha,
           CASE WHEN ordered THEN (SELECT max(emd_ordered) FROM eo) ELSE emd END AS t,
           CASE WHEN complete THEN delta_present END AS delta,
           prosecutor_max, prosecutor_avg, sample_uniques
    FROM ldiv__summary_row('st', l);

-- One row with the keys of ldiv_polars.summary (same names, same semantics):
--   rows, classes, k, l_distinct, l_entropy, recursive_c, alpha, t, delta,
--   prosecutor_max, prosecutor_avg, sample_uniques
-- l is the recursive-(c,l) tail start; t uses the ordered distance for a numeric or temporal
-- sensitive column and the equal distance otherwise; recursive_c and delta are NULL where
-- infinite; on an empty table everything but rows, classes, sample_uniques (0) is NULL.
-- Plan, chosen at run time by the rule of ldiv_polars.duckdb.summary_plan (ldiv__sql_go,
-- ldiv_summary_plan; min_rows and probe_rows: its thresholds): on a table of at least min_rows
-- rows whose first probe_rows rows are at least half distinct, the plan of
-- ldiv_summary_packed; else the plan of ldiv_summary_struct. One statement holds both plans
-- and runs one: the other's scans are gated by the choice and read no row; it pays the
-- planning of both (see ldiv_summary_struct for the lowest latency on a small table).
CREATE OR REPLACE MACRO ldiv_summary(tbl, qi, s, l, min_rows := 1000000, probe_rows := 50000)
    AS TABLE
    FROM query(ldiv__summary_sql(tbl, qi, s, l, go := ldiv__sql_go(tbl, list_concat(qi, [s]),
                                                                    min_rows, probe_rows)));

-- ldiv_summary's row by one frequency set with a struct class key (ldiv__fs), materialized:
-- the smallest statement (the least planning), the plan for a small table or a small
-- frequency set.
CREATE OR REPLACE MACRO ldiv_summary_struct(tbl, qi, s, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs_checked(tbl, qi, s, ldiv__top_l_ok(l, 'l')))
    FROM ldiv__summary_fs('ldiv__f', l);

-- ldiv_summary (same row, same values up to rounding) with the packed class key (see
-- ldiv__summary_sql) when it fits and the key space is large, else the struct key, in one
-- larger statement: it pays a distinct-value scan per column and ~3x the planning, and repays
-- them on a large table whose frequency set is large (ldiv_polars.duckdb.summary_plan decides
-- for summary()). A table macro cannot choose from the data before it is planned, hence two.
CREATE OR REPLACE MACRO ldiv_summary_packed(tbl, qi, s, l) AS TABLE
    FROM query(ldiv__summary_sql(tbl, qi, s, l));

-- ---------------------------------------------------------------------------------------------
-- Hierarchical t-closeness (closed form over a hierarchy relation)
-- ---------------------------------------------------------------------------------------------
-- hier names a relation with columns leaf (the sensitive value as VARCHAR) and path (VARCHAR[]:
-- the ancestors of the leaf from level 1 up to the root; all paths of the same length H).
-- EMD (Li et al. 2007) = sum over inner nodes N at level j of (j / H) * min(pos_extra(N),
-- neg_extra(N)), extra(child) = sum over the child's leaves of p - q. Every value of the
-- sensitive column must be a leaf (ldiv_polars.duckdb.register_hierarchy checks that). The sums
-- run in a fixed order (ORDER BY): a parallel sum of doubles may change its last bit from one
-- run to the next, and a class's EMD must be the same in every statement that asks for it.
CREATE OR REPLACE MACRO ldiv__emd_hierarchical_x(x_rel, hier) AS TABLE
    WITH x AS (FROM query_table(x_rel)),
         h AS (SELECT CAST(leaf AS VARCHAR) AS leaf, CAST(path AS VARCHAR[]) AS path,
                      len(path) AS height FROM query_table(hier)),
         c AS (SELECT DISTINCT cid, size, total FROM x),
         d AS (SELECT DISTINCT CAST(sv AS VARCHAR) AS leaf, tn FROM x),
         g AS (SELECT c.cid, d.leaf,
                      coalesce(x.n, 0) / c.size - d.tn / c.total AS e
               FROM c CROSS JOIN d
               LEFT JOIN x ON x.cid = c.cid AND CAST(x.sv AS VARCHAR) = d.leaf),
         lv AS (SELECT g.cid, g.leaf, g.e, j, h.height,
                       h.path[j] AS node,
                       CASE WHEN j = 1 THEN g.leaf ELSE h.path[j - 1] END AS child
                FROM g JOIN h ON h.leaf = g.leaf,
                     range(1, h.height + 1) AS r(j)),
         ch AS (SELECT cid, j, height, node, child, sum(e ORDER BY leaf) AS extra
                FROM lv GROUP BY cid, j, height, node, child),
         nd AS (SELECT cid, j, height, node,
                       sum(greatest(extra, 0.0) ORDER BY child) AS pos,
                       sum(greatest(-extra, 0.0) ORDER BY child) AS neg
                FROM ch GROUP BY cid, j, height, node)
    SELECT c.cid, greatest(coalesce(sum(j / height * least(pos, neg) ORDER BY j, node), 0.0),
                           0.0)
               AS emd_hierarchical
    FROM c LEFT JOIN nd USING (cid)
    GROUP BY c.cid;

-- Per class; rounding bound 64 eps (d + m + 4) (H + 1) for d values in the class, m in the
-- table and a hierarchy of height H.
CREATE OR REPLACE MACRO ldiv__t_closeness_hierarchical_classes_st(x, st, t, hier) AS TABLE
    SELECT cid, size, emd_hierarchical <= t::DOUBLE AS ok, emd_hierarchical AS v,
           abs(emd_hierarchical - t::DOUBLE)
               <= 64 * ldiv__eps() * (distinct_values + m + 4)
                  * ((SELECT max(len(path)) FROM query_table(hier)) + 1) AS unc
    FROM query_table(st)
    JOIN ldiv__emd_hierarchical_x(x, hier) USING (cid);
CREATE OR REPLACE MACRO ldiv__t_closeness_hierarchical_classes_x(x, t, hier) AS TABLE
    WITH "ldiv__st" AS (FROM ldiv__class_stats_x(x, 1))
    FROM ldiv__t_closeness_hierarchical_classes_st(x, 'ldiv__st', t, hier);
CREATE OR REPLACE MACRO ldiv__t_closeness_hierarchical_x(x, t, hier, spec) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__t_closeness_hierarchical_classes_x(x, t, hier))
    FROM ldiv__verdict('ldiv__c', x, spec, 't_closeness', false);
CREATE OR REPLACE MACRO ldiv__t_closeness_hierarchical_fs(f, t, hier, spec) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__t_closeness_hierarchical_x('ldiv__x', t, hier, spec);
-- The hierarchy relation as the spec's rows [leaf, level 1, ..., root].
CREATE OR REPLACE MACRO ldiv__hierarchy_rows(hier) AS
    (SELECT list(list_concat([CAST(leaf AS VARCHAR)], CAST(path AS VARCHAR[])) ORDER BY leaf)
     FROM query_table(hier));
CREATE OR REPLACE MACRO ldiv_t_closeness_hierarchical(tbl, qi, s, t, hier) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (
        FROM ldiv__fs_checked(tbl, qi, s, ldiv__number(t, 't', 0.0, 1.0, false, false, false)))
    FROM ldiv__t_closeness_hierarchical_fs('ldiv__f', t, hier,
                                           to_json({'model': 't_closeness', 't': t::DOUBLE,
                                                    'distance': 'hierarchical',
                                                    'hierarchy': ldiv__hierarchy_rows(hier)}));

-- ---------------------------------------------------------------------------------------------
-- Scalar generalization macros (build views with them, then check the view)
-- ---------------------------------------------------------------------------------------------

-- Right-mask the last n characters of a code: ldiv_mask('13053', 2) -> '130**'.
CREATE OR REPLACE MACRO ldiv_mask(code, n) AS
    CASE WHEN code IS NULL THEN NULL
         WHEN n <= 0 THEN CAST(code AS VARCHAR)
         WHEN n >= length(CAST(code AS VARCHAR)) THEN repeat('*', length(CAST(code AS VARCHAR)))
         ELSE left(CAST(code AS VARCHAR), length(CAST(code AS VARCHAR)) - n) || repeat('*', n)
    END;

-- Number as a short label: integral values without a decimal point.
CREATE OR REPLACE MACRO ldiv__num_label(v) AS
    CASE WHEN v = trunc(v) AND abs(v) < 1e15 THEN CAST(CAST(v AS BIGINT) AS VARCHAR)
         ELSE CAST(v AS VARCHAR) END;

-- Lower bound of the width-wide interval containing x (intervals start at origin).
CREATE OR REPLACE MACRO ldiv_bin_lower(x, width, origin := 0) AS
    origin + floor((x - origin) / width) * width;

-- Interval label of x: ldiv_bin(37, 10) -> '[30, 40)'.
CREATE OR REPLACE MACRO ldiv_bin(x, width, origin := 0) AS
    CASE WHEN x IS NULL THEN NULL
         ELSE '[' || ldiv__num_label(origin + floor((x - origin) / width) * width) || ', '
              || ldiv__num_label(origin + floor((x - origin) / width) * width + width) || ')'
    END;

-- Date truncation to 'year', 'quarter', 'month', 'week' or 'day' (a DATE).
CREATE OR REPLACE MACRO ldiv_date_trunc(d, unit) AS CAST(date_trunc(unit, d) AS DATE);

-- Date label at a level: '2024', '2024-Q2', '2024-05', '2024-W19', '2024-05-07'.
CREATE OR REPLACE MACRO ldiv_date_label(d, unit) AS
    CASE unit WHEN 'year' THEN strftime(d, '%Y')
              WHEN 'quarter' THEN strftime(d, '%Y') || '-Q' || CAST(quarter(d) AS VARCHAR)
              WHEN 'month' THEN strftime(d, '%Y-%m')
              WHEN 'week' THEN strftime(d, '%G-W%V')
              WHEN 'day' THEN strftime(d, '%Y-%m-%d')
              ELSE error('unit must be year, quarter, month, week or day') END;

-- Top coding: values above cap become cap. Bottom coding: values below floor_ become floor_.
CREATE OR REPLACE MACRO ldiv_top_code(x, cap) AS CASE WHEN x > cap THEN cap ELSE x END;
CREATE OR REPLACE MACRO ldiv_bottom_code(x, floor_) AS CASE WHEN x < floor_ THEN floor_ ELSE x END;
CREATE OR REPLACE MACRO ldiv_top_bottom_code(x, floor_, cap) AS
    CASE WHEN x < floor_ THEN floor_ WHEN x > cap THEN cap ELSE x END;

-- ---------------------------------------------------------------------------------------------
-- Disclosure risk with sampling weights (sdcMicro's freqCalc / indivRisk / measure_risk; the
-- definitions are ldiv_polars.risk.individual's, docs/risk.md section 2). Nulls in a QI are a
-- value of their own (GROUP BY), as nulls="value".
-- ---------------------------------------------------------------------------------------------

-- Benedetti-Franconi individual risk E[1/F | fk], p = fk/Fk, sdcMicro's approximation
-- (method "approx"): 1/fk when fk >= Fk (the class is the whole population).
CREATE OR REPLACE MACRO ldiv_benedetti_franconi(fk, big_fk) AS
    CASE WHEN fk::DOUBLE / big_fk >= 1.0 THEN 1.0 / fk
         WHEN fk = 1 THEN (fk::DOUBLE / big_fk) / (1.0 - fk::DOUBLE / big_fk)
                          * -ln(fk::DOUBLE / big_fk)
         WHEN fk = 2 THEN (fk::DOUBLE / big_fk) / (1.0 - fk::DOUBLE / big_fk)
                          - pow((fk::DOUBLE / big_fk) / (1.0 - fk::DOUBLE / big_fk), 2)
                            * -ln(fk::DOUBLE / big_fk)
         ELSE (fk::DOUBLE / big_fk) / (fk - (1.0 - fk::DOUBLE / big_fk)) END;

-- One row per class: QI columns, fk (sample records), weight_sum (F_k, the sum of the weights
-- in column w; DuckDB's names are case-insensitive, so not "Fk"), risk. Weights must be finite and positive: a NULL, non-positive or non-finite one raises.
CREATE OR REPLACE MACRO ldiv_individual_risk(tbl, qi, w) AS TABLE
    SELECT * EXCLUDE ("ldiv__bad"), ldiv_benedetti_franconi(fk, weight_sum) AS risk
    FROM (SELECT COLUMNS(lambda c: list_contains(qi, c)), count(*)::BIGINT AS fk,
                 sum("ldiv__w")::DOUBLE AS weight_sum,
                 count(*) FILTER (WHERE "ldiv__w" IS NULL OR "ldiv__w" <= 0
                                  OR NOT isfinite("ldiv__w"::DOUBLE)) AS "ldiv__bad"
          FROM (SELECT COLUMNS(lambda c: list_contains(qi, c)),
                       COLUMNS(lambda c: c = w) AS "ldiv__w"
                FROM query_table(tbl))
          GROUP BY ALL)
    WHERE CASE WHEN "ldiv__bad" > 0
               THEN error('weight column ' || w || ' holds null or non-positive values')
               ELSE true END;

-- One row: records, classes, expected_reidentifications (sum of the records' risks),
-- global_risk (their share), max_risk, sample_uniques (records with fk = 1).
CREATE OR REPLACE MACRO ldiv_global_risk(tbl, qi, w) AS TABLE
    SELECT sum(fk)::BIGINT AS records, count(*)::BIGINT AS classes,
           sum(fk * risk) AS expected_reidentifications,
           sum(fk * risk) / sum(fk) AS global_risk, max(risk) AS max_risk,
           coalesce(sum(fk) FILTER (WHERE fk = 1), 0)::BIGINT AS sample_uniques
    FROM ldiv_individual_risk(tbl, qi, w);

-- Risk thresholds as privacy models (table-level, docs/risk.md section 5) -----------------------

-- The frequencies of the class sizes of an extended frequency set x: (size, classes). The
-- table-level models decide on this small table (the DuckDB engine asks the model).
CREATE OR REPLACE MACRO ldiv__class_sizes_x(x) AS TABLE
    SELECT size, count(*)::BIGINT AS classes
    FROM (SELECT DISTINCT cid, size FROM query_table(x)) GROUP BY size;

-- a / b <= x exactly, for counts a, b >= 0 (below 2^53) and a DOUBLE x in [0, 1] (an empty
-- table, b = 0, passes): the correctly rounded quotient decides unless it equals x; then x is
-- m / 2^e exactly (m = x * 2^e, an integer) and a * 2^e <= m * b is compared in HUGEINT.
CREATE OR REPLACE MACRO ldiv__share_le(a, b, x) AS
    CASE WHEN b = 0 OR a = 0 THEN true
         WHEN x = 0 THEN false
         WHEN a::DOUBLE / b <> x THEN a::DOUBLE / b < x
         ELSE a::HUGEINT * power(2, 54 - floor(log2(x)))::HUGEINT
              <= (x * power(2, 54 - floor(log2(x))))::HUGEINT * b::HUGEINT END;

-- The verdict row of a risk threshold over a class-size relation: model, passed, achieved
-- (the share; NULL for an empty table), classes, records, uniques.
CREATE OR REPLACE MACRO ldiv__threshold_of(sizes_rel, model_name, x) AS TABLE
    SELECT model_name AS model,
           ldiv__share_le(CASE WHEN model_name = 'average_risk' THEN count(size)
                               ELSE count(*) FILTER (WHERE size = 1) END,
                          coalesce(sum(size), 0), x) AS passed,
           CASE WHEN sum(size) > 0 THEN (CASE WHEN model_name = 'average_risk' THEN count(size)
                ELSE count(*) FILTER (WHERE size = 1) END)::DOUBLE / sum(size) END AS achieved,
           count(size)::BIGINT AS classes, coalesce(sum(size), 0)::BIGINT AS records,
           count(*) FILTER (WHERE size = 1)::BIGINT AS uniques
    FROM query_table(sizes_rel);

-- Average re-identification risk of tbl on qi: classes / records <= r (exact, see above).
CREATE OR REPLACE MACRO ldiv_average_risk(tbl, qi, r) AS TABLE
    WITH "ldiv__z" AS (FROM ldiv__sizes(tbl, qi,
                            ldiv__number(r, 'r', 0.0, 1.0, false, false, false)))
    FROM ldiv__threshold_of('ldiv__z', 'average_risk', r);

-- Share of sample uniques of tbl on qi: records alone in their class / records <= x.
CREATE OR REPLACE MACRO ldiv_sample_unique_share(tbl, qi, x) AS TABLE
    WITH "ldiv__z" AS (FROM ldiv__sizes(tbl, qi,
                            ldiv__number(x, 'x', 0.0, 1.0, false, false, false)))
    FROM ldiv__threshold_of('ldiv__z', 'sample_uniques', x);

-- ---------------------------------------------------------------------------------------------
-- Models against a population table (docs/risk.md §5): k-map with a population (Sweeney; ARX
-- KMap with a population) and delta-presence (Nergiz et al. 2007; ARX DPresence). The table is a
-- sample of the population table pop, which holds the QI columns at the same generalization.
-- ---------------------------------------------------------------------------------------------

-- A QI value as a key that compares as the Polars side compares (as text, NULL matching NULL):
-- 'V' || text for a value, 'N' for NULL (one-to-one, so the keys of two values are equal iff
-- the values' texts are, or both are NULL).
CREATE OR REPLACE MACRO ldiv__text_key(v) AS coalesce('V' || v::VARCHAR, 'N');

-- Per class of an extended frequency set x (ldiv__fsx, or ldiv__population_classes): cid,
-- size and pop_n, the number of records of the population table pop with the class's QI
-- values (0 when none). The population is counted by one GROUP BY on its QI columns (qi: the
-- class key's fields, any order and case); both sides' keys are text keys (ldiv__text_key),
-- joined on the column names (NATURAL JOIN), so the column order and types may differ.
CREATE OR REPLACE MACRO ldiv__population_x(x, pop, qi) AS TABLE
    WITH c AS (SELECT DISTINCT cid AS "ldiv__cid", size AS "ldiv__size", unnest(ec)
               FROM query_table(x)),
         ck AS (SELECT "ldiv__cid", "ldiv__size",
                       ldiv__text_key(COLUMNS(lambda c: ldiv__in(qi, c)))
                FROM c),
         p AS (SELECT ldiv__text_key(COLUMNS(lambda c: ldiv__in(qi, c))),
                      count(*)::BIGINT AS "ldiv__pop"
               FROM query_table(pop) WHERE (SELECT ldiv__args_ok(pop, qi, NULL))
               GROUP BY ALL)
    SELECT "ldiv__cid" AS cid, "ldiv__size" AS size, coalesce("ldiv__pop", 0)::BIGINT AS pop_n
    FROM ck NATURAL LEFT JOIN p;

-- k-map against pop: a class passes iff pop_n >= k (v = pop_n; exact integers, never unc).
CREATE OR REPLACE MACRO ldiv__k_map_population_classes_x(x, k, pop, qi) AS TABLE
    SELECT cid, size, pop_n >= k AS ok, pop_n::DOUBLE AS v, false AS unc
    FROM ldiv__population_x(x, pop, qi);

-- delta-presence against pop: v = size / pop_n (IEEE division, as ARX and the Polars side;
-- 'inf' for a class absent from pop), a class passes iff dmin <= v <= dmax.
CREATE OR REPLACE MACRO ldiv__delta_presence_classes_x(x, dmin, dmax, pop, qi) AS TABLE
    SELECT cid, size, v >= dmin AND v <= dmax AS ok, v, false AS unc
    FROM (SELECT cid, size,
                 CASE WHEN pop_n > 0 THEN size::DOUBLE / pop_n ELSE 'inf'::DOUBLE END AS v
          FROM ldiv__population_x(x, pop, qi));

-- The classes of tbl on qi as an extended-frequency-set-like relation (cid, ec, size) for the
-- public macros (no sensitive column); ok: the parameters' check, run as the scan starts.
CREATE OR REPLACE MACRO ldiv__population_classes(tbl, qi, ok) AS TABLE
    SELECT row_number() OVER () AS cid, ec, size
    FROM (SELECT struct_pack(*COLUMNS(lambda c: ldiv__in(qi, c))) AS ec, count(*) AS size
          FROM query_table(tbl)
          WHERE ok AND (SELECT ldiv__args_ok(tbl, qi, NULL))
          GROUP BY ALL);

-- k-map of tbl against the population table pop: every class matches >= k records of pop.
CREATE OR REPLACE MACRO ldiv_k_map_population(tbl, qi, pop, k) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__population_classes(tbl, qi,
                                                                   ldiv__count_ok(k, 'k'))),
         "ldiv__c" AS (FROM ldiv__k_map_population_classes_x('ldiv__x', k, pop, qi))
    FROM ldiv__result('ldiv__c', 'k_map_population', true);

-- delta-presence of tbl (a research subset of pop): every class has
-- dmin <= size / (its records in pop) <= dmax.
CREATE OR REPLACE MACRO ldiv_delta_presence(tbl, qi, pop, dmin, dmax) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__population_classes(tbl, qi,
             ldiv__number(dmin, 'delta_min', 0.0, 1.0, false, false, false)
             AND ldiv__number(dmax, 'delta_max', 0.0, 1.0, false, false, false)
             AND ldiv__need(dmin <= dmax, 'delta_min ' || dmin::VARCHAR
                            || ' must not exceed delta_max ' || dmax::VARCHAR))),
         "ldiv__c" AS (FROM ldiv__delta_presence_classes_x('ldiv__x', dmin, dmax, pop, qi))
    FROM ldiv__result('ldiv__c', 'delta_presence', false);
