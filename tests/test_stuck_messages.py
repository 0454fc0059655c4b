"""Messages that unstick a user: a list where one column is expected, a table read with the
wrong separator, a tab written as ``\\t``; the same hint on every engine (the error owns it)."""

from __future__ import annotations

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli import main
from ldiv_polars.errors import InvalidParameterError, UnknownColumnError


@pytest.fixture()
def semicolons(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a;b;c\n1;2;x\n1;2;y\n")
    return path


def error_line(capsys, *args):
    assert main(list(args)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1  # one line, no traceback
    return err[0]


def test_a_list_given_to_check_sensitive(capsys, semicolons):
    line = error_line(capsys, "check", str(semicolons), "--qi", "a", "--sensitive", "b,c")
    assert "'b,c' names several columns ('b', 'c') where one is expected" in line
    assert "--sensitive takes one" in line


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_the_wrong_separator_is_named(capsys, semicolons, engine):
    line = error_line(capsys, "check", str(semicolons), "--qi", "a", "--sensitive", "c",
                      "--separator", ",", "--engine", engine)
    assert "the table has one column, 'a;b;c': is it separated by ';'?" in line


def test_the_hint_is_the_errors_on_every_engine():
    df = pl.DataFrame({"a;b;c": ["1;2;x"]})
    for engine in ("polars", "duckdb"):
        with pytest.raises(UnknownColumnError, match="separated by ';'"):
            lp.check(df, "a", "c", lp.KAnonymity(2), engine=engine)
    with pytest.raises(UnknownColumnError) as info:
        lp.check(pl.DataFrame({"a": [1], "b": [2], "c": [3]}), "a", "b,c", lp.KAnonymity(2))
    assert "names several columns" in str(info.value)
    plain = UnknownColumnError(["zipp"], ["zip", "age"])  # no hint where none applies
    assert str(plain) == "unknown column(s): 'zipp' (available: 'zip', 'age')"


def test_a_tab_written_as_backslash_t(capsys, semicolons):
    line = error_line(capsys, "check", str(semicolons), "--qi", "a", "--sensitive", "c",
                      "--separator", "\\t")
    assert "for a tab, give the character itself" in line
    with pytest.raises(InvalidParameterError, match="for a tab"):
        lp.check(str(semicolons), "a", "c", lp.KAnonymity(2), separator="tab")
