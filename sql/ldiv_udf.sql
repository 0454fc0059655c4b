-- ldiv_polars: macros that call the Python UDFs registered by ldiv_polars.duckdb.install(con).
--
-- These models have no convenient closed SQL form, so their per-class kernel is a vectorized
-- (Arrow) Python function:
--   ldiv_adjusted_entropy(phi DOUBLE[], p DOUBLE[]) -> DOUBLE
--       adjusted entropy (l-diversity paper, Def 4.5, Algorithm 1) of one class with
--       don't-care counts phi and other counts p; NULL when the class holds no value outside
--       the don't-care set (such a class passes).
-- install(con) registers the UDF, then runs this file. The plain DuckDB CLI has no Python UDFs:
-- `.read` of this file succeeds there, but calling the macros fails with "Scalar Function with
-- name ldiv_adjusted_entropy does not exist".
-- Requires sql/ldiv.sql.

-- Entropy l-diversity with a don't-care set (values compared as VARCHAR): the adjusted entropy
-- of every class is >= ln(l) (1e-12 tolerance); a class with only don't-care values passes.
-- achieved = exp(smallest adjusted entropy) (NULL = infinite when every class is all don't-care).
CREATE OR REPLACE MACRO ldiv__entropy_l_dont_care_fs(f, l, dont_care) AS TABLE
    WITH x AS (SELECT ec, n,
                      -- NULL for a NULL value when Y is not empty: such rows count on neither
                      -- side, as on the Polars side (is_in gives null)
                      CASE WHEN len(dont_care) = 0 THEN false
                           ELSE list_contains(CAST(dont_care AS VARCHAR[]), CAST(sv AS VARCHAR))
                      END AS y
               FROM query_table(f)),
         c AS (SELECT ec, sum(n)::BIGINT AS size,
                      coalesce(list(n::DOUBLE) FILTER (WHERE y), []::DOUBLE[]) AS phi,
                      coalesce(list(n::DOUBLE) FILTER (WHERE NOT y), []::DOUBLE[]) AS p
               FROM x GROUP BY ec),
         st AS (SELECT size, ldiv_adjusted_entropy(phi, p) AS h FROM c),
         v AS (SELECT size, h, h IS NULL OR h >= ln(l) - 1e-12 AS ok FROM st)
    SELECT 'entropy_l_dont_care' AS model, coalesce(bool_and(ok), true) AS passed,
           exp(min(h)) AS achieved,
           count(*) FILTER (WHERE NOT ok)::BIGINT AS failing_classes,
           coalesce(sum(size) FILTER (WHERE NOT ok), 0)::BIGINT AS failing_rows
    FROM v;
CREATE OR REPLACE MACRO ldiv_entropy_l_dont_care(tbl, qi, s, l, dont_care) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs(tbl, qi, s))
    FROM ldiv__entropy_l_dont_care_fs('ldiv__f', l, dont_care);

-- Population uniqueness (ldiv_polars.risk.population_uniqueness, docs/risk.md section 1): the
-- frequency of frequencies is built here, in SQL; the estimators' final arithmetic (root
-- finding with scipy) is the Python UDF
--   ldiv_population_uniqueness_of(sizes BIGINT[], classes BIGINT[], population VARCHAR,
--                                 model VARCHAR) -> STRUCT(...)
-- population: a number of people or a region name (usa, uk, ...); model: dankar, pitman,
-- zayatz or snb. One row: model, used, fraction (NULL with a reason when no model applies),
-- uniques, population_size, sample_size, sampling_fraction, classes, sample_uniques, reason.
CREATE OR REPLACE MACRO ldiv_population_uniqueness(tbl, qi, population, model := 'dankar')
    AS TABLE
    WITH h AS (SELECT size, count(*)::BIGINT AS classes FROM ldiv__sizes(tbl, qi) GROUP BY size)
    SELECT unnest(ldiv_population_uniqueness_of(
               coalesce(list(size::BIGINT ORDER BY size), []::BIGINT[]),
               coalesce(list(classes ORDER BY size), []::BIGINT[]),
               CAST(population AS VARCHAR), model))
    FROM h;
