"""Audit of the counted sink (``AnonymizationResult._write_counted``, issue 23, branch audit8):
releases that could be written wrong are written as the search decided, or refused. A raw QI
value equal to the mask label (the masked rows then merge with a retained class in the file),
drop mode, a Categorical or Enum QI, an in-memory frame changed after the call, nulls: the
written file equals the input generalized at the chosen node by a dict (masked rows set to
``*``), the suppressed rows are those of the classes failing k (counted independently), and the
re-verification's verdict agrees."""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest

from ldiv_polars.errors import NullValuesError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import KAnonymity
from ldiv_polars.search import anonymize

TREES = {"zip": [[v, "z*", "*"] for v in ["*", "a", "b", "c"]],
         "age": [[v, "*"] for v in ["*", "1", "2", "3"]]}
HS = {q: Hierarchy(tree, name=q) for q, tree in TREES.items()}
# raw values equal to the mask label: the class (*, *) is a real one
ROWS = [("*", "*", "x")] * 3 + [("a", "1", "y")] * 3 + [("b", "2", "x"), ("c", "3", "y")] + \
       [("a", "2", "x")] * 2


def _frame(rows=ROWS, zip_dtype: pl.DataType = pl.String) -> pl.DataFrame:
    return pl.DataFrame({"zip": [r[0] for r in rows], "age": [r[1] for r in rows],
                         "s": [r[2] for r in rows]}).with_columns(pl.col("zip").cast(zip_dtype))


def _expected(rows, levels: dict[str, int], k: int, mode: str) -> tuple[Counter, int]:
    """The release by hand: each row's labels at ``levels`` (the hierarchies' rows as dicts),
    classes below k suppressed (masked to ``*`` or dropped); ``(rows as a Counter, suppressed)``."""
    maps = {q: {row[0]: row[levels[q]] for row in tree} for q, tree in TREES.items()}
    labels = [(maps["zip"][z], maps["age"][a], s) for z, a, s in rows]
    sizes = Counter((z, a) for z, a, _ in labels)
    out, suppressed = Counter(), 0
    for z, a, s in labels:
        if sizes[(z, a)] >= k:
            out[(z, a, s)] += 1
        else:
            suppressed += 1
            if mode == "mask":
                out[("*", "*", s)] += 1
    return out, suppressed


def _written(path) -> Counter:
    w = pl.read_parquet(path).with_columns(pl.col("zip", "age").cast(pl.String))
    return Counter(w.select("zip", "age", "s").rows())


@pytest.mark.parametrize("zip_dtype", [pl.String, pl.Categorical, pl.Enum(["c", "b", "a", "*"])])
@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_written_release_is_the_generalized_input(tmp_path, zip_dtype, mode):
    """At the optimum (level 0 on both: the classes (b,2), (c,3) and (a,2) below k = 3 are
    suppressed, 4 rows of 10) the file holds the input's rows generalized by hand, the masked
    rows merged into the real (*, *) class in mask mode; the re-verification passes."""
    res = anonymize(_frame(zip_dtype=zip_dtype), ["zip", "age"], "s", HS, KAnonymity(3),
                    suppression=0.4, metric="height", suppression_mode=mode, verify=False)
    assert res.levels == {"zip": 0, "age": 0}
    want, suppressed = _expected(ROWS, res.levels, 3, mode)
    assert res.suppressed_rows == suppressed == 4
    res.sink(tmp_path / "o.parquet")
    assert _written(tmp_path / "o.parquet") == want
    assert res.verification is not None and res.verification.passed


def test_a_frame_changed_after_the_call_is_not_what_is_written(tmp_path):
    """The input changed in place between the call and the write (a row moved to a class of
    its own): the file holds the rows the search saw, re-verified (no class of one row)."""
    df = _frame()
    res = anonymize(df, ["zip", "age"], "s", HS, KAnonymity(3), suppression=0.4,
                    metric="height", verify=False)
    df[3, "zip"] = "c"
    res.sink(tmp_path / "o.parquet")
    want, _ = _expected(ROWS, res.levels, 3, "mask")
    assert _written(tmp_path / "o.parquet") == want
    assert res.verification.passed


def test_null_qi_is_a_typed_error_before_the_search():
    rows = [(None, "1", "x"), *ROWS[1:]]
    with pytest.raises(NullValuesError):
        anonymize(_frame(rows), ["zip", "age"], "s", HS, KAnonymity(3), suppression=0.4)


def test_parquet_dictionary_names_no_value_only_suppressed_rows_held(tmp_path):
    """A release's Parquet file should not name a QI value that only suppressed rows held: with
    a hierarchy built from the data (every leaf a value of some row), the Enum dictionary of
    the written column lists the suppressed rare value "c" beside the retained ones, so a reader
    learns that a row with zip "c" exists although its class was suppressed. (CSV output
    carries no dictionary.)"""
    rows = [("a", "x")] * 3 + [("b", "y")] * 3 + [("c", "x")]
    df = pl.DataFrame({"zip": [r[0] for r in rows], "s": [r[1] for r in rows]})
    hs = {"zip": Hierarchy([[v, "*"] for v in sorted(set(df["zip"]))], name="zip")}
    res = anonymize(df, ["zip"], "s", hs, KAnonymity(3), suppression=0.2, metric="height")
    assert res.levels == {"zip": 0} and res.suppressed_rows == 1
    res.sink(tmp_path / "o.parquet")
    written = pl.read_parquet(tmp_path / "o.parquet")["zip"]
    assert "c" not in written.to_list()
    categories = written.dtype.categories.to_list() if isinstance(written.dtype, pl.Enum) else []
    assert "c" not in categories
