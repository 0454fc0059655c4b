"""Hostile input to every ``ldiv`` subcommand, in process: the cases that ``docs/errors.md``'s
table (run through the real process by ``tests/test_errors_table.py``) and the commands' own
tests do not hold. Each case runs :func:`ldiv_polars.cli.main` on tiny files in a fresh
directory and asserts the exit code (2: bad input, one line ``error: ...`` and no traceback;
1: a model fails; 0: done), the error type (the exception the CLI mapped to exit 2), every
input byte for byte unchanged, nothing written on failure and no temporary file left.

Every case below failed before its fix (exit 3, an engine's message under a misleading type,
or a silent exit 0 on a release that misstates a row), except those marked ``guard``."""

from __future__ import annotations

import hashlib
import shlex
import sys
from pathlib import Path

import polars as pl
import pytest

from ldiv_polars import cli
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import KAnonymity
from ldiv_polars.search.federated import anonymize_counts, site_counts


def make_files(d: Path) -> None:
    """``t.csv`` / ``t.parquet`` (a: codes p/q, b: integers 1-4, s: sensitive, g: group ids
    in runs), files named for their defect, hierarchies in ``h/`` (``hm/``: one missing 'q';
    ``hr/``: a's values p, q, r), a population table, a release plan made from ``t.csv`` and one
    naming a label of other hierarchies."""
    t = pl.DataFrame({"a": ["p", "q"] * 6, "b": [1, 2, 3, 4] * 3,
                      "s": ["w", "x"] * 6, "g": [0] * 4 + [1] * 4 + [2] * 4})
    t.write_csv(d / "t.csv")
    (d / "header.csv").write_text("a,b,s,g\n")
    t.write_csv(d / "semi.csv", separator=";")
    pl.concat([t, t]).select("a", "b").write_csv(d / "pop.csv")  # a population of t's QIs
    t.write_parquet(d / "t.parquet")
    t.with_columns(pl.col("b").cast(pl.Float64).replace(4.0, float("nan"))) \
        .write_csv(d / "nan.csv")
    t.with_columns(pl.col("b").cast(pl.Float64).replace(4.0, float("inf"))) \
        .write_parquet(d / "inf.parquet")
    t.with_columns(pl.col("a").map_elements(lambda v: [v], return_dtype=pl.List(pl.String))) \
        .write_parquet(d / "list.parquet")
    t.with_columns(pl.col("a").map_elements(lambda v: {"v": v},
                                            return_dtype=pl.Struct({"v": pl.String}))) \
        .write_parquet(d / "struct.parquet")
    t.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("r")).otherwise("a")
                   .alias("a")).write_csv(d / "other.csv")  # a value t.csv's plan never saw
    for name, a_rows in (("h", "p;*\nq;*\n"), ("hm", "p;*\n")):
        (d / name).mkdir()
        (d / name / "a.csv").write_text(a_rows)
        (d / name / "b.csv").write_text("".join(f"{v};*\n" for v in range(1, 5)))
    hs = {"a": Hierarchy([["p", "*"], ["q", "*"], ["r", "*"]], name="a")}
    hs["a"].to_csv(d / "hr.csv")
    (d / "hr").mkdir()
    hs["a"].to_csv(d / "hr" / "a.csv")
    fs = site_counts(t, ["a"], "s")
    _, plan = anonymize_counts([fs], hs, KAnonymity(2))
    assert plan is not None
    (d / "plan.json").write_text(plan.to_json())
    plan.suppressed = [["zz"]]  # a class of another hierarchy's labels
    (d / "plan_other.json").write_text(plan.to_json())
    # class maps for ``ldiv link`` (raw a -> a_class; t.csv's a holds the classes)
    (d / "map.csv").write_text("a,a_class\np,p\nq,q\np,p\n")  # a row twice: one fact
    (d / "map_dup.csv").write_text("a,a_class\np,p\nq,q\np,q\n")  # p in two classes
    (d / "map_null.csv").write_text("a,a_class\np,p\nq,q\n,q\n")  # a null raw value
    (d / "map_nullc.csv").write_text("a,a_class\np,p\nq,\n")  # q in no class
    t.with_columns(pl.when(pl.int_range(pl.len()) == 1).then(None).otherwise(pl.col("s"))
                   .alias("s")).write_csv(d / "s_null.csv")


def snapshot(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


# (id, command, exit code, error type (exit 2), a fragment of the message)
CASES = [
    # counts generalized on a hierarchy that lacks a value: was exit 3 (replace_strict)
    ("counts --levels, a value missing from the hierarchy",
     "ldiv counts t.csv --qi a --sensitive s --out c.parquet --levels a=1 --hierarchies hm",
     2, "HierarchyValueMissingError", "'q'"),
    ("counts --levels, the same on DuckDB",
     "ldiv counts t.csv --qi a --sensitive s --out c.parquet --levels a=1 --hierarchies hm "
     "--engine duckdb", 2, "HierarchyValueMissingError", "'q'"),
    ("counts --levels, NaN in a numeric QI",
     "ldiv counts nan.csv --qi b --sensitive s --out c.parquet --levels b=1 --hierarchies h",
     2, "HierarchyValueMissingError", "'NaN'"),
    ("counts, output is the input (guard)",
     "ldiv counts t.parquet --qi a --sensitive s --out t.parquet", 2,
     "OutputOverwritesInputError", "destroy"),
    # microaggregate's weights: a string column was exit 3 (numpy), NaN weights were silent
    ("microaggregate, a string weights column",
     "ldiv microaggregate t.csv out.parquet --columns b --k 2 --weights s", 2,
     "InvalidParameterError", "numeric weights"),
    ("microaggregate, NaN weights",
     "ldiv microaggregate nan.csv out.parquet --columns g --k 2 --weights b", 2,
     "InvalidParameterError", "NaN, infinite or negative"),
    # attack ordered by the group (or sensitive) column: Polars' duplicate-projection error
    # came out as "cannot read 't.csv'"
    ("attack ordered by its group column",
     "ldiv attack t.csv --group g --sensitive s --l 2 --order g", 0, None, ""),
    ("attack ordered by its sensitive column: its groups are not runs then",
     "ldiv attack t.csv --group g --sensitive s --l 2 --order s", 2,
     "InconsistentReleaseError", "not contiguous"),
    # Mondrian on NaN / inf: exit 0, the NaN row released under a range that excludes it
    ("mondrian, NaN in a numeric QI",
     "ldiv mondrian nan.csv out.csv --qi b --sensitive s --k 2", 2, "InvalidParameterError",
     "'b': 3"),
    ("mondrian, inf in a numeric QI",
     "ldiv mondrian inf.parquet out.csv --qi b --sensitive s --k 2", 2,
     "InvalidParameterError", "finite"),
    # a list or struct QI: check accepted it (exit 0), anonymize/mondrian/report said "cannot
    # read" with Polars' cast message, attack printed a Series
    ("check, a list QI", "ldiv check list.parquet --qi a --sensitive s --k 2", 2,
     "InvalidParameterError", "not a list"),
    ("check, a list QI, DuckDB",
     "ldiv check list.parquet --qi a --sensitive s --k 2 --engine duckdb", 2,
     "InvalidParameterError", "not a list"),
    ("check, a struct sensitive column, DuckDB",
     "ldiv check struct.parquet --qi b --sensitive a --k 2 --engine duckdb", 2,
     "InvalidParameterError", "not a list"),
    ("anonymize, a list QI",
     "ldiv anonymize list.parquet out.parquet --qi a --sensitive s --hierarchies h --k 2", 2,
     "InvalidParameterError", "not a list"),
    ("mondrian, a list QI", "ldiv mondrian list.parquet out.csv --qi a --sensitive s --k 2",
     2, "InvalidParameterError", "not a list"),
    ("report, a list QI",
     "ldiv report list.parquet --qi a --sensitive s --out r.html --k 2", 2,
     "InvalidParameterError", "not a list"),
    ("risk, a struct QI", "ldiv risk struct.parquet --qi a", 2, "InvalidParameterError",
     "not a list"),
    ("attack, a list group column",
     "ldiv attack list.parquet --group a --sensitive s --l 2", 2, "InvalidParameterError",
     "not a list"),
    # the output over the population table a model reads: it was overwritten (exit 0)
    ("mondrian, output is the population table",
     "ldiv mondrian t.csv pop.csv --qi a --sensitive s --k 1 --k-map 1 "
     "--population-table pop.csv", 2, "OutputOverwritesInputError", "destroy"),
    ("anonymize, output is the population table",
     "ldiv anonymize t.csv pop.csv --qi a --sensitive s --hierarchies h --k 1 "
     "--delta-presence 0,1 --population-table pop.csv", 2, "OutputOverwritesInputError",
     "destroy"),
    ("anonymize --method local, output is the population table",
     "ldiv anonymize t.csv pop.csv --qi a --sensitive s --hierarchies h --k 2 --k-map 1 "
     "--population-table pop.csv --method local", 2, "OutputOverwritesInputError",
     "destroy"),
    # a list column in the population table: "cannot read 't.csv'" (Polars), exit 1 (DuckDB)
    ("check, a list column in the population table",
     "ldiv check t.csv --qi a --sensitive s --k-map 2 --population-table list.parquet", 2,
     "InvalidParameterError", "(in the population table)"),
    ("check, a list column in the population table, DuckDB",
     "ldiv check t.csv --qi a --sensitive s --k-map 2 --population-table list.parquet "
     "--engine duckdb", 2, "InvalidParameterError", "(in the population table)"),
    ("mondrian, a list column in the population table",
     "ldiv mondrian t.csv o.csv --qi a --sensitive s --k 1 --k-map 1 "
     "--population-table list.parquet", 2, "InvalidParameterError",
     "(in the population table)"),
    # a header-only table is a valid empty table (docs/errors.md, "Empty tables"): cell
    # suppression said "hierarchy 'a' has no rows" (exit 2) where the other methods write
    # an empty release
    ("anonymize --method cells, a header-only table",
     "ldiv anonymize header.csv out.parquet --qi a --sensitive s --k 2 --method cells",
     0, None, ""),
    ("anonymize --compare, a header-only table",
     "ldiv anonymize header.csv out.parquet --qi a --sensitive s --hierarchies h --k 2 "
     "--compare", 0, None, ""),
    # l past an engine's domain (docs/errors.md's table holds the infinite l and c): an
    # engine's error reported as "cannot read"
    ("check, l = 1e308", "ldiv check t.csv --qi a --sensitive s --l 1e308", 2,
     "InvalidParameterError", "l must be in"),
    ("check, l past DuckDB's top-n, DuckDB",
     "ldiv check t.csv --qi a --sensitive s --l 2000000 --engine duckdb", 2,
     "InvalidParameterError", "l must be in [1.0, 1000000.0]"),
    ("check, the largest l, DuckDB (guard: a model failing)",
     "ldiv check t.csv --qi a --sensitive s --l 1000000 --engine duckdb", 1, None, ""),
    # more rows than Polars holds: exit 3 (a MemoryError building the list of chunks)
    ("synth, more rows than a table holds",
     "ldiv synth --rows 99999999999999999999 --out o.parquet", 2, "InvalidParameterError",
     "rows must be at most"),
    ("demo, more rows than a table holds", "ldiv demo --rows 99999999999999999999", 2,
     "InvalidParameterError", "rows must be at most"),
    # k above what a table holds: participation was exit 3 (a MemoryError: a vector of k
    # probabilities), demo an InputFormatError about NoneType (no anonymization found)
    ("participation, k above the table: a verdict",
     "ldiv participation --k 99999999999 --pi 0.5 --p-bar 0.1 --N 100", 1, None, ""),
    ("participation, k past the search without a table size",
     "ldiv participation --k 99999999999 --pi 0.5 --p-bar 0.1", 2, "InvalidParameterError",
     "k = 99999999999 is above 100000"),
    ("microaggregate under participation, k past the search",
     "ldiv microaggregate t.csv out.parquet --columns b --k 99999999999 --pi 0.5 --p-bar 0.1",
     2, "InvalidParameterError", "is above 100000"),
    ("demo, k above the rows: no generalization, a verdict",
     "ldiv demo --rows 50 --k 99999999999", 1, None, ""),
    # a negative seed: exit 3 (numpy's "expected non-negative integer"); a negative --top
    # showed every row but the last (exit 0)
    ("synth, a negative seed", "ldiv synth --rows 10 --seed -1 --out o.parquet", 2,
     "InvalidParameterError", "seed must be an integer >= 0"),
    ("demo, a negative seed", "ldiv demo --rows 50 --seed -1", 2, "InvalidParameterError",
     "seed must be an integer >= 0"),
    ("attack, a negative seed", "ldiv attack t.csv --group g --sensitive s --l 2 --seed -1",
     2, "InvalidParameterError", "seed must be an integer >= 0"),
    ("risk, a negative --top", "ldiv risk t.csv --qi a,b --attributes --top -1", 2,
     "InvalidParameterError", "--top must be >= 0"),
    # a CSV read with the wrong delimiter: one column, named in the error (guard)
    ("check, a ';' CSV read with ','",
     "ldiv check semi.csv --qi a --sensitive s --k 2 --separator ,", 2,
     "UnknownColumnError", "available: 'a;b;s;g'"),
    # federated: a site's rows differ from the counts the plan was made from
    ("apply-plan, a value the plan never saw",
     "ldiv apply-plan other.csv plan.json out.parquet --hierarchies hr", 2,
     "PlanMismatchError", "'r'"),
    ("apply-plan, a value outside the hierarchy",
     "ldiv apply-plan other.csv plan.json out.parquet --hierarchies h", 2,
     "PlanMismatchError", "not a value of its hierarchy"),
    # a plan naming a label its hierarchy's level lacks: was exit 3 (the Enum cast)
    ("apply-plan, a plan for another hierarchy",
     "ldiv apply-plan t.csv plan_other.json out.parquet --hierarchies hr", 2,
     "InvalidParameterError", "'zz' for 'a', not a label of level 0"),
    ("apply-plan, output is the input (guard)",
     "ldiv apply-plan t.parquet plan.json t.parquet --hierarchies hr", 2,
     "OutputOverwritesInputError", "destroy"),
    ("apply-plan, a truncated Parquet site file (guard)",
     "ldiv apply-plan trunc.parquet plan.json out.parquet --hierarchies hr", 2,
     "UnreadableInputError", "trunc.parquet"),
    # the same site's counts twice: every class looked twice its size (exit 0, a plan)
    ("anonymize-counts, a counts file given twice",
     "ldiv anonymize-counts c0.parquet ./c0.parquet --hierarchies hr --plan-out p.json --k 2",
     2, "InvalidParameterError", "given twice"),
    ("check-counts, a counts file and a link to it",
     "ldiv check-counts c0.parquet c0link.parquet --k 2", 2, "InvalidParameterError",
     "given twice"),
    ("counts, a level given twice",
     "ldiv counts t.csv --qi a --sensitive s --out c.parquet --levels a=1,a=0 --hierarchies h",
     2, "InvalidParameterError", "'a' given twice"),
    # link: a class map that is not a partition, or null values, linked silently (exit 0)
    ("link, a raw value in two classes",
     "ldiv link --release t.csv --mapping map_dup.csv --qi a --sensitive s", 2,
     "ReleaseError", "map_dup.csv: raw value 'p' of 'a' is in two classes"),
    ("link, a null raw value",
     "ldiv link --release t.csv --mapping map_null.csv --qi a --sensitive s", 2,
     "ReleaseError", "map_null.csv: 1 null raw value(s) in 'a'"),
    ("link, a null class value",
     "ldiv link --release t.csv --mapping map_nullc.csv --qi a --sensitive s", 2,
     "ReleaseError", "map_nullc.csv: 1 null class value(s) in 'a_class'"),
    ("link, a null sensitive value",
     "ldiv link --release s_null.csv --mapping map.csv --qi a --sensitive s", 2,
     "ReleaseError", "s_null.csv: 1 null value(s) in the sensitive column 's'"),
    ("link --target, a null sensitive value",
     "ldiv link --release t.csv --mapping map.csv --release s_null.csv --mapping map.csv "
     "--qi a --sensitive s --target a=q", 2,
     "ReleaseError", "s_null.csv: 1 null value(s) in the sensitive column 's'"),
    ("link, a class map row given twice (guard: one fact)",
     "ldiv link --release t.csv --mapping map.csv --qi a --sensitive s --l 1", 0, None, ""),
    ("anonymize-counts, plan directory missing (guard)",
     "ldiv anonymize-counts c0.parquet --hierarchies hr --plan-out nodir/p.json --k 2", 2,
     "OutputPathError", "nodir"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_input(case, tmp_path, capsys, monkeypatch):
    _, command, code, error, fragment = case
    make_files(tmp_path)
    data = (tmp_path / "t.parquet").read_bytes()
    (tmp_path / "trunc.parquet").write_bytes(data[: len(data) // 2])
    monkeypatch.chdir(tmp_path)
    if "c0.parquet" in command:
        assert cli.main(["counts", "t.csv", "--qi", "a", "--sensitive", "s",
                         "--out", "c0.parquet"]) == 0
        (tmp_path / "c0link.parquet").symlink_to("c0.parquet")
    capsys.readouterr()
    before = snapshot(tmp_path)
    raised: list[str] = []  # the type of the error the CLI mapped (its debug hook)
    monkeypatch.setenv("LDIV_DEBUG", "1")
    monkeypatch.setattr(cli.traceback, "print_exc",
                        lambda *a, **k: raised.append(sys.exc_info()[0].__name__))
    rc = cli.main(shlex.split(command)[1:])
    err = capsys.readouterr().err
    assert rc == code, err
    assert "Traceback" not in err
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # inputs untouched
    assert not [p for p in tmp_path.rglob("*") if ".ldiv-tmp" in p.name]
    if code == 0:
        if "header.csv" in command:  # an empty release
            assert pl.read_parquet(tmp_path / "out.parquet").height == 0
        return
    assert after == before  # nothing written
    if code == 1:  # a model fails: the verdicts on stdout, nothing on stderr
        assert err == "" and raised == []
        return
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err
    assert raised == [error]


def test_the_table_covers_the_commands_the_errors_table_leaves():
    commands = {shlex.split(c[1])[1] for c in CASES}
    assert commands >= {"counts", "apply-plan", "anonymize-counts", "microaggregate",
                        "attack", "mondrian", "check", "risk", "report"}


def test_a_release_is_not_written_over_the_population_table_a_model_reads(tmp_path):
    """The Python API's writer refuses it too (``AnonymizationResult.sink``)."""
    import ldiv_polars as lp
    from ldiv_polars.errors import OutputOverwritesInputError
    from ldiv_polars.models import KMapPopulation

    make_files(tmp_path)
    pop = tmp_path / "pop.csv"
    before = pop.read_bytes()
    hs = {"a": Hierarchy([["p", "*"], ["q", "*"]], name="a")}
    res = lp.anonymize(str(tmp_path / "t.csv"), ["a"], "s", hs, KMapPopulation(1, str(pop)))
    with pytest.raises(OutputOverwritesInputError):
        res.sink(pop)
    assert pop.read_bytes() == before
