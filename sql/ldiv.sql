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
-- pasted into SQL, so any column name works (spaces, quotes, reserved words, unicode).
-- The only pass over the rows is one GROUP BY qi..., s (the frequency set); everything else
-- reads that small relation. NULL is a value of its own (GROUP BY groups NULLs together);
-- the Python API raises on NULLs unless nulls='value'.
--
-- Internal macros start with ldiv__ (two underscores); their "f" argument names a relation
-- (ec STRUCT, sv, n) = class key, sensitive value, count.

-- ---------------------------------------------------------------------------------------------
-- Frequency set and equivalence classes
-- ---------------------------------------------------------------------------------------------

-- Frequency set: one row per (quasi-identifier vector, sensitive value) with its count n.
-- Columns: the QI columns (in table order), the sensitive column, n.
CREATE OR REPLACE MACRO ldiv_frequency_set(tbl, qi, s) AS TABLE
    SELECT COLUMNS(lambda c: list_contains(qi, c)), COLUMNS(lambda c: c = s), count(*) AS n
    FROM query_table(tbl)
    GROUP BY ALL;

-- Internal frequency set: class key packed into one struct (so that no QI name can clash with
-- the helper columns), sensitive value renamed sv.
CREATE OR REPLACE MACRO ldiv__fs(tbl, qi, s) AS TABLE
    SELECT struct_pack(*COLUMNS(lambda c: list_contains(qi, c))) AS ec,
           COLUMNS(lambda c: c = s) AS sv,
           "ldiv__n" AS n
    FROM (SELECT COLUMNS(lambda c: list_contains(qi, c) OR c = s), count(*) AS "ldiv__n"
          FROM query_table(tbl)
          GROUP BY ALL);

-- Class sizes only (no sensitive column): one row per equivalence class.
CREATE OR REPLACE MACRO ldiv__sizes(tbl, qi) AS TABLE
    SELECT "ldiv__n" AS size
    FROM (SELECT COLUMNS(lambda c: list_contains(qi, c)), count(*) AS "ldiv__n"
          FROM query_table(tbl)
          GROUP BY ALL);

-- TRUE for numeric and temporal DuckDB types: t-closeness then uses the ordered distance
-- (as the Polars side does for numeric and temporal dtypes).
CREATE OR REPLACE MACRO ldiv_is_ordered(x) AS
    typeof(x) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT',
                  'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT', 'FLOAT', 'DOUBLE',
                  'DATE', 'TIME', 'TIMESTAMP', 'TIMESTAMP_S', 'TIMESTAMP_MS', 'TIMESTAMP_NS',
                  'TIMESTAMP WITH TIME ZONE', 'TIME WITH TIME ZONE', 'INTERVAL')
    OR typeof(x) LIKE 'DECIMAL%';

-- Sensitive-value domain of the whole table: value, table count tn, rank drk in ascending
-- order (NULL first, as Polars sorts), cumulative table count ctn.
CREATE OR REPLACE MACRO ldiv__dom(f) AS TABLE
    SELECT sv, tn,
           row_number() OVER (ORDER BY sv ASC NULLS FIRST) AS drk,
           sum(tn) OVER (ORDER BY sv ASC NULLS FIRST
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)::BIGINT AS ctn
    FROM (SELECT sv, sum(n)::BIGINT AS tn FROM query_table(f) GROUP BY sv);

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
--   beta (max (p-q)/q over p > q, 0 if none).
CREATE OR REPLACE MACRO ldiv__class_stats_x(x, l) AS TABLE
    SELECT cid, size, sv_ordered, distinct_values, entropy, max_count,
           CASE WHEN l <= 1 THEN size
                WHEN distinct_values < l THEN NULL
                WHEN l = 2 THEN size - max_count
                ELSE size - list_sum(top) END::BIGINT AS tail,
           max_count / size AS alpha, emd_equal, delta_present, missing_values, beta
    FROM (SELECT cid, size,
                 bool_or(ldiv_is_ordered(sv)) AS sv_ordered,
                 count(*)::BIGINT AS distinct_values,
                 -sum((n / size) * ln(n / size)) AS entropy,
                 max(n) AS max_count,
                 max(n, CAST(greatest(l - 1, 1) AS BIGINT)) AS top,
                 0.5 * (sum(abs(n / size - tn / total))
                        + (any_value(total) - sum(tn)) / any_value(total)) AS emd_equal,
                 max(abs(ln((n / size) / (tn / total)))) AS delta_present,
                 (any_value(m) - count(*))::BIGINT AS missing_values,
                 coalesce(max((n / size - tn / total) / (tn / total))
                          FILTER (WHERE n / size > tn / total), 0.0) AS beta
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
-- (empty result otherwise). x is an extended frequency set (ldiv__fsx).
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
    SELECT cid, any_value(size) AS size,
           CASE WHEN any_value(m) <= 1 THEN 0.0
                ELSE sum(part) / (any_value(m) - 1) END AS emd_ordered
    FROM v
    GROUP BY cid;

-- One row per equivalence class: the QI values, then size, distinct_values, entropy,
-- l_entropy = exp(entropy), max_count, counts (descending), tail (r_l + ... + r_m), alpha,
-- emd_equal, delta_present, missing_values, beta.
CREATE OR REPLACE MACRO ldiv_classes(tbl, qi, s, l := 2) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s)),
         "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx('ldiv__f')),
         cn AS (SELECT cid, any_value(ec) AS ec, list_sort(list(n), 'DESC') AS counts
                FROM "ldiv__x" GROUP BY cid)
    SELECT unnest(ec), size, distinct_values, entropy, exp(entropy) AS l_entropy, max_count,
           counts, tail, alpha, emd_equal, delta_present, missing_values, beta
    FROM ldiv__class_stats_x('ldiv__x', l) JOIN cn USING (cid)
    ORDER BY size, cid;

-- ---------------------------------------------------------------------------------------------
-- One macro per model. Result columns (one row):
--   model, passed, achieved, failing_classes, failing_rows
-- model is the name used by the Polars side (k_anonymity, distinct_l, ...). achieved is the
-- table's best parameter: smallest k, smallest distinct count, exp of the smallest entropy,
-- largest r1/tail, largest alpha, largest EMD, largest |ln(p/q)|, largest (p-q)/q ...; NULL
-- where the Polars side reports infinity (e.g. recursive (c,l) with too few values).
-- Each public macro ldiv_<model>(tbl, qi, s, ...) has a twin ldiv__<model>_fs(f, ...) reading a
-- frequency set relation f (ec, sv, n), so that several models share one pass over the rows,
-- and ldiv__<model>_x(x, ...) reading an extended frequency set x (ldiv__fsx), so that they
-- also share the per-class work (the extended relation must be materialized once: class ids).
-- ---------------------------------------------------------------------------------------------

-- Class sizes of a frequency set relation.
CREATE OR REPLACE MACRO ldiv__sizes_fs(f) AS TABLE
    SELECT sum(n)::BIGINT AS size FROM query_table(f) GROUP BY ec;

-- k-anonymity: every class has at least k rows. achieved = smallest class size.
CREATE OR REPLACE MACRO ldiv__k_anonymity_of(sizes_rel, k) AS TABLE
    SELECT 'k_anonymity' AS model,
           coalesce(bool_and(size >= k), true) AS passed,
           min(size)::DOUBLE AS achieved,
           count(*) FILTER (WHERE size < k)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE size < k), 0)::BIGINT AS failing_rows
    FROM query_table(sizes_rel);
CREATE OR REPLACE MACRO ldiv__k_anonymity_fs(f, k) AS TABLE
    WITH "ldiv__z" AS (FROM ldiv__sizes_fs(f)) FROM ldiv__k_anonymity_of('ldiv__z', k);
CREATE OR REPLACE MACRO ldiv__k_anonymity_x(x, k) AS TABLE
    WITH "ldiv__z" AS (SELECT size FROM (SELECT DISTINCT cid, size FROM query_table(x)))
    FROM ldiv__k_anonymity_of('ldiv__z', k);
CREATE OR REPLACE MACRO ldiv_k_anonymity(tbl, qi, k) AS TABLE
    WITH "ldiv__z" AS (FROM ldiv__sizes(tbl, qi)) FROM ldiv__k_anonymity_of('ldiv__z', k);

-- Distinct l-diversity: at least l distinct sensitive values per class.
CREATE OR REPLACE MACRO ldiv__distinct_l_x(x, l) AS TABLE
    WITH st AS (SELECT size, distinct_values AS dv, distinct_values >= l AS ok
                FROM ldiv__class_stats_x(x, 1))
    SELECT 'distinct_l' AS model, coalesce(bool_and(ok), true) AS passed,
           min(dv)::DOUBLE AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM st;
CREATE OR REPLACE MACRO ldiv__distinct_l_fs(f, l) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__distinct_l_x('ldiv__x', l);
CREATE OR REPLACE MACRO ldiv_distinct_l(tbl, qi, s, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__distinct_l_fs('ldiv__f', l);

-- Entropy l-diversity: -sum p ln p >= ln(l) in every class (1e-12 tolerance so that an exactly
-- uniform class at ln l passes). achieved = exp(smallest class entropy).
CREATE OR REPLACE MACRO ldiv__entropy_l_x(x, l) AS TABLE
    WITH st AS (SELECT size, entropy AS h, entropy >= ln(l) - 1e-12 AS ok
                FROM ldiv__class_stats_x(x, 1))
    SELECT 'entropy_l' AS model, coalesce(bool_and(ok), true) AS passed,
           exp(min(h)) AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM st;
CREATE OR REPLACE MACRO ldiv__entropy_l_fs(f, l) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__entropy_l_x('ldiv__x', l);
CREATE OR REPLACE MACRO ldiv_entropy_l(tbl, qi, s, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__entropy_l_fs('ldiv__f', l);

-- Recursive (c,l)-diversity: r1 < c * (r_l + ... + r_m) (strict); a class with fewer than l
-- distinct values fails; l = 1 always passes. achieved = largest r1 / (r_l + ... + r_m)
-- (NULL = infinite when some class has fewer than l distinct values; 0 for l = 1: no c is
-- needed).
CREATE OR REPLACE MACRO ldiv__recursive_cl_x(x, c, l) AS TABLE
    WITH st AS (SELECT size, max_count AS r1, tail AS tl,
                       l <= 1 OR (tail IS NOT NULL AND max_count < c * tail) AS ok
                FROM ldiv__class_stats_x(x, l))
    SELECT 'recursive_cl' AS model, coalesce(bool_and(ok), true) AS passed,
           CASE WHEN count(*) = 0 THEN NULL
                WHEN l <= 1 THEN 0.0  -- every class passes whatever c
                WHEN bool_and(tl IS NOT NULL) THEN max(r1 / tl) END AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM st;
CREATE OR REPLACE MACRO ldiv__recursive_cl_fs(f, c, l) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__recursive_cl_x('ldiv__x', c, l);
CREATE OR REPLACE MACRO ldiv_recursive_cl(tbl, qi, s, c, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__recursive_cl_fs('ldiv__f', c, l);

-- (alpha,k)-anonymity: size >= k and max n <= alpha * size in every class (with the Polars
-- side's 1e-15 relative slack so that alpha given as a decimal fraction is exact).
-- achieved = largest n/size; achieved_k = smallest class size.
CREATE OR REPLACE MACRO ldiv__alpha_k_x(x, alpha, k) AS TABLE
    WITH st AS (SELECT size, max_count / size AS a,
                       size >= k AND max_count <= alpha * size * (1 + 1e-15) AS ok
                FROM ldiv__class_stats_x(x, 1))
    SELECT 'alpha_k' AS model, coalesce(bool_and(ok), true) AS passed,
           max(a) AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows,
           min(size)::BIGINT AS achieved_k
    FROM st;
CREATE OR REPLACE MACRO ldiv__alpha_k_fs(f, alpha, k) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__alpha_k_x('ldiv__x', alpha, k);
CREATE OR REPLACE MACRO ldiv_alpha_k(tbl, qi, s, alpha, k) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__alpha_k_fs('ldiv__f', alpha, k);

-- t-closeness: EMD(class, table) <= t in every class. distance: 'equal' (0.5 * sum |p - q|),
-- 'ordered' (values sorted ascending, (1/(m-1)) sum |P_i - Q_i|) or 'auto' (ordered for a
-- numeric or temporal sensitive column, equal otherwise). achieved = largest EMD.
-- The hierarchical distance: ldiv_t_closeness_hierarchical below.
CREATE OR REPLACE MACRO ldiv__t_closeness_x(x, t, distance) AS TABLE
    WITH st AS (SELECT size, emd_equal AS emd FROM ldiv__class_stats_x(x, 1)
                WHERE NOT (distance = 'ordered' OR (distance = 'auto' AND sv_ordered))
                UNION ALL
                SELECT size, emd_ordered AS emd FROM ldiv__emd_ordered_x(x, distance)),
         v AS (SELECT size, emd, emd <= t AS ok FROM st)
    SELECT 't_closeness' AS model, coalesce(bool_and(ok), true) AS passed,
           max(emd) AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM v
    WHERE distance IN ('auto', 'equal', 'ordered')
       OR error('distance must be ''auto'', ''equal'' or ''ordered''');
CREATE OR REPLACE MACRO ldiv__t_closeness_fs(f, t, distance) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__t_closeness_x('ldiv__x', t, distance);
CREATE OR REPLACE MACRO ldiv_t_closeness(tbl, qi, s, t, distance := 'auto') AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__t_closeness_fs('ldiv__f', t, distance);

-- Delta-disclosure: |ln(p/q)| < delta for every value present in a class, and no value of the
-- table missing from a class. achieved = largest |ln(p/q)| (NULL = infinite when a class lacks
-- a value of the table).
CREATE OR REPLACE MACRO ldiv__delta_disclosure_x(x, delta) AS TABLE
    WITH st AS (SELECT size, missing_values AS mv, delta_present AS dp,
                       missing_values = 0 AND delta_present < delta AS ok
                FROM ldiv__class_stats_x(x, 1))
    SELECT 'delta_disclosure' AS model, coalesce(bool_and(ok), true) AS passed,
           CASE WHEN coalesce(max(mv), 0) = 0 THEN max(dp) END AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM st;
CREATE OR REPLACE MACRO ldiv__delta_disclosure_fs(f, delta) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__delta_disclosure_x('ldiv__x', delta);
CREATE OR REPLACE MACRO ldiv_delta_disclosure(tbl, qi, s, delta) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__delta_disclosure_fs('ldiv__f', delta);

-- Beta-likeness: for every value with p > q in a class, (p - q)/q <= beta (basic) or
-- <= min(beta, -ln q) (enhanced). achieved = largest (p - q)/q over p > q (0 if none);
-- enhanced: NULL (infinite) when some gain exceeds its own cap -ln q, whatever beta.
CREATE OR REPLACE MACRO ldiv__beta_likeness_x(x, beta, enhanced) AS TABLE
    WITH r AS (SELECT cid, size, n / size AS p, tn / total AS q FROM query_table(x)),
         st AS (SELECT cid, any_value(size) AS size,
                       coalesce(max((p - q) / q) FILTER (WHERE p > q), 0.0) AS gain,
                       coalesce(max(((p - q) / q) / (-ln(q))) FILTER (WHERE p > q), 0.0) AS cap,
                       coalesce(bool_and((p - q) / q <= CASE WHEN enhanced
                                                              THEN least(beta, -ln(q))
                                                              ELSE beta END)
                                FILTER (WHERE p > q), true) AS ok
                FROM r GROUP BY cid)
    SELECT 'beta_likeness' AS model,
           coalesce(bool_and(ok), true) AS passed,
           CASE WHEN enhanced AND max(cap) > 1.0 THEN NULL
                ELSE coalesce(max(gain), 0.0) END AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM st;
CREATE OR REPLACE MACRO ldiv__beta_likeness_fs(f, beta, enhanced) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__beta_likeness_x('ldiv__x', beta, enhanced);
CREATE OR REPLACE MACRO ldiv_beta_likeness(tbl, qi, s, beta, enhanced := false) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__beta_likeness_fs('ldiv__f', beta, enhanced);

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
    SELECT cid, size, r_y, tail, w_pct,
           CASE WHEN l <= 1 OR r_y = 0 THEN 0.0 WHEN tail > 0 THEN r_y / tail END AS v,
           (l <= 1 OR r_y = 0 OR r_y < c * tail) AND w_pct >= c2 AS ok
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
                             CASE WHEN len(dont_care) = 0 THEN true
                                  ELSE NOT list_contains(CAST(dont_care AS VARCHAR[]),
                                                         CAST(sv AS VARCHAR)) END AS ny,
                             coalesce(list_contains(CAST(w_values AS VARCHAR[]),
                                                    CAST(sv AS VARCHAR)), false) AS inw
                      FROM query_table(x))
                GROUP BY cid, size));

CREATE OR REPLACE MACRO ldiv__pd_result_x(x, model_name, c, l, dont_care, w_values, c2) AS TABLE
    SELECT model_name AS model, coalesce(bool_and(ok), true) AS passed,
           CASE WHEN bool_and(v IS NOT NULL) THEN max(v) END AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM ldiv__pd_classes_x(x, c, l, dont_care, w_values, c2);

CREATE OR REPLACE MACRO ldiv__pd_recursive_cl_x(x, c, l, dont_care) AS TABLE
    FROM ldiv__pd_result_x(x, 'pd_recursive_cl', c, l, dont_care, []::VARCHAR[], 0.0);
CREATE OR REPLACE MACRO ldiv__pd_recursive_cl_fs(f, c, l, dont_care) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__pd_result_x('ldiv__x', 'pd_recursive_cl', c, l, dont_care, []::VARCHAR[], 0.0);
CREATE OR REPLACE MACRO ldiv_pd_recursive_cl(tbl, qi, s, c, l, dont_care := []) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__pd_recursive_cl_fs('ldiv__f', c, l, dont_care);

CREATE OR REPLACE MACRO ldiv__npd_recursive_cl_x(x, c1, c2, l, dont_care, w_values) AS TABLE
    FROM ldiv__pd_result_x(x, 'npd_recursive_cl', c1, l, dont_care, w_values, c2);
CREATE OR REPLACE MACRO ldiv__npd_recursive_cl_fs(f, c1, c2, l, dont_care, w_values) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__pd_result_x('ldiv__x', 'npd_recursive_cl', c1, l, dont_care, w_values, c2);
CREATE OR REPLACE MACRO ldiv_npd_recursive_cl(tbl, qi, s, c1, c2, l, dont_care := [],
                                              w_values := []) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__npd_recursive_cl_fs('ldiv__f', c1, c2, l, dont_care, w_values);

-- Prosecutor re-identification risk: 1/size per class. passed = largest risk <= max_risk.
-- achieved = largest risk = 1/k; average_risk = classes / rows.
CREATE OR REPLACE MACRO ldiv__prosecutor_risk_of(sizes_rel, max_risk) AS TABLE
    SELECT 'prosecutor_risk' AS model,
           coalesce(bool_and(1.0 / size <= max_risk), true) AS passed,
           1.0 / min(size) AS achieved,
           count(*) FILTER (WHERE 1.0 / size > max_risk)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE 1.0 / size > max_risk), 0)::BIGINT AS failing_rows,
           count(*) / sum(size) AS average_risk
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
           NULL::BIGINT AS failing_rows
    FROM ldiv__sizes(tbl, qi);

-- Sample uniques: rows alone in their class. passed = uniques <= max_uniques.
CREATE OR REPLACE MACRO ldiv_sample_uniques(tbl, qi, max_uniques := 0) AS TABLE
    SELECT 'sample_uniques' AS model,
           count(*) FILTER (WHERE size = 1) <= max_uniques AS passed,
           count(*) FILTER (WHERE size = 1)::DOUBLE AS achieved,
           count(*) FILTER (WHERE size = 1)::BIGINT AS failing_classes,
           count(*) FILTER (WHERE size = 1)::BIGINT AS failing_rows,
           count(*) FILTER (WHERE size = 1) / sum(size) AS fraction
    FROM ldiv__sizes(tbl, qi);

-- ---------------------------------------------------------------------------------------------
-- Violations and the summary
-- ---------------------------------------------------------------------------------------------

-- Classes that violate any of the requested models (NULL = not checked), with the reasons.
-- Columns: the QI values, size, distinct_values, reasons (list of strings).
-- c checks recursive (c, recursive_l); t uses distance ('auto', 'equal', 'ordered').
CREATE OR REPLACE MACRO ldiv_violations(tbl, qi, s, k := NULL, l := NULL, entropy_l := NULL,
                                        c := NULL, recursive_l := 2, alpha := NULL,
                                        t := NULL, distance := 'auto', delta := NULL,
                                        beta := NULL, enhanced := false) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s)),
         "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx('ldiv__f')),
         b AS (SELECT cid,
                      coalesce(max((n / size - tn / total) / (tn / total))
                               FILTER (WHERE n / size > tn / total
                                         AND (n / size - tn / total) / (tn / total)
                                             > CASE WHEN enhanced
                                                    THEN least(beta, -ln(tn / total))
                                                    ELSE beta END), 0.0) AS beta_bad
               FROM "ldiv__x" WHERE beta IS NOT NULL GROUP BY cid),
         ecs AS (SELECT cid, any_value(ec) AS ec FROM "ldiv__x" GROUP BY cid),
         st AS (SELECT st.*, ecs.ec,
                       CASE WHEN distance = 'ordered' OR (distance = 'auto' AND sv_ordered)
                            THEN coalesce(eo.emd_ordered, 0.0) ELSE emd_equal END AS emd,
                       coalesce(b.beta_bad, 0.0) AS beta_bad
                FROM ldiv__class_stats_x('ldiv__x', recursive_l) st
                JOIN ecs USING (cid)
                LEFT JOIN ldiv__emd_ordered_x('ldiv__x',
                                            CASE WHEN t IS NULL THEN 'none' ELSE distance END) eo
                       USING (cid, size)
                LEFT JOIN b USING (cid)),
         r AS (SELECT ec, size, distinct_values, list_filter([
                 CASE WHEN size < k THEN printf('k: size %d < %d', size, k) END,
                 CASE WHEN distinct_values < l
                      THEN printf('distinct-l: %d distinct value(s) < %s', distinct_values,
                                  l::VARCHAR) END,
                 CASE WHEN entropy < ln(entropy_l) - 1e-12
                      THEN printf('entropy-l: exp(entropy) %s < %s', round(exp(entropy), 6)::VARCHAR,
                                  entropy_l::VARCHAR) END,
                 CASE WHEN c IS NOT NULL AND recursive_l > 1 AND tail IS NULL
                      THEN printf('recursive-(c,l): %d distinct value(s) < l = %d',
                                  distinct_values, recursive_l)
                      WHEN c IS NOT NULL AND recursive_l > 1 AND NOT (max_count < c * tail)
                      THEN printf('recursive-(c,l): r1 = %d >= c * tail = %s * %d',
                                  max_count, c::VARCHAR, tail) END,
                 CASE WHEN max_count > alpha * size * (1 + 1e-15)
                      THEN printf('alpha: max n/size %s > %s', round(st.alpha, 6)::VARCHAR,
                                  alpha::VARCHAR) END,
                 CASE WHEN emd > t THEN printf('t-closeness: EMD %s > %s', round(emd, 6)::VARCHAR,
                                               t::VARCHAR) END,
                 CASE WHEN delta IS NOT NULL AND missing_values > 0
                      THEN printf('delta-disclosure: %d value(s) of the table missing',
                                  missing_values)
                      WHEN delta_present >= delta
                      THEN printf('delta-disclosure: max |ln(p/q)| %s >= %s',
                                  round(delta_present, 6)::VARCHAR, delta::VARCHAR) END,
                 CASE WHEN beta_bad > 0
                      THEN printf('beta-likeness: (p-q)/q %s > bound', round(beta_bad, 6)::VARCHAR)
                 END
               ], lambda x: x IS NOT NULL) AS reasons
               FROM st)
    SELECT unnest(ec), size, distinct_values, reasons
    FROM r
    WHERE len(reasons) > 0
    ORDER BY size, distinct_values;

-- The summary of a frequency set relation f (see ldiv_summary).
CREATE OR REPLACE MACRO ldiv__summary_fs(f, l) AS TABLE
    WITH "ldiv__x" AS NOT MATERIALIZED (FROM ldiv__fsx(f)),
         st AS (FROM ldiv__class_stats_x('ldiv__x', l)),
         eo AS (FROM ldiv__emd_ordered_x('ldiv__x', 'auto'))
    SELECT coalesce(sum(size), 0)::BIGINT AS rows,
           count(*)::BIGINT AS classes,
           min(size)::BIGINT AS k,
           min(distinct_values)::BIGINT AS l_distinct,
           exp(min(entropy)) AS l_entropy,
           CASE WHEN count(*) = 0 THEN NULL
                WHEN l <= 1 THEN 0.0
                WHEN bool_and(tail IS NOT NULL) THEN max(max_count / tail) END AS recursive_c,
           max(max_count / size) AS alpha,
           CASE WHEN bool_or(sv_ordered) THEN (SELECT max(emd_ordered) FROM eo)
                ELSE max(emd_equal) END AS t,
           CASE WHEN coalesce(max(missing_values), 0) = 0 THEN max(delta_present) END AS delta,
           1.0 / min(size) AS prosecutor_max,
           count(*) / sum(size) AS prosecutor_avg,
           count(*) FILTER (WHERE size = 1)::BIGINT AS sample_uniques
    FROM st;

-- One row with the keys of ldiv_polars.summary (same names, same semantics):
--   rows, classes, k, l_distinct, l_entropy, recursive_c, alpha, t, delta,
--   prosecutor_max, prosecutor_avg, sample_uniques
-- l is the recursive-(c,l) tail start; t uses the ordered distance for a numeric or temporal
-- sensitive column and the equal distance otherwise; recursive_c and delta are NULL where
-- infinite; on an empty table everything but rows, classes, sample_uniques (0) is NULL.
CREATE OR REPLACE MACRO ldiv_summary(tbl, qi, s, l) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__summary_fs('ldiv__f', l);

-- ---------------------------------------------------------------------------------------------
-- Hierarchical t-closeness (closed form over a hierarchy relation)
-- ---------------------------------------------------------------------------------------------
-- hier names a relation with columns leaf (the sensitive value as VARCHAR) and path (VARCHAR[]:
-- the ancestors of the leaf from level 1 up to the root; all paths of the same length H).
-- EMD (Li et al. 2007) = sum over inner nodes N at level j of (j / H) * min(pos_extra(N),
-- neg_extra(N)), extra(child) = sum over the child's leaves of p - q. Every value of the
-- sensitive column must be a leaf (ldiv_polars.duckdb.register_hierarchy checks that).
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
         lv AS (SELECT g.cid, g.e, j, h.height,
                       h.path[j] AS node,
                       CASE WHEN j = 1 THEN g.leaf ELSE h.path[j - 1] END AS child
                FROM g JOIN h ON h.leaf = g.leaf,
                     range(1, h.height + 1) AS r(j)),
         ch AS (SELECT cid, j, height, node, child, sum(e) AS extra
                FROM lv GROUP BY cid, j, height, node, child),
         nd AS (SELECT cid, j, height, node,
                       sum(greatest(extra, 0.0)) AS pos, sum(greatest(-extra, 0.0)) AS neg
                FROM ch GROUP BY cid, j, height, node)
    SELECT c.cid, greatest(coalesce(sum(j / height * least(pos, neg)), 0.0), 0.0)
               AS emd_hierarchical
    FROM c LEFT JOIN nd USING (cid)
    GROUP BY c.cid;

CREATE OR REPLACE MACRO ldiv__t_closeness_hierarchical_x(x, t, hier) AS TABLE
    WITH st AS (SELECT size, emd_hierarchical AS emd, emd_hierarchical <= t AS ok
                FROM ldiv__class_stats_x(x, 1)
                JOIN ldiv__emd_hierarchical_x(x, hier) USING (cid))
    SELECT 't_closeness' AS model, coalesce(bool_and(ok), true) AS passed,
           max(emd) AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM st;
CREATE OR REPLACE MACRO ldiv__t_closeness_hierarchical_fs(f, t, hier) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__t_closeness_hierarchical_x('ldiv__x', t, hier);
CREATE OR REPLACE MACRO ldiv_t_closeness_hierarchical(tbl, qi, s, t, hier) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__t_closeness_hierarchical_fs('ldiv__f', t, hier);

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
