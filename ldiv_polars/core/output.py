"""Safe output files: an output never destroys an input, and a write is atomic.

Every writer of the library and the CLI goes through this module:

* :func:`check_output` validates an output path *before any work*: its suffix names a format
  the writer knows, it is not a directory, its directory exists and can be written (probed by
  creating and removing a file), and it does not resolve to an input (the same path, a
  symbolic or hard link to it, a file inside an input directory or matched by an input glob).
* :func:`atomic_output` writes to a temporary file beside the target and renames it into place
  (``os.replace``) only when the block completes (the writer may verify the file first, e.g.
  with :meth:`OutputFile.check_rows`). An exception, a Ctrl-C or a failed verification removes
  the temporary file and leaves any existing file at the target untouched. A symbolic link at
  the target is followed: the file it points to is replaced, the link is kept.

>>> import polars as pl, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> with atomic_output(d / "out.parquet") as out:
...     pl.DataFrame({"a": [1, 2]}).write_parquet(out.path)
...     out.check_rows(2)
>>> pl.read_parquet(d / "out.parquet").height, sorted(p.name for p in d.iterdir())
(2, ['out.parquet'])
>>> try:
...     check_output(d / "out.parquet", inputs=[d / "out.parquet"])
... except OutputOverwritesInputError as e:
...     print("refused")
refused
"""

from __future__ import annotations

import fnmatch
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ldiv_polars.core.inputs import is_glob, is_read_error, one_line
from ldiv_polars.errors import (
    LdivError,
    OutputOverwritesInputError,
    OutputPathError,
    OutputWriteError,
)

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv"}
"""Output suffixes and the format each names (``.tsv``: CSV with tabs)."""
TABLE_SUFFIXES = tuple(FORMATS)
"""What the table writers accept (``ldiv anonymize``, ``mondrian``, ``microaggregate``)."""
PARQUET_SUFFIXES = (".parquet", ".pq")

TEMP_MARK = ".ldiv-tmp"
"""Temporary files are named ``.<target name>.<pid>-<random>.ldiv-tmp`` in the target's
directory; one left by a process that was killed (SIGKILL, a power loss) is removed by the next
write to the same target."""


def output_format(path: str | Path, suffixes: Sequence[str] = TABLE_SUFFIXES) -> str:
    """The format (``"parquet"`` or ``"csv"``: any other suffix a caller allows, e.g. a
    hierarchy's text file) an output path's suffix names; raises :class:`OutputPathError` when
    the suffix is not one of ``suffixes``."""
    suffix = Path(path).suffix.lower()
    if suffix not in suffixes:
        raise OutputPathError(
            f"cannot tell the output format of {str(path)!r}: its name must end in "
            f"{', '.join(suffixes)}"
        )
    return FORMATS.get(suffix, "csv")


def check_output(path: str | Path, *, inputs: Iterable[object] = (),
                 suffixes: Sequence[str] = TABLE_SUFFIXES) -> Path:
    """Validate an output path before any work and return the file to write (the path with
    symbolic links resolved). ``inputs`` are what the command reads (paths, globs, Parquet
    directories; frames and other objects are skipped). Raises :class:`OutputPathError` or
    :class:`OutputOverwritesInputError`; see the module docstring."""
    text = str(path)
    if os.path.isdir(text):
        raise OutputPathError(f"the output {text!r} is a directory: give a file name")
    output_format(text, suffixes)
    target = Path(os.path.realpath(text))
    if target.exists() and not target.is_file():
        raise OutputPathError(f"the output {text!r} exists and is not a regular file")
    parent = target.parent
    if not parent.is_dir():
        raise OutputPathError(f"the output's directory does not exist: {str(Path(text).parent)!r}")
    for source in inputs:
        if isinstance(source, (str, Path)):
            how = _overlap(text, target, str(source))
            if how is not None:
                raise OutputOverwritesInputError(
                    f"the output {text!r} {how} {str(source)!r}: writing it would destroy the "
                    "input; choose another output path"
                )
    _probe_writable(parent, text)
    return target


def check_output_dir(path: str | Path, *, inputs: Iterable[object] = ()) -> Path:
    """:func:`check_output` for a Parquet *directory* (what a distributed writer such as Spark
    makes: one part file per task): the name ends in ``.parquet``; a directory already there is
    replaced only when it holds nothing but Parquet parts and the writer's marker files; the
    same overlap and writability checks. Returns the resolved target. Raises
    :class:`OutputPathError` or :class:`OutputOverwritesInputError`."""
    text = str(path)
    output_format(text, PARQUET_SUFFIXES)
    target = Path(os.path.realpath(text))
    for source in inputs:
        if isinstance(source, (str, Path)):
            how = _overlap(text, target, str(source))
            if how is not None:
                raise OutputOverwritesInputError(
                    f"the output {text!r} {how} {str(source)!r}: writing it would destroy the "
                    "input; choose another output path")
    if target.exists() and not (target.is_dir() and all(
            n.endswith((".parquet", ".crc")) or n.startswith("_")
            for n in os.listdir(target))):
        raise OutputPathError(f"the output {text!r} exists and is not a Parquet directory")
    if not target.parent.is_dir():
        raise OutputPathError(f"the output's directory does not exist: {str(Path(text).parent)!r}")
    _probe_writable(target.parent, text)
    return target


def _overlap(text: str, target: Path, source: str) -> str | None:
    """How the output (``text``, resolved to ``target``) would overwrite the input
    ``source``, or None when it would not."""
    if is_glob(source):
        pattern = os.path.abspath(source)
        if fnmatch.fnmatchcase(os.path.abspath(text), pattern) \
                or fnmatch.fnmatchcase(str(target), os.path.realpath(pattern)):
            return "matches the input glob"
        import glob

        if any(_same(target, Path(m)) for m in glob.glob(source, recursive=True)):
            return "is a file of the input glob"
        return None
    src = Path(os.path.realpath(source))
    if src.is_dir():
        return "lies inside the input directory" if src in target.parents or src == target \
            else None
    if Path(os.path.abspath(text)) == Path(os.path.abspath(source)):
        return "is the input"
    if _same(target, src):
        return "is a link to (the same file as) the input"
    return None


def _same(target: Path, src: Path) -> bool:
    if target == Path(os.path.realpath(src)):
        return True
    try:
        return os.path.samefile(target, src)  # hard links: the same inode
    except OSError:
        return False


def _probe_writable(directory: Path, text: str) -> None:
    probe = directory / f".ldiv-probe-{secrets.token_hex(6)}{TEMP_MARK}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as exc:
        raise OutputPathError(
            f"cannot write {text!r}: its directory is not writable ({exc.strerror or exc})"
        ) from None
    os.close(fd)
    probe.unlink(missing_ok=True)


@dataclass(frozen=True)
class OutputFile:
    """The temporary file a writer fills (``path``), the format it must have and the target it
    is renamed to when the :func:`atomic_output` block completes."""

    path: Path
    format: str
    target: Path
    separator: str = ","
    metadata: dict[str, str] | None = None
    """Key-value metadata a Parquet file records in its footer (a CSV file has none)."""

    def check_rows(self, expected: int) -> None:
        """Re-read the written file's row count (Parquet: its footer; CSV: one pass) and raise
        :class:`OutputWriteError` unless it is ``expected``: the file is then not renamed
        into place."""
        if self.format == "parquet":
            got = pl.scan_parquet(self.path).select(pl.len()).collect().item()
        else:
            got = pl.scan_csv(self.path, separator=self.separator, infer_schema=False) \
                .select(pl.len()).collect().item()
        if got != expected:
            raise OutputWriteError(
                f"the written output holds {got} rows, {expected} were expected: "
                f"{str(self.target)!r} was not written"
            )

    def write(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        """Write a frame to the temporary file in its format (a LazyFrame is streamed)."""
        if isinstance(frame, pl.LazyFrame):
            self.sink(frame).collect(engine="streaming")
        elif self.format == "parquet":
            frame.write_parquet(self.path, metadata=self.metadata)
        else:
            frame.write_csv(self.path, separator=self.separator)

    def write_frames(self, frames: Iterable[pl.DataFrame], schema: pl.Schema) -> None:
        """Write ``frames`` (each with ``schema``) one after the other to the temporary file,
        holding one at a time: Parquet through pyarrow's ``ParquetWriter`` (zstd, a row group
        per frame or more), CSV appended with the header once. No frame: the header or an
        empty Parquet file of ``schema``. The file reads back as the sink of the frames'
        concatenation would."""
        empty = pl.DataFrame(schema=schema)
        if self.format != "parquet":
            with open(self.path, "wb") as fh:
                empty.write_csv(fh, separator=self.separator)
                for df in frames:
                    df.write_csv(fh, separator=self.separator, include_header=False)
            return
        import pyarrow.parquet as pq

        arrow_schema = empty.to_arrow().schema
        if self.metadata:
            arrow_schema = arrow_schema.with_metadata(self.metadata)
        with pq.ParquetWriter(self.path, arrow_schema, compression="zstd") as writer:
            for df in frames:
                table = df.to_arrow()
                writer.write_table(table if table.schema == arrow_schema
                                   else table.cast(arrow_schema))

    def sink(self, frame: pl.LazyFrame) -> pl.LazyFrame:
        """The lazy write of ``frame`` to the temporary file (collect it, possibly with other
        queries in ``pl.collect_all``)."""
        if self.format == "parquet":
            return frame.sink_parquet(self.path, lazy=True, metadata=self.metadata)
        return frame.sink_csv(self.path, separator=self.separator, lazy=True)


@contextmanager
def atomic_output(path: str | Path, *, inputs: Iterable[object] = (),
                  suffixes: Sequence[str] = TABLE_SUFFIXES,
                  separator: str | None = None,
                  metadata: dict[str, str] | None = None) -> Iterator[OutputFile]:
    """Check ``path`` (:func:`check_output`), yield an :class:`OutputFile` on a new temporary
    file beside the target, and rename it into place when the block completes. On any
    exception (a Ctrl-C included) the temporary file is removed and the target untouched;
    engine and OS errors raised in the block become :class:`OutputWriteError`. The file gets
    the permissions of the file it replaces, or the usual ones (0666 less the umask).
    ``separator``: the CSV separator (default ``,``; tab for ``.tsv``); ``metadata``: what a
    Parquet file records in its footer (e.g. a release's mask,
    :func:`~ldiv_polars.core.suppressed.release_metadata`)."""
    target = check_output(path, inputs=inputs, suffixes=suffixes)
    fmt = output_format(path, suffixes)
    sep = separator or ("\t" if Path(str(path)).suffix.lower() == ".tsv" else ",")
    _remove_stale_temps(target)
    tmp = target.parent / f".{target.name}.{os.getpid()}-{secrets.token_hex(6)}{TEMP_MARK}"
    try:  # created inside the try: a Ctrl-C right after creation still removes it
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except OSError as exc:
            raise OutputPathError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
        os.close(fd)
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        try:
            yield OutputFile(tmp, fmt, target, sep, metadata)
            _fsync(tmp)
        except LdivError:
            raise
        except BaseException as exc:
            if not is_read_error(exc):
                raise
            raise OutputWriteError(f"cannot write {str(path)!r}: {one_line(exc)}") from exc
        os.replace(tmp, target)
        _fsync(target.parent)
    finally:
        tmp.unlink(missing_ok=True)


def _remove_stale_temps(target: Path) -> None:
    """Remove the temporary files of earlier writes to ``target`` whose process is gone."""
    prefix = f".{target.name}."
    try:
        names = [n for n in os.listdir(target.parent)
                 if n.startswith(prefix) and n.endswith(TEMP_MARK)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):-len(TEMP_MARK)].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            (target.parent / name).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _fsync(path: Path) -> None:
    """Flush a file's (or a directory's) data to the disk, so that the rename publishes a
    complete file even after a power loss; a no-op where the OS refuses."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
