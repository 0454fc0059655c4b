"""Turn what the caller hands us (a LazyFrame, a DataFrame, a CSV or Parquet path) into a
LazyFrame without reading the rows, and turn the engines' failures on unreadable input into the
library's typed errors.

A path is checked before it is scanned (it exists, is a regular file or a Parquet directory,
is readable and not empty; a glob matches something; a CSV header names no column twice), and
its schema is read at once, so a corrupt Parquet footer or an empty CSV is reported here, before
any work. What only the pass over the rows can find (a malformed row, bytes that are not UTF-8,
a truncated Parquet page) is raised by the engine when the rows are read; the functions that
read user input run under :func:`translate_input_errors` (or are decorated with
:func:`reads_input`), which maps those engine exceptions to
:class:`~ldiv_polars.errors.UnreadableInputError`.

>>> import polars as pl
>>> to_lazyframe(pl.DataFrame({"a": [1]})).collect().shape
(1, 1)
>>> try:
...     to_lazyframe("no/such/file.csv")
... except InputFormatError as e:
...     print(e)
no such file: 'no/such/file.csv'
"""

from __future__ import annotations

import csv
import functools
import glob as globmod
import os
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ParamSpec, TypeVar, Union

import polars as pl

from ldiv_polars.errors import (
    DuplicateColumnError,
    InputFormatError,
    InvalidParameterError,
    LdivError,
    UnreadableInputError,
)

TableLike = Union[pl.LazyFrame, pl.DataFrame, str, Path]

CSV_SUFFIXES = {".csv", ".tsv", ".txt"}
PARQUET_SUFFIXES = {".parquet", ".pq"}
GLOB_CHARS = "*?["

P = ParamSpec("P")
R = TypeVar("R")


def to_lazyframe(data: TableLike, *, separator: str | None = None) -> pl.LazyFrame:
    """Return ``data`` as a LazyFrame; paths are scanned lazily (``scan_parquet`` /
    ``scan_csv``) after :func:`check_input_path`, and their schema is read at once.

    ``separator`` applies to CSV paths (one single-byte character); by default ``;`` is used
    when the header line contains one and no comma (the ARX convention), ``\\t`` for ``.tsv``,
    otherwise ``,``. A CSV scan reads every column of every row (a row with more fields than
    the header is an error, never silently cut), whatever columns the caller then selects.

    Raises :class:`~ldiv_polars.errors.InputFormatError` (missing file, unknown suffix, not a
    regular file, empty file, glob matching nothing),
    :class:`~ldiv_polars.errors.UnreadableInputError` (the engine cannot read the header or
    footer, permission denied), :class:`~ldiv_polars.errors.DuplicateColumnError` (a CSV
    header naming a column twice) or :class:`~ldiv_polars.errors.InvalidParameterError` (a
    bad separator).
    """
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    if isinstance(data, (str, Path)):
        check_separator(separator)
        first = check_input_path(data)
        text = str(data)
        path = Path(text)
        suffix = path.suffix.lower()
        with translate_input_errors(text):
            if suffix in PARQUET_SUFFIXES or (first.is_dir() and not is_glob(text)):
                lf = pl.scan_parquet(text)
            elif suffix in CSV_SUFFIXES:
                sep = separator or sniff_separator(first, first.suffix.lower())
                check_csv_header(first, sep)
                lf = pl.scan_csv(text, separator=sep)
                lf = lf.filter(_every_column_read())
            else:
                raise InputFormatError(
                    f"cannot tell the format of {text!r}: use a .csv/.tsv/.txt or .parquet file"
                )
            lf.collect_schema()
        return lf
    if (type(data).__module__ or "").startswith("pyspark"):
        raise InputFormatError(
            "a Spark DataFrame is read by the Spark engine (check, summary, violations, "
            "risk_profile, anonymize); this function reads the rows in this process: collect "
            "a sample yourself or use one of those")
    raise InputFormatError(
        f"expected a polars LazyFrame/DataFrame or a CSV/Parquet path, got {type(data).__name__}"
    )


_SCAN = re.compile(r"\b\w+ SCAN \[([^\]]*)\]")


def input_paths(data: object) -> tuple[str, ...]:
    """The files ``data`` reads, for a writer to refuse to overwrite them: a path itself (a
    file, a glob, a directory); the files of a LazyFrame's scans, read from its plan (best
    effort: none when the plan cannot be described); nothing for a DataFrame.

    >>> import polars as pl
    >>> input_paths("t.csv"), input_paths(pl.DataFrame({"a": [1]}))
    (('t.csv',), ())
    """
    if isinstance(data, (str, Path)):
        return (str(data),)
    if not isinstance(data, pl.LazyFrame):
        return ()
    try:
        plan = data.explain(optimized=False)
    except Exception:  # noqa: BLE001 - a plan that cannot be described names no file
        return ()
    found = [part for m in _SCAN.finditer(plan) for part in m.group(1).split(", ")
             if part and not part.startswith("...")]
    return tuple(dict.fromkeys(found))


def _every_column_read() -> pl.Expr:
    """An always-true row filter naming every column. Polars' CSV reader checks a row's field
    count only when it parses every column (a projected scan silently drops the fields of a
    row longer than the header); this filter makes each scan parse them all."""
    return pl.struct(pl.all()).is_not_null()


def is_glob(text: str) -> bool:
    """Whether a path string is a glob pattern (``*``, ``?`` or ``[``)."""
    return any(ch in text for ch in GLOB_CHARS)


def check_separator(separator: str | None) -> None:
    """Raise :class:`InvalidParameterError` unless ``separator`` is None or one single-byte
    character other than a quote or a line break (what the CSV readers accept)."""
    if separator is None:
        return
    if not isinstance(separator, str) or len(separator.encode("utf-8")) != 1 \
            or separator in "\"\r\n":
        tab = "; for a tab, give the character itself (--separator $'\\t' in bash)" \
            if separator in ("\\t", "tab", "TAB") else ""
        raise InvalidParameterError(
            f"the CSV separator must be one single-byte character (not a quote or a line "
            f"break), got {separator!r}{tab}"
        )


def check_input_path(data: str | Path) -> Path:
    """Check that a path names readable input and return the file to sniff (the path itself,
    a glob's first match, or the directory). Raises :class:`InputFormatError` for a missing
    path, a glob matching nothing, something that is not a regular file or a directory (a
    FIFO, a device), or a zero-byte file, and :class:`UnreadableInputError` for a file or
    directory that cannot be read."""
    text = str(data)
    if is_glob(text):
        matches = sorted(p for p in globmod.glob(text, recursive=True) if os.path.isfile(p))
        if not matches:
            raise InputFormatError(f"no file matches {text!r}")
        for m in matches:
            _check_one(Path(m), m)
        return Path(matches[0])
    path = Path(text)
    _check_one(path, text)
    return path


def _check_one(path: Path, text: str) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputFormatError(f"no such file: {text!r}") from None
    except OSError as exc:
        raise UnreadableInputError(str(exc.strerror or exc), text) from None
    if stat.S_ISDIR(st.st_mode):
        if not os.access(path, os.R_OK | os.X_OK):
            raise UnreadableInputError("permission denied", text)
        if not any(p.suffix.lower() in PARQUET_SUFFIXES for p in path.rglob("*")
                   if p.is_file()):
            raise InputFormatError(
                f"{text!r} is a directory without Parquet files (a directory is read as a "
                "Parquet dataset): give a CSV or Parquet file, a glob, or a Parquet directory"
            )
        return
    if not stat.S_ISREG(st.st_mode):
        raise InputFormatError(
            f"{text!r} is not a regular file (a FIFO, socket or device): give a CSV or Parquet "
            "file"
        )
    if not os.access(path, os.R_OK):
        raise UnreadableInputError("permission denied", text)
    if st.st_size == 0:
        raise InputFormatError(
            f"{text!r} is empty (zero bytes): a table needs at least a header line"
        )


def check_csv_header(path: Path, separator: str) -> list[str]:
    """The column names of a CSV file's header line; raises
    :class:`DuplicateColumnError` when a name appears twice (Polars and DuckDB would rename
    the second one silently) and :class:`UnreadableInputError` when the line is not UTF-8."""
    try:
        with path.open("rb") as fh:
            line = fh.readline().decode("utf-8-sig")
        header = next(csv.reader([line.rstrip("\r\n")], delimiter=separator), [])
    except UnicodeDecodeError:
        raise UnreadableInputError(
            "its header line is not UTF-8 (re-encode the file, e.g. with iconv -t utf-8)",
            str(path)) from None
    except OSError as exc:
        raise UnreadableInputError(str(exc.strerror or exc), str(path)) from None
    names = list(header)
    dup = sorted({h for h in names if names.count(h) > 1})
    if dup:
        raise DuplicateColumnError(
            f"the header of {str(path)!r} names column(s) {', '.join(map(repr, dup))} more "
            "than once"
        )
    return names


def sniff_separator(path: Path, suffix: str) -> str:
    """The CSV separator of ``path``: tab for .tsv, else `;` or tab when the header has one and
    no comma (ARX files are `;`-separated), else a comma. Raises
    :class:`~ldiv_polars.errors.UnreadableInputError` when the file cannot be read."""
    if suffix == ".tsv":
        return "\t"
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            header = fh.readline()
    except OSError as exc:
        raise UnreadableInputError(str(exc.strerror or exc), str(path)) from exc
    if ";" in header and "," not in header:
        return ";"
    if "\t" in header and "," not in header:
        return "\t"
    return ","


# --- engine errors on unreadable input --------------------------------------------------------

_POLARS_READ_ERRORS = (
    "NoDataError", "ComputeError", "SchemaError", "SchemaFieldNotFoundError",
    "ColumnNotFoundError", "DuplicateError", "InvalidOperationError", "ShapeError",
    "PanicException",
)
_SPARK_READ_ERRORS = (
    "AnalysisException", "SparkException", "SparkRuntimeException", "SparkUpgradeException",
    "NumberFormatException", "DateTimeException", "ArithmeticException", "Py4JJavaError",
    "SparkConnectGrpcException", "UnknownException",
)
_DUCKDB_READ_ERRORS = (
    "IOException", "InvalidInputException", "ConversionException", "OutOfRangeException",
    "SerializationException",
    "Error",  # the base class itself (never a subclass): what its Parquet reader raises on a
    # corrupt footer ("Footer length error")
)
_HINTS = (
    ("invalid utf-8", "the file is not UTF-8: re-encode it, e.g. with iconv -t utf-8"),
    ("found more fields than defined", "a row has more fields than the header: check the "
     "separator (--separator) and the quoting"),
    ("could not parse", "a value does not fit the type inferred from the first rows"),
)


def is_read_error(exc: BaseException) -> bool:
    """Whether ``exc`` is what an engine or the OS raises on unreadable input: a Polars error
    of the reading kinds (``polars.exceptions.*``, the Rust ``PanicException`` included), a
    DuckDB I/O, input, conversion or binder error, a pyarrow error, an ``OSError`` or a
    ``UnicodeDecodeError``. Anything else is a bug and is left alone."""
    if isinstance(exc, (OSError, UnicodeDecodeError)):
        return True
    name = type(exc).__name__
    module = type(exc).__module__ or ""
    if module.startswith(("polars", "pyo3_runtime")):
        return name in _POLARS_READ_ERRORS
    if module.startswith(("duckdb", "_duckdb")):
        return name in _DUCKDB_READ_ERRORS
    if module.startswith("pyarrow"):
        return isinstance(exc, Exception)
    if module.startswith(("pyspark", "py4j")):
        return name in _SPARK_READ_ERRORS
    return False


def one_line(exc: BaseException, limit: int = 300) -> str:
    """The first non-empty line of an exception's message, at most ``limit`` characters."""
    text = str(exc).strip()
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return line if len(line) <= limit else line[: limit - 3] + "..."


@contextmanager
def translate_input_errors(source: object = None) -> Iterator[None]:
    """Re-raise what an engine or the OS raises on unreadable input (:func:`is_read_error`)
    as :class:`~ldiv_polars.errors.UnreadableInputError` naming ``source`` (when it is a path,
    or a list of paths) and the engine's one-line reason; every other exception passes
    unchanged, except an ``UnreadableInputError`` raised without a source inside the block,
    which gets this one.

    >>> import polars as pl
    >>> try:
    ...     with translate_input_errors("t.csv"):
    ...         raise pl.exceptions.ComputeError("invalid utf-8 sequence")
    ... except UnreadableInputError as e:
    ...     print(e)  # doctest: +NORMALIZE_WHITESPACE
    cannot read 't.csv': invalid utf-8 sequence (the file is not UTF-8: re-encode it, e.g.
    with iconv -t utf-8)
    """
    name: str | tuple[str, ...] | None = None
    if isinstance(source, (str, Path)):
        name = str(source)
    elif isinstance(source, (list, tuple)) and source \
            and all(isinstance(x, (str, Path)) for x in source):
        name = tuple(str(x) for x in source) if len(source) > 1 else str(source[0])
    try:
        yield
    except UnreadableInputError as exc:
        if exc.source is not None or name is None:
            raise
        raise UnreadableInputError(exc.reason, name) from exc.__cause__
    except LdivError:
        raise
    except BaseException as exc:
        if not is_read_error(exc):
            raise
        reason = one_line(exc)
        hint = next((h for key, h in _HINTS if key in reason.lower()), None)
        raise UnreadableInputError(reason + (f" ({hint})" if hint else ""), name) from exc


def reads_input(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate a public function that reads user input: engine errors raised while it runs
    become :class:`~ldiv_polars.errors.UnreadableInputError` (see
    :func:`translate_input_errors`; the first argument names the source when it is a path)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with translate_input_errors(args[0] if args else None):
            return fn(*args, **kwargs)

    return wrapper
