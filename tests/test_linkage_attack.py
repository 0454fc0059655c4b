"""Linkage attack: the paper's Table 2, class-map kinds, and post_linkage against a pure-Python
brute force on random releases."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.linkage.attack import link, post_linkage
from ldiv_polars.linkage.examples import table1_raw, table2_releases
from ldiv_polars.linkage.release import Release, ReleaseError
from ldiv_polars.models import DistinctLDiversity
from ldiv_polars.models.verdict import check


def test_table2_reveals_cervical_cancer():
    rels = table2_releases()
    for r in rels:  # each release is 2-diverse (foundation checker on the count table)
        res = r.check(2)
        assert res.passed and res.achieved == 2
    lk = link(rels, {"gender": "Female", "postal": "560010"})
    assert lk.counts.rows() == [("Cervical cancer", 1)]
    assert lk.diversity == 1 and lk.covered
    assert lk.classes == [{"gender": "Female", "postal": "560010"}] * 2
    d = lk.to_dict()
    assert d["linkage"] == [{"s": "Cervical cancer", "n": 1}] and d["diversity"] == 1


def test_table2_other_targets_and_post_linkage():
    rels = table2_releases()
    male = link(rels, {"gender": "Male", "postal": "560012"})
    assert male.diversity == 0 and not male.covered and male.classes[1] is None
    post = post_linkage(rels, table1_raw())
    assert post.l_t == 1
    assert post.collapsed.select("gender", "postal", "revealed").rows() == [
        ("Female", "560010", "Cervical cancer")]
    assert post.uncovered == 2  # the two male vectors are not in D2
    res = post.check(2)  # the post-linkage dataset is not 2-diverse (foundation checker)
    assert not res.passed and res.achieved == 1
    assert post.to_dict() == {"l_t": 1, "collapsed": 1, "targets": 3, "uncovered": 2,
                              "post_linkage_classes": 1}


def test_table1_anonymized_is_2_diverse_and_2_anonymous():
    raw = table1_raw().with_columns(
        pl.when(pl.col("gender") == "Male").then(pl.lit("56001*")).otherwise(pl.col("postal"))
        .alias("postal"))
    res = check(raw, ["gender", "postal"], "disease", [DistinctLDiversity(2)])
    assert res.passed


def test_interval_and_hierarchy_releases_agree_with_mapping():
    raw = pl.DataFrame({"age": [21, 25, 27, 33, 35, 38, 41, 44],
                        "s": ["a", "b", "c", "a", "b", "a", "c", "c"]})
    # release 1: intervals of width 10 on age
    t1 = raw.with_columns((pl.col("age") // 10 * 10).alias("age"))
    r1 = Release.from_intervals(t1, "age", "s", [(20, 29), (30, 39), (40, 49)],
                                labels=[20, 30, 40])
    # release 2: a hierarchy, level 1 = [20-34] / [35-49]
    leaves = list(range(20, 50))
    h = Hierarchy([[str(a), "20-34" if a < 35 else "35-49", "*"] for a in leaves])
    t2 = raw.with_columns(pl.when(pl.col("age") < 35).then(pl.lit("20-34"))
                          .otherwise(pl.lit("35-49")).alias("age"))
    r2 = Release.from_hierarchy(t2, "s", {"age": h}, {"age": 1})
    # the same two releases through explicit mappings
    m1 = pl.DataFrame({"age": leaves, "age_class": [a // 10 * 10 for a in leaves]})
    m2 = pl.DataFrame({"age": leaves, "age_class": ["20-34" if a < 35 else "35-49"
                                                    for a in leaves]})
    r1m = Release.from_mapping(t1, "age", "s", m1)
    r2m = Release.from_mapping(t2, "age", "s", m2)
    for age in (21, 33, 36, 44):
        a = link([r1, r2], {"age": age})
        b = link([r1m, r2m], {"age": age})
        assert a.counts.rows() == b.counts.rows() and a.diversity == b.diversity
    # age 33: [30,39] holds {a,b,a}; 20-34 holds {a,b,c,a}: min counts a=2, b=1
    assert link([r1, r2], {"age": 33}).counts.rows() == [("a", 2), ("b", 1)]
    pa = post_linkage([r1, r2])  # domain of the intervals: every integer age 20..49
    pb = post_linkage([r1m, r2m], pl.DataFrame({"age": leaves}))
    assert pa.targets.height == 30
    assert pa.targets["diversity"].to_list() == pb.targets["diversity"].to_list()
    assert pa.l_t == pb.l_t


def _brute_link(tables, maps, target):
    """Pure Python: min over releases of the class counts of the target's class."""
    per = []
    for table, mp in zip(tables, maps):
        if target not in mp:
            return {}
        c = mp[target]
        counts: dict[str, int] = {}
        for cls, s in table:
            if cls == c:
                counts[s] = counts.get(s, 0) + 1
        per.append(counts)
    keys = set(per[0])
    for c in per[1:]:
        keys &= set(c)
    return {s: min(c[s] for c in per) for s in keys}


@st.composite
def _releases(draw):
    domain = list(range(draw(st.integers(2, 8))))
    t = draw(st.integers(2, 3))
    values = ["x", "y", "z", "w"]
    tables, maps, rels = [], [], []
    for j in range(t):
        k = draw(st.integers(1, len(domain)))
        mp = {q: f"c{draw(st.integers(0, k - 1))}" for q in domain
              if draw(st.booleans()) or q == 0}
        used = sorted(set(mp.values()))
        rows = []
        for c in used:
            for _ in range(draw(st.integers(1, 4))):
                rows.append((c, draw(st.sampled_from(values))))
        tables.append(rows)
        maps.append(mp)
        table = pl.DataFrame({"q": [r[0] for r in rows], "s": [r[1] for r in rows]})
        mapping = pl.DataFrame({"q": list(mp), "q_class": list(mp.values())})
        rels.append(Release.from_mapping(table, "q", "s", mapping, name=f"R{j}"))
    return domain, tables, maps, rels


@settings(max_examples=40, deadline=None)
@given(_releases())
def test_post_linkage_matches_brute_force(case):
    domain, tables, maps, rels = case
    post = post_linkage(rels, pl.DataFrame({"q": domain}))
    got = dict(zip(post.targets["q"].to_list(), post.targets["diversity"].to_list()))
    expected = {q: len(_brute_link(tables, maps, q)) for q in domain}
    assert got == expected
    covered = [v for v in expected.values() if v > 0]
    assert post.l_t == (min(covered) if covered else None)
    assert post.collapsed.height == sum(1 for v in expected.values() if v == 1)
    for q in domain[:3]:
        lk = link(rels, {"q": q})
        assert dict(lk.counts.rows()) == _brute_link(tables, maps, q)
    if covered:
        res = post.check(1)
        assert res.achieved == min(covered)  # the foundation checker agrees on l_[t]


def test_release_errors():
    t = pl.DataFrame({"q": ["c"], "s": ["a"]})
    with pytest.raises(UnknownColumnError):
        Release.from_mapping(t, "q", "s", pl.DataFrame({"q": [1]}))
    with pytest.raises(ReleaseError, match="disjoint"):
        Release.from_intervals(t, "q", "s", [(0, 5), (5, 9)])
    with pytest.raises(ReleaseError, match="lo > hi"):
        Release.from_intervals(t, "q", "s", [(5, 0)])
    with pytest.raises(UnknownColumnError):
        Release.from_mapping(t, "q", "disease", {1: "c"})
    rel = Release.from_mapping(t, "q", "s", {1: "c"})
    with pytest.raises(UnknownColumnError):
        link([rel], {"zip": 1})
    with pytest.raises(InvalidParameterError):
        link([], {"q": 1})
    with pytest.raises(InvalidParameterError):
        post_linkage([rel, "not a release"])  # type: ignore[list-item]


def test_count_table_releases_match_row_releases():
    rels = table2_releases()
    counted = []
    for r in rels:
        counts = r.counts().collect()
        mapping = r._map.frame.collect()
        counted.append(Release.from_mapping(counts, ["gender", "postal"], "disease", mapping,
                                            count="n", name=r.name))
    a = post_linkage(rels, table1_raw())
    b = post_linkage(counted, table1_raw())
    assert a.targets.equals(b.targets) and a.dataset.sort(a.dataset.columns).equals(
        b.dataset.sort(b.dataset.columns))


def test_mechanism_releases_link_like_numpy():
    import numpy as np

    from ldiv_polars.linkage.distribution import JointDistribution
    from ldiv_polars.linkage.mechanism import plan_mechanism
    from ldiv_polars.linkage.simulate import dataset_frame, draw_dataset

    d = JointDistribution.product([1, 2, 1, 3, 1, 2, 2, 1, 1, 3, 2, 1], [3, 2, 2, 1, 1])
    plan = plan_mechanism(d, 3, 0.05, beta="1/2")
    n = 60  # below the broadcast N: post-linkage diversity varies from seed to seed
    rels, linked = [], None
    for seed in (0, 1):
        frame = dataset_frame(d, n, seed).rename({"s": "disease"})
        anon = plan.anonymize(frame, "disease")
        rels.append(anon.release(name=f"owner{seed}"))
        q, s = draw_dataset(d, n, seed)
        counts = np.zeros((plan.classes, d.n_sensitive), dtype=np.int64)
        np.add.at(counts, (plan.partition.class_of_position()[q], s), 1)
        linked = counts if linked is None else np.minimum(linked, counts)
    post = post_linkage(rels)  # universe: the plan's domain
    m = (linked > 0).sum(axis=1)
    assert post.l_t == int(m[m > 0].min())
    per_q = m[plan.partition.class_of_position()]
    assert post.targets.sort("q")["diversity"].to_list() == per_q.tolist()


def test_post_linkage_matches_duckdb_sql():
    """Second engine: the same linkage as SQL joins of the count tables in DuckDB."""
    import duckdb
    import numpy as np

    rng = np.random.default_rng(8)
    n = 3000
    raw = pl.DataFrame({"age": rng.integers(20, 60, n), "zip": rng.integers(100, 130, n)})
    tables, maps = [], []
    for j, (aw, zw) in enumerate(((10, 5), (5, 10))):
        rows = raw.sample(n=2000, seed=j).with_columns(
            pl.Series("s", rng.choice(["a", "b", "c", "d", "e"], 2000)))
        tables.append(rows.select((pl.col("age") // aw).alias("ac"), (pl.col("zip") // zw)
                                  .alias("zc"), "s"))
        dom = raw.select("age", "zip").unique()
        maps.append(dom.with_columns((pl.col("age") // aw).alias("ac"),
                                     (pl.col("zip") // zw).alias("zc")))
    rels = [Release.from_mapping(t, ["age", "zip"], "s", m, class_columns=["ac", "zc"],
                                 name=f"R{j}") for j, (t, m) in enumerate(zip(tables, maps))]
    post = post_linkage(rels, raw)
    con = duckdb.connect()
    for j in range(2):
        con.register(f"t{j}", tables[j].to_arrow())
        con.register(f"m{j}", maps[j].to_arrow())
    con.register("u", raw.select("age", "zip").unique().to_arrow())
    sql = """
    WITH c0 AS (SELECT ac, zc, s, count(*) AS n FROM t0 GROUP BY ALL),
         c1 AS (SELECT ac, zc, s, count(*) AS n FROM t1 GROUP BY ALL),
         k AS (SELECT u.age, u.zip, m0.ac AS a0, m0.zc AS z0, m1.ac AS a1, m1.zc AS z1
               FROM u JOIN m0 USING (age, zip) JOIN m1 USING (age, zip)),
         lk AS (SELECT k.age, k.zip, c0.s, least(c0.n, c1.n) AS n FROM k
                JOIN c0 ON c0.ac = k.a0 AND c0.zc = k.z0
                JOIN c1 ON c1.ac = k.a1 AND c1.zc = k.z1 AND c1.s = c0.s)
    SELECT age, zip, count(*) AS diversity FROM lk GROUP BY ALL ORDER BY age, zip
    """
    got = con.sql(sql).pl()
    ours = post.covered.select("age", "zip", "diversity").sort("age", "zip")
    assert ours["diversity"].to_list() == got["diversity"].cast(pl.Int64).to_list()
    assert ours.select("age", "zip").rows() == got.select("age", "zip").rows()
    assert post.l_t == int(got["diversity"].min())


def test_class_map_is_a_partition_and_sensitive_values_are_not_null():
    """A class map is a partition of the raw QI vectors (the paper's classes are disjoint):
    a raw vector in two classes or a null raw/class value is refused, naming the map, the
    column and the value; a row given twice is one fact; a null sensitive value is refused by
    link and post_linkage, naming the table."""
    t = pl.DataFrame({"ac": ["A", "A", "B"], "zc": ["Z", "Z", "Z"], "s": ["x", "y", "x"]})
    m = pl.DataFrame({"age": [1, 2, 3, 1], "zip": [9, 9, 9, 9],
                      "ac": ["A", "A", "B", "B"], "zc": ["Z"] * 4})
    kw = {"class_columns": ["ac", "zc"], "mapping_class_columns": ["ac", "zc"]}
    with pytest.raises(ReleaseError, match=r"m\.csv: raw value \(1, 9\) of 'age', 'zip' "
                                           r"is in two classes \(\('A', 'Z'\) and \('B', 'Z'\)\)"):
        Release.from_mapping(t, ["age", "zip"], "s", m, mapping_source="m.csv", **kw)
    with pytest.raises(ReleaseError, match="R: 1 null raw value"):
        Release.from_mapping(t, ["age", "zip"], "s", m.head(3).with_columns(
            pl.Series("zip", [9, None, 9])), name="R", **kw)
    with pytest.raises(ReleaseError, match="1 null class value\\(s\\) in 'q_class'"):
        Release.from_mapping(t.rename({"ac": "q"}), "q", "s", {1: "A", 2: None})
    once = Release.from_mapping(t, ["age", "zip"], "s", m.head(3), **kw)
    twice = Release.from_mapping(t, ["age", "zip"], "s", pl.concat([m.head(3)] * 2), **kw)
    assert post_linkage([twice]).l_t == post_linkage([once]).l_t == 1
    assert link([twice], {"age": 1, "zip": 9}).diversity == 2
    bad = Release.from_mapping(t.with_columns(pl.Series("s", ["x", None, "x"])),
                               ["age", "zip"], "s", m.head(3), source="t.csv", **kw)
    for run in (lambda: post_linkage([bad]), lambda: link([once, bad], {"age": 3, "zip": 9})):
        with pytest.raises(ReleaseError, match="t.csv: 1 null value\\(s\\) in the sensitive"):
            run()


def test_a_hierarchy_frame_is_a_partition_at_its_level():
    """A hierarchy given as a DataFrame (ARX layout) is a class map too: a leaf under two nodes
    at the chosen level counted its vector twice (3 targets for 2 leaves), a null leaf was a
    target of its own."""
    t = pl.DataFrame({"zip": ["1*", "2*", "1*", "2*"], "s": ["a", "b", "b", "a"]})
    ok = pl.DataFrame({"raw": ["11", "12", "21"], "g": ["1*", "1*", "2*"]})
    assert post_linkage([Release.from_hierarchy(t, "s", {"zip": ok}, {"zip": 1})]).to_dict()[
        "targets"] == 3
    two = pl.DataFrame({"raw": ["11", "12", "11"], "g": ["1*", "1*", "2*"]})
    with pytest.raises(ReleaseError, match="the hierarchy of 'zip': raw value '11' of 'zip' is "
                                           "in two classes"):
        Release.from_hierarchy(t, "s", {"zip": two}, {"zip": 1})
    null_leaf = ok.with_columns(pl.Series("raw", ["11", "12", None]))
    with pytest.raises(ReleaseError, match="1 null raw value"):
        Release.from_hierarchy(t, "s", {"zip": null_leaf}, {"zip": 1})
