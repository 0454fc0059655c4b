"""The Spark engine: Spark DataFrames (classic or Spark Connect) and CSV/Parquet paths read by
Spark, grouped by Spark; only frequency sets and hierarchies cross to the driver, as Arrow.

- the frequency set is one ``groupBy(qi + sensitive).count()``, collected with
  ``DataFrame.toArrow()`` into Polars (no pandas), never more than :data:`MAX_GROUPS` rows
  (the driver budget: :class:`~ldiv_polars.errors.FrequencySetTooLargeError` says to use a
  coarser bottom level);
- the encoded counts the search reads are the same one ``groupBy`` on the raw values
  (collected under the same budget), each value then mapped to its code (its index among its
  hierarchy's raw values) on the driver by Polars: one ``int64`` key per class (the
  mixed-radix number of :func:`~ldiv_polars.core.engines.base.places`), or the codes with the
  sensitive values; no join runs over the rows;
- the release maps each QI to its label at the chosen level by a broadcast join, masks or
  drops the suppressed classes by a broadcast join on their labels, and is written by Spark to
  a Parquet directory (a temporary directory beside the target, renamed into place).

Values are matched as the Polars engine matches them: a QI value's string form against the
raw values' string forms. Columns, the null policy and input paths are checked by the same
code as the other engines (:mod:`ldiv_polars.core.validate`, :mod:`ldiv_polars.core.inputs`).
Without an explicit session, paths are read with the active Spark session, else a local one
(:func:`session`).

>>> import polars as pl, pyarrow as pa
>>> spark = session()  # doctest: +SKIP
>>> df = spark.createDataFrame(pa.table({"zip": ["b", "a", "b"], "s": ["x", "y", "x"]}))
... # doctest: +SKIP
>>> ENGINE.frequency_set(df, "zip", "s").frame.sort("zip").collect().rows()  # doctest: +SKIP
[('a', 'y', 1), ('b', 'x', 2)]
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ldiv_polars.core.engines.base import (
    EncodedCounts,
    OutputPlan,
    Release,
    deferred_frequency_set,
    fits_key,
)
from ldiv_polars.core.engines.polars import encode_counted
from ldiv_polars.core.frequency import (
    BAD_WEIGHTS,
    FrequencySet,
    check_weighted,
    count_name,
    unique_prefix,
    weight_name,
)
from ldiv_polars.core.inputs import (
    CSV_SUFFIXES,
    PARQUET_SUFFIXES,
    check_input_path,
    input_paths,
    is_glob,
    to_lazyframe,
    translate_input_errors,
)
from ldiv_polars.core.output import TEMP_MARK, check_output_dir
from ldiv_polars.core.validate import (
    NullPolicy,
    check_null_policy,
    raise_on_nulls,
    validate_columns,
    validate_weight,
)
from ldiv_polars.errors import FrequencySetTooLargeError, OutputWriteError

warnings.filterwarnings(  # pyspark's own note on pandas 3 (this engine never uses pandas)
    "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

MAX_GROUPS = 50_000_000
"""The driver budget: the most rows of a frequency set collected to the driver (a few dozen
bytes a row for a few QIs). Overridden per call with ``max_groups``."""

_SESSION: SparkSession | None = None


def session(master: str | None = None, remote: str | None = None) -> SparkSession:
    """The Spark session paths are read with: a new one when ``master`` (e.g. ``local[2]``,
    ``spark://host:7077``, ``yarn``) or ``remote`` (a Spark Connect URL, ``sc://host:15002``,
    or ``local[1]`` for a local Connect server) is given, else the one made before, the
    active session, or a local one (``local[*]``, UI off). The session stays in use for later
    calls (:func:`use_session` sets one made elsewhere)."""
    global _SESSION
    if master is None and remote is None:
        if _SESSION is not None and _alive(_SESSION):
            return _SESSION
        active = SparkSession.getActiveSession()
        if active is not None:
            _SESSION = active
            return active
        master = "local[*]"
    builder = SparkSession.builder
    builder = builder.remote(remote) if remote is not None else builder.master(master)
    if remote is None:
        builder = builder.config("spark.ui.enabled", "false") \
            .config("spark.ui.showConsoleProgress", "false")
    _SESSION = builder.appName("ldiv_polars").getOrCreate()
    return _SESSION


def use_session(spark: SparkSession) -> None:
    """Read paths with ``spark`` from now on (e.g. a session with a cluster's settings)."""
    global _SESSION
    _SESSION = spark


def _alive(spark: SparkSession) -> bool:
    """Whether a session made before is still usable (not stopped)."""
    try:
        jsc = getattr(spark, "_jsc", None)
        return jsc is None or not jsc.sc().isStopped()
    except Exception:  # noqa: BLE001 - a session whose JVM is gone is not alive
        return False


def col(name: str) -> Column:
    """The column ``name`` whatever characters it holds (dots, spaces, quotes, backticks)."""
    return F.col("`" + name.replace("`", "``") + "`")


_SPARK_TYPES = {
    pl.Int8: "tinyint", pl.Int16: "smallint", pl.Int32: "int", pl.Int64: "bigint",
    pl.Float32: "float", pl.Float64: "double", pl.Boolean: "boolean", pl.Date: "date",
    pl.String: "string",
}


def read(data: Any, separator: str | None = None) -> DataFrame:
    """``data`` as a Spark DataFrame: a Spark DataFrame as it is; a Polars frame or pyarrow
    table handed to :func:`session`'s Spark (its rows are in this process already); a path
    (file, glob, Parquet directory) checked as the other engines check it
    (:func:`~ldiv_polars.core.inputs.to_lazyframe`: typed errors before any row is read) and
    read by :func:`session`'s Spark (a directory Spark wrote, with its ``_SUCCESS`` marker,
    read by Spark directly), a CSV with the column types Polars infers (so every engine reads
    the same values)."""
    if isinstance(data, DataFrame):
        return data
    if isinstance(data, (pl.DataFrame, pl.LazyFrame, pa.Table)):  # rows of this process
        table = data if isinstance(data, pa.Table) else data.lazy().collect().to_arrow()
        return session().createDataFrame(table)
    text = str(data)
    if not re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", text):  # a local path, no URI scheme: the
        text = os.path.abspath(text)  # JVM resolves a relative one against its own cwd
    if (Path(text) / "_SUCCESS").is_file():  # a directory Spark wrote (its .crc files
        return session().read.parquet(text)  # beside the parts: Polars refuses to scan it)
    lf = to_lazyframe(data, separator=separator)  # raises the typed errors on bad paths
    first = check_input_path(data)
    reader = session().read
    if Path(text).suffix.lower() in PARQUET_SUFFIXES or (first.is_dir() and not is_glob(text)):
        return reader.parquet(text)
    if first.suffix.lower() in CSV_SUFFIXES:
        from ldiv_polars.core.inputs import sniff_separator

        schema = lf.collect_schema()
        ddl = ", ".join(f"{_quote(c)} {_SPARK_TYPES.get(t.base_type(), 'string')}"
                        for c, t in schema.items())
        sep = separator or sniff_separator(first, first.suffix.lower())
        return reader.csv(text, header=True, sep=sep, schema=ddl, mode="FAILFAST")
    return reader.parquet(text)  # pragma: no cover - to_lazyframe refused other suffixes


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def validate(df: DataFrame, qi: Any, sensitive: Any, *, require_sensitive: bool = False
             ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The columns checked by :func:`~ldiv_polars.core.validate.validate_columns` (same errors
    and messages) on the DataFrame's names (a nested column stands in as a list)."""
    nested = {c for c, t in df.dtypes if t.startswith(("array<", "struct<", "map<"))}
    names = pl.LazyFrame(schema={c: pl.List(pl.Null) if c in nested else pl.Null
                                 for c in df.columns})
    return validate_columns(names, qi, sensitive, require_sensitive=require_sensitive)


def collect_small(grouped: DataFrame, max_groups: int | None = None) -> pl.DataFrame:
    """A grouped DataFrame collected to the driver as Polars (through Arrow), at most
    ``max_groups`` (default :data:`MAX_GROUPS`) rows: one row more is asked for, and finding
    it raises :class:`~ldiv_polars.errors.FrequencySetTooLargeError` (the driver never
    holds more than the budget)."""
    budget = MAX_GROUPS if max_groups is None else int(max_groups)
    table = grouped.limit(budget + 1).toArrow()
    if table.num_rows > budget:
        raise FrequencySetTooLargeError(
            f"the frequency set has more than {budget} rows (the driver budget, "
            "max_groups): generalize the quasi-identifiers first (a coarser bottom level of "
            "their hierarchies) or raise the budget")
    return pl.from_arrow(table)  # type: ignore[return-value]


@contextmanager
def spark_errors(source: object = None) -> Iterator[None]:
    """Spark's failures on unreadable input (a corrupt file, a value that does not parse)
    raised as :class:`~ldiv_polars.errors.UnreadableInputError`
    (:func:`~ldiv_polars.core.inputs.translate_input_errors`)."""
    with translate_input_errors(source if isinstance(source, (str, Path)) else None):
        yield


class SparkEngine:
    """The Spark engine (see the module docstring). Every method takes ``max_groups``, the
    driver budget of :func:`collect_small`."""

    name = "spark"
    distributed = True

    def accepts(self, data: object) -> bool:
        """Spark DataFrames (classic and Connect) are this engine's own."""
        return isinstance(data, DataFrame)

    def session(self, master: str | None = None, remote: str | None = None) -> SparkSession:
        """:func:`session` (the session paths are read with)."""
        return session(master, remote)

    def input_paths(self, data: Any) -> tuple[str, ...]:
        """The files ``data`` reads (a path itself; a Spark DataFrame's ``inputFiles()``,
        local ``file:`` URIs as paths), which a writer must not overwrite."""
        if not isinstance(data, DataFrame):
            return input_paths(data)
        try:
            files = data.inputFiles()
        except Exception:  # noqa: BLE001 - a plan that names no file
            return ()
        return tuple(f[len("file:"):] if f.startswith("file:") else f for f in files)

    def schema(self, data: Any, separator: str | None = None) -> pl.Schema:
        """The input's column names and Polars dtypes (read from Spark's schema; no rows)."""
        with spark_errors(data):
            df = read(data, separator)
            empty = df.limit(0).toArrow()
        return pl.from_arrow(empty).schema  # type: ignore[union-attr]

    def plan_frequency_set(self, data: Any, qi: Any, sensitive: Any, *,
                           nulls: NullPolicy = "error", separator: str | None = None,
                           require_sensitive: bool = False, weight: str | None = None
                           ) -> FrequencySet:
        """The frequency set grouped by Spark when collected
        (:func:`~ldiv_polars.core.engines.base.deferred_frequency_set`)."""
        return deferred_frequency_set(self, data, qi, sensitive, nulls=nulls,
                                      separator=separator,
                                      require_sensitive=require_sensitive, weight=weight)

    def frequency_set(self, data: Any, qi: Any, sensitive: Any, *, nulls: NullPolicy = "error",
                      separator: str | None = None, require_sensitive: bool = False,
                      max_groups: int | None = None, weight: str | None = None
                      ) -> FrequencySet:
        """The frequency set grouped by Spark and collected as a Polars frame. Same
        validation, null policy, weight sums (``weight``: :meth:`weighted_counts` over the
        keys) and errors as the Polars engine."""
        check_null_policy(nulls)
        with spark_errors(data):
            df = read(data, separator)
            qi_t, s_t = validate(df, qi, sensitive, require_sensitive=require_sensitive)
            keys = [*qi_t, *s_t]
            count = count_name(keys)
            if weight is None:
                grouped = df.groupBy(*[col(k) for k in keys]).agg(
                    F.count(F.lit(1)).alias(count))
                frame = collect_small(grouped, max_groups)
        wname = None
        if weight is not None:
            wname = weight_name(keys)
            validate_weight(self.schema(data, separator), weight, keys)
            frame = check_weighted(self.weighted_counts(
                data, keys, weight, names=(count, wname, BAD_WEIGHTS), separator=separator,
                max_groups=max_groups), weight)
        frame = frame.with_columns(pl.col(count).cast(pl.Int64))
        if nulls == "error":
            raise_on_nulls(frame, keys, count)
        return FrequencySet(frame.lazy(), qi_t, s_t, count, weight=wname)

    def encoded_counts(self, data: Any, qi: Sequence[str], sensitive: Sequence[str],
                       leaves: Mapping[str, pl.Series], *, nulls: NullPolicy = "error",
                       qi_only: bool = False, order_from: int | None = None,
                       max_groups: int | None = None) -> EncodedCounts | None:
        """The counts keyed on raw-value codes: one Spark ``groupBy`` on the raw values (the
        QIs, with the sensitive columns unless ``qi_only``: the bare pass's cost), collected
        (:func:`collect_small`), then each value mapped to its code on the driver by Polars
        (:func:`~ldiv_polars.core.engines.polars.encode_counted`, as the Polars engine matches
        values): with ``qi_only`` (or no sensitive column) one ``bigint`` key per class, else
        the codes with the sensitive values (a frame). ``None`` when a QI value is null or not
        a raw value, or (``qi_only`` under ``nulls="error"``) a sensitive value is null: the
        caller then builds the typed error from the plain frequency set."""
        qi, sensitive = tuple(qi), tuple(sensitive)
        keyed = (qi_only or not sensitive) and fits_key([len(leaves[q]) for q in qi])
        keys = qi if keyed else (*qi, *sensitive)
        count = count_name([*qi, *sensitive])
        nulls_col = unique_prefix("__ldiv_nulls", [*qi, *sensitive, count])
        with spark_errors(data):
            aggs = [F.count(F.lit(1)).alias(count)]
            if keyed and sensitive and nulls == "error":  # rows with a null sensitive value
                null = F.lit(False)
                for s in sensitive:
                    null = null | col(s).isNull()
                aggs.append(F.sum(F.when(null, 1).otherwise(0)).alias(nulls_col))
            grouped = read(data).groupBy(*[col(k) for k in keys]).agg(*aggs)
            frame = collect_small(grouped, max_groups)
        if nulls_col in frame.columns:
            if frame.get_column(nulls_col).sum() or 0:
                return None
            frame = frame.drop(nulls_col)
        return encode_counted(frame, qi, () if keyed else sensitive, count, leaves,
                              keyed=keyed, nulls=nulls, order_from=order_from)

    def weighted_counts(self, data: Any, qi: Sequence[str], weight: str, *,
                        names: tuple[str, str, str], separator: str | None = None,
                        max_groups: int | None = None) -> pl.DataFrame:
        """The class table of ``qi`` grouped by Spark and collected (:func:`collect_small`):
        the QI columns, then (``names``) the rows per class, the sum of ``weight`` (as a
        double) and the rows whose weight is null, NaN, infinite or not positive. Columns are
        checked by the caller (:func:`~ldiv_polars.risk.tables.class_table`)."""
        rows, total, bad = names
        with spark_errors(data):
            w = col(weight).cast("double")
            invalid = w.isNull() | F.isnan(w) | (F.abs(w) == F.lit(float("inf"))) | (w <= 0)
            grouped = read(data, separator).groupBy(*[col(q) for q in qi]).agg(
                F.count(F.lit(1)).alias(rows), F.sum(w).alias(total),
                F.sum(F.when(invalid, 1).otherwise(0)).alias(bad))
            frame = collect_small(grouped, max_groups)
        return frame.with_columns(pl.col(rows).cast(pl.Int64), pl.col(total).cast(pl.Float64),
                                  pl.col(bad).cast(pl.Int64))

    def release(self, data: Any, plan: OutputPlan) -> Release:
        """The output of ``plan`` (Spark DataFrames; written by :meth:`write`) and its retained
        rows: each QI replaced by its label (broadcast join), the suppressed classes masked
        or dropped (broadcast join on their labels)."""
        with spark_errors(data):
            return _release(read(data), plan)

    def write(self, output: Any, path: str | Path, *, inputs: Iterable[object] = (),
              expected_rows: int | None = None) -> None:
        """Write ``output`` (a Spark DataFrame) to the Parquet directory ``path``: into a
        temporary directory beside it, its rows counted (``expected_rows``: else
        :class:`~ldiv_polars.errors.OutputWriteError`), then renamed into place (a directory
        or file already there is replaced only then). The path is checked first like every
        output (:func:`~ldiv_polars.core.output.check_output_dir`: never over an input)."""
        target = check_output_dir(path, inputs=inputs)
        tmp = target.parent / f".{target.name}.{os.getpid()}-{secrets.token_hex(6)}{TEMP_MARK}"
        try:
            output.write.parquet(str(tmp))
            if expected_rows is not None:
                got = session_of(output).read.parquet(str(tmp)).count()
                if got != expected_rows:
                    raise OutputWriteError(
                        f"the written output holds {got} rows, {expected_rows} were "
                        f"expected: {str(target)!r} was not written")
            _replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


ENGINE = SparkEngine()


def session_of(df: DataFrame) -> SparkSession:
    """The session a DataFrame belongs to."""
    return df.sparkSession


def _replace(tmp: Path, target: Path) -> None:
    """Rename the written directory ``tmp`` to ``target``; what was there before is moved
    aside first and removed after (a directory cannot be renamed over a non-empty one)."""
    old = None
    if target.exists() or target.is_symlink():
        old = target.parent / f".{target.name}.{os.getpid()}-old-{secrets.token_hex(6)}"
        os.replace(target, old)
    try:
        os.replace(tmp, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


def _value_map(spark: SparkSession, values: pl.Series, out: pl.Series, names: tuple[str, str]
               ) -> DataFrame:
    """A small Spark table ``(value string, out)`` to broadcast-join on a column's string
    form."""
    table = pa.table({names[0]: values.cast(pl.String).to_arrow(), names[1]: out.to_arrow()})
    return spark.createDataFrame(table)


def _release(df: DataFrame, plan: OutputPlan) -> Release:
    """:meth:`SparkEngine.release` on a Spark DataFrame."""
    spark = session_of(df)
    names = list(df.columns)
    prefix = unique_prefix("__ldiv_", names)
    gen = df
    for i, q in enumerate(plan.qi):
        v, lab = f"{prefix}v{i}", f"{prefix}l{i}"
        m = _value_map(spark, plan.leaves[q], plan.labels[q].cast(pl.String), (v, lab))
        gen = gen.join(F.broadcast(m), col(q).cast("string") == F.col(v), "left").drop(v)
    labels = {q: f"{prefix}l{i}" for i, q in enumerate(plan.qi)}
    gen = gen.select(*[F.col(labels[c]).alias(c) if c in labels else col(c) for c in names])
    if plan.suppressed is None or plan.suppressed.len() == 0:
        return Release(gen, gen)
    keys = [f"{prefix}s{i}" for i in range(len(plan.qi))]
    flag = f"{prefix}flag"
    sup = plan.suppressed.struct.unnest().select(
        [pl.col(q).cast(pl.String).alias(k) for q, k in zip(plan.qi, keys)]
    ).with_columns(pl.lit(True).alias(flag))
    sup_df = F.broadcast(spark.createDataFrame(sup.to_arrow()))
    on = None
    for q, k in zip(plan.qi, keys):
        term = col(q) == F.col(k)
        on = term if on is None else on & term
    retained = gen.join(sup_df, on, "left_anti")
    if plan.mode == "drop":
        return Release(retained, retained)
    joined = gen.join(sup_df, on, "left")
    masked = joined.select(*[
        F.when(F.col(flag).isNotNull(), F.lit(plan.mask)).otherwise(col(c)).alias(c)
        if c in labels else col(c) for c in names])
    return Release(masked, retained)


__all__ = ["ENGINE", "MAX_GROUPS", "SparkEngine", "col", "collect_small", "read", "session",
           "use_session", "validate"]
