-- ldiv_polars: macros that call the Python UDFs registered by ldiv_polars.duckdb.install(con).
--
--   ldiv_adjusted_entropy(phi DOUBLE[], p DOUBLE[]) -> DOUBLE
--       adjusted entropy (l-diversity paper, Def 4.5, Algorithm 1) of one class with
--       don't-care counts phi and other counts p; NULL when the class holds no value outside
--       the don't-care set (such a class passes).
--   ldiv_decide(spec VARCHAR, ranks BIGINT[], counts BIGINT[], table_counts BIGINT[],
--               labels VARCHAR[]) -> STRUCT(passed BOOLEAN, value DOUBLE)
--       the exact verdict of one class whose float statistic is within rounding of the
--       threshold, by the model's own routine (ldiv_polars.models: Model.decide), and its
--       value on the verdict's side of the threshold. spec: the model as JSON; ranks: the
--       class's values as 0-based ranks of the table's domain (ascending, NULL first);
--       table_counts / labels: the domain's counts and values (as VARCHAR), in that order.
--   ldiv_k_map_k(k BIGINT, records BIGINT, population VARCHAR, estimator VARCHAR,
--                significance DOUBLE) -> BIGINT
--       ARX's k' of the estimated k-map (ldiv_polars.models.KMap.derived_k) of a table of
--       `records` records against a population of `population` (a number or a region).
-- install(con) registers the UDFs, then runs this file. The plain DuckDB CLI has no Python
-- UDFs: `.read` of this file succeeds there, but calling the macros fails with "Scalar Function
-- with name ldiv_... does not exist" (without this file, the model macros of ldiv.sql report
-- the classes they cannot decide instead: undecided_classes).
-- Requires sql/ldiv.sql.

-- The exact step (replaces ldiv.sql's, which leaves undecided classes as they are): the
-- classes of cl marked unc get the exact verdict and value of ldiv_decide; only their rows of
-- x are read into lists (a small table).
CREATE OR REPLACE MACRO ldiv__decide_x(cl, x, spec) AS TABLE
    WITH "ldiv__u" AS (SELECT cid FROM query_table(cl) WHERE unc),
         "ldiv__r" AS (SELECT cid, list(drk - 1 ORDER BY drk) AS ranks,
                              list(n ORDER BY drk) AS counts
                       FROM query_table(x) WHERE cid IN (SELECT cid FROM "ldiv__u")
                       GROUP BY cid),
         "ldiv__dom" AS (SELECT list(tn ORDER BY drk) AS tns,
                                list(CAST(sv AS VARCHAR) ORDER BY drk) AS labels
                         FROM (SELECT DISTINCT drk, tn, sv FROM query_table(x)
                               WHERE EXISTS (SELECT 1 FROM "ldiv__u"))),
         "ldiv__e" AS (SELECT cid, ldiv_decide(spec, ranks, counts, tns, labels) AS e
                       FROM "ldiv__r", "ldiv__dom")
    SELECT c.cid, c.size, coalesce(e.e.passed, c.ok) AS ok, coalesce(e.e.value, c.v) AS v,
           c.unc AND e.e IS NULL AS unc
    FROM query_table(cl) c LEFT JOIN "ldiv__e" e USING (cid);

-- Entropy l-diversity with a don't-care set (values compared as VARCHAR): the adjusted entropy
-- of every class is >= ln(l) (1e-12 tolerance); a class with only don't-care values passes.
-- achieved = exp(smallest adjusted entropy) (NULL = infinite when every class is all don't-care).
CREATE OR REPLACE MACRO ldiv__entropy_l_dont_care_classes_x(x, l, dont_care) AS TABLE
    WITH r AS (SELECT cid, size, n,
                      -- a NULL value is a value outside Y (Y holds no NULL), as on the
                      -- Polars side (ldiv_polars.models.l_diversity.in_set)
                      CASE WHEN len(dont_care) = 0 THEN false
                           ELSE coalesce(list_contains(CAST(dont_care AS VARCHAR[]),
                                                       CAST(sv AS VARCHAR)), false)
                      END AS y
               FROM query_table(x)),
         c AS (SELECT cid, any_value(size) AS size,
                      coalesce(list(n::DOUBLE) FILTER (WHERE y), []::DOUBLE[]) AS phi,
                      coalesce(list(n::DOUBLE) FILTER (WHERE NOT y), []::DOUBLE[]) AS p
               FROM r GROUP BY cid),
         st AS (SELECT cid, size, ldiv_adjusted_entropy(phi, p) AS h FROM c)
    SELECT cid, size, h IS NULL OR h >= ln(l::DOUBLE) - 1e-12 AS ok,
           coalesce(exp(h), 'inf'::DOUBLE) AS v, false AS unc
    FROM st;
CREATE OR REPLACE MACRO ldiv__entropy_l_dont_care_x(x, l, dont_care, spec := NULL) AS TABLE
    WITH "ldiv__c" AS (FROM ldiv__entropy_l_dont_care_classes_x(x, l, dont_care))
    FROM ldiv__result('ldiv__c', 'entropy_l_dont_care', true);
CREATE OR REPLACE MACRO ldiv__entropy_l_dont_care_fs(f, l, dont_care) AS TABLE
    WITH "ldiv__x" AS MATERIALIZED (FROM ldiv__fsx(f))
    FROM ldiv__entropy_l_dont_care_x('ldiv__x', l, dont_care);
CREATE OR REPLACE MACRO ldiv_entropy_l_dont_care(tbl, qi, s, l, dont_care) AS TABLE
    WITH "ldiv__f" AS MATERIALIZED (FROM ldiv__fs_checked(tbl, qi, s, ldiv__l_ok(l)))
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

-- Population uniques as a threshold (the model PopulationUniques, docs/risk.md §5): one row,
-- passed = the estimated share of population uniques <= max_fraction; an empty table passes;
-- an estimate that is not available (fraction NULL, with its reason) fails, as in Python.
-- The estimate is the UDF's (Pitman and SNB solve nonlinear equations: scipy, not SQL), the
-- comparison plain SQL on the doubles, the same comparison as the model's.
CREATE OR REPLACE MACRO ldiv_population_uniques(tbl, qi, population, max_fraction,
                                                model := 'dankar') AS TABLE
    SELECT 'population_uniques' AS model,
           sample_size = 0 OR coalesce(fraction <= max_fraction, false) AS passed,
           fraction AS achieved,
           NULL::BIGINT AS failing_classes,
           NULL::BIGINT AS failing_rows,
           0::BIGINT AS undecided_classes,
           reason
    FROM ldiv_population_uniqueness(tbl, qi, population, model := model);

-- k-map estimated from the sample (KMap; ARX's KMap with a Poisson or zero-truncated Poisson
-- CellSizeEstimator): every class has >= k' records, k' = ldiv_k_map_k(...) derived by the
-- model (the Poisson quantile loop of ARX, in Python) from the table's records and the
-- population (a number or a region name). achieved = smallest class size; derived_k: k'.
CREATE OR REPLACE MACRO ldiv_k_map(tbl, qi, k, population, estimator := 'poisson',
                                   significance := 0.01) AS TABLE
    WITH "ldiv__z" AS MATERIALIZED (FROM ldiv__sizes(tbl, qi, ldiv__count_ok(k, 'k'))),
         "ldiv__k" AS (SELECT ldiv_k_map_k(k, coalesce(sum(size), 0)::BIGINT,
                                           population::VARCHAR, estimator,
                                           significance) AS kk
                       FROM "ldiv__z"),
         "ldiv__c" AS (SELECT 0 AS cid, size, size >= kk AS ok, size::DOUBLE AS v,
                              false AS unc
                       FROM "ldiv__z", "ldiv__k")
    SELECT r.*, (SELECT kk FROM "ldiv__k") AS derived_k
    FROM ldiv__result('ldiv__c', 'k_map', true) r;
