"""Bad input: each typed error is raised before heavy work, with a message naming the problem."""

from __future__ import annotations

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.errors import (
    DuplicateColumnError,
    EmptyQuasiIdentifierError,
    InputFormatError,
    InvalidParameterError,
    LdivError,
    NullValuesError,
    SensitiveInQuasiIdentifierError,
    UnknownColumnError,
)
from ldiv_polars.models import (
    AlphaKAnonymity,
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    MultiAttribute,
    NegativePositiveDisclosureRecursive,
    RecursiveCLDiversity,
    TCloseness,
)

DF = pl.DataFrame({"age": [30, 40, None], "zip": ["1", "2", "2"], "s": ["a", None, "b"]})


def test_all_errors_derive_from_ldiv_error():
    for cls in (DuplicateColumnError, EmptyQuasiIdentifierError, InputFormatError,
                InvalidParameterError, NullValuesError, SensitiveInQuasiIdentifierError,
                UnknownColumnError):
        assert issubclass(cls, LdivError)


def test_unknown_columns_are_named():
    with pytest.raises(UnknownColumnError, match="'agee'.*'zipp'") as info:
        lp.frequency_set(DF, ["agee", "zipp"], "s")
    assert info.value.missing == ["agee", "zipp"]


def test_unknown_column_raised_before_reading_rows(tmp_path):
    # a lazily scanned file: the schema alone decides, no collect happens
    path = tmp_path / "t.csv"
    DF.write_csv(path)
    with pytest.raises(UnknownColumnError):
        lp.check(str(path), ["nope"], "s", [KAnonymity(2)])


def test_empty_qi():
    with pytest.raises(EmptyQuasiIdentifierError):
        lp.frequency_set(DF, [], "s")


def test_sensitive_in_qi():
    with pytest.raises(SensitiveInQuasiIdentifierError, match="'s'"):
        lp.frequency_set(DF, ["zip", "s"], "s")


def test_duplicate_column():
    with pytest.raises(DuplicateColumnError, match="'zip'"):
        lp.frequency_set(DF, ["zip", "zip"], "s")


def test_nulls_error_names_column_and_count():
    with pytest.raises(NullValuesError, match=r"'age': 1 null\(s\).*'s': 1 null\(s\)") as info:
        lp.check(DF, ["age", "zip"], "s", [KAnonymity(1)])
    assert info.value.counts == {"age": 1, "s": 1}


def test_null_policy_value_treats_null_as_a_value():
    res = lp.check(DF, ["age", "zip"], "s", [KAnonymity(1)], nulls="value")
    assert res.rows == 3 and res.classes == 3
    with pytest.raises(InvalidParameterError, match="nulls"):
        lp.check(DF, ["age"], "s", [KAnonymity(1)], nulls="ignore")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("factory", "fragment"),
    [
        (lambda: KAnonymity(0), "k must be an integer >= 1"),
        (lambda: KAnonymity(2.5), "k must be an integer"),
        (lambda: DistinctLDiversity(0), "l must be"),
        (lambda: EntropyLDiversity(0.5), "l must be"),
        (lambda: RecursiveCLDiversity(0, 2), "c must be in"),
        (lambda: RecursiveCLDiversity(-1, 2), "c must be in"),
        (lambda: RecursiveCLDiversity(2, 2.5), "l must be an integer"),
        (lambda: TCloseness(1.5), "t must be in"),
        (lambda: TCloseness(-0.1), "t must be in"),
        (lambda: TCloseness(0.2, "manhattan"), "distance must be"),  # type: ignore[arg-type]
        (lambda: TCloseness(0.2, "hierarchical"), "needs a hierarchy"),
        (lambda: AlphaKAnonymity(0, 2), "alpha must be in"),
        (lambda: AlphaKAnonymity(1.2, 2), "alpha must be in"),
        (lambda: DeltaDisclosure(0), "delta must be in"),
        (lambda: BetaLikeness(-1), "beta must be in"),
        (lambda: NegativePositiveDisclosureRecursive(2, 100, 2), "c2 must be in"),
        (lambda: MultiAttribute(KAnonymity(2)), "does not read the sensitive column"),
    ],
)
def test_invalid_parameters(factory, fragment):
    with pytest.raises(InvalidParameterError, match=fragment):
        factory()


def test_model_needing_sensitive_without_one():
    with pytest.raises(InvalidParameterError, match="need"):
        lp.check(DF, ["zip"], None, [DistinctLDiversity(2)])


def test_single_attribute_model_with_two_sensitive_columns():
    df = pl.DataFrame({"q": [1, 1], "s": ["a", "b"], "t": ["x", "y"]})
    with pytest.raises(InvalidParameterError, match="MultiAttribute"):
        lp.check(df, ["q"], ["s", "t"], [DistinctLDiversity(2)])


def test_hierarchy_must_cover_the_values():
    hier = pl.DataFrame({"v": ["a"], "l1": ["*"]})
    with pytest.raises(InvalidParameterError, match=r"missing from the hierarchy.*'b'"):
        lp.check(pl.DataFrame({"q": [1, 1], "s": ["a", "b"]}), ["q"], "s",
                 [TCloseness(0.5, "hierarchical", hier)])


def test_model_requested_twice():
    with pytest.raises(InvalidParameterError, match="twice"):
        lp.check(DF.drop_nulls(), ["zip"], "s", [KAnonymity(2), KAnonymity(2)])


def test_bad_inputs():
    with pytest.raises(InputFormatError, match="no such file"):
        lp.check("/nonexistent/file.csv", ["a"], "s", [KAnonymity(2)])
    with pytest.raises(InputFormatError, match="cannot tell the format"):
        lp.frequency_set(__file__, ["a"], "s")
    with pytest.raises(InputFormatError, match="expected a polars"):
        lp.frequency_set({"a": [1]}, ["a"], "s")  # type: ignore[arg-type]


def test_count_column_name_clash():
    with pytest.raises(InvalidParameterError, match="count column"):
        lp.frequency_set(pl.DataFrame({"n": [1], "s": ["a"]}), ["n"], "s")
