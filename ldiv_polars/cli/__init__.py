"""The ``ldiv`` command line.

Each subcommand lives in its own module of this package, named like the command, and exposes
``register(app: typer.Typer) -> None``; modules are discovered by name (only the one being run
is imported), so adding a subcommand means adding a file.

Exit codes (:data:`EXIT_CODES`, also in ``ldiv --help`` and the README): 0 done; 1 a model
fails (or no solution, or a vulnerable release); 2 bad input or usage, one line ``error: ...``
on stderr (any :class:`~ldiv_polars.errors.LdivError`, or a usage error); 3 an internal error
(a bug: one line ``internal error: ...``; ``LDIV_DEBUG=1`` prints the traceback); 130
interrupted (Ctrl-C), 143 terminated (SIGTERM). Outputs are written atomically
(:mod:`ldiv_polars.core.output`): an interrupted or failed command leaves no partial file.
"""

from __future__ import annotations

import gc
import importlib
import os
import pkgutil
import signal
import sys
import traceback
from typing import Any, NoReturn

import typer

from ldiv_polars.errors import LdivError

EXIT_OK = 0
EXIT_MODEL_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141
EXIT_CODES = {
    EXIT_OK: "done (every requested model holds)",
    EXIT_MODEL_FAILED: "a requested model fails (check), no generalization or partition "
    "satisfies the models (anonymize, mondrian; nothing written), a tuple is vulnerable "
    "(attack), a bound is not met (link, participation)",
    EXIT_BAD_INPUT: "bad input or usage: one line 'error: ...' on stderr, nothing written",
    EXIT_INTERNAL: "internal error (a bug): one line 'internal error: ...'; LDIV_DEBUG=1 "
    "prints the traceback",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); no partial output is left",
    EXIT_BROKEN_PIPE: "stdout closed by its reader (`ldiv ... | head`): SIGPIPE",
    EXIT_TERMINATED: "terminated (SIGTERM); no partial output is left",
}
"""What each exit code of ``ldiv`` means."""

app = typer.Typer(
    name="ldiv",
    help="Check and enforce privacy models (k-anonymity, l-diversity, t-closeness, ...) "
    "inside Polars and DuckDB.",
    epilog="Exit codes: " + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items())
    + ".",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain click help: rendering it with rich imported ~0.1 s of modules for `ldiv --help`
    rich_markup_mode=None,
)


@app.callback()
def _group() -> None:
    """Keep the app a command group even when only one subcommand is loaded."""


_registered: set[str] = set()


def _subcommand_modules() -> list[str]:
    return sorted(
        info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")
    )


def _register(names: list[str]) -> None:
    for name in names:
        if name in _registered:
            continue
        module = importlib.import_module(f"{__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
        _registered.add(name)


def _register_for(argv: list[str]) -> None:
    """Import only the subcommand being run (start-up stays fast: some subcommands pull in
    scipy); ``--help`` or an unknown name imports them all."""
    modules = _subcommand_modules()
    first = next((a for a in argv if not a.startswith("-")), None)
    wanted = first.replace("-", "_") if first else None
    _register([wanted] if wanted in modules else modules)


class Interrupted(BaseException):
    """Raised in the main thread on SIGINT (Ctrl-C) instead of ``KeyboardInterrupt``, which
    typer turns into a silent exit: ``finally`` blocks remove temporary files, then the
    process says so and ends with code 130."""


class Terminated(BaseException):
    """Raised in the main thread when the process receives SIGTERM (so that ``finally``
    blocks remove temporary files before the process ends with code 143)."""


def _on_signal(signum: int, frame: Any) -> None:
    raise Terminated() if signum == signal.SIGTERM else Interrupted()


def _debug() -> bool:
    return os.environ.get("LDIV_DEBUG", "") not in ("", "0")


def _say(line: str) -> None:
    """One line on stderr (newlines in a message are folded: a pipeline reads one line)."""
    text = " ".join(part.strip() for part in line.splitlines() if part.strip())
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # pragma: no cover - stderr closed
        pass


def _first_line(exc: BaseException) -> str:
    """An error's message without the context lines an engine may append (Polars adds "This
    error occurred in the following expression: ..." to errors raised in its callbacks)."""
    text = str(exc)
    cut = text.find("\n\nThis error occurred")
    return text[:cut] if cut >= 0 else text


def _usage_error(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"error: {exc.format_message()}{where}"  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ldiv`` script; returns the process exit code (see
    :data:`EXIT_CODES`). Never raises: every exception is mapped to an exit code and one
    line on stderr."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _register_for(args)
        rc = app(args=args, standalone_mode=False)
    except LdivError as exc:
        if _debug():
            traceback.print_exc()
        _say(f"error: {_first_line(exc)}")
        return EXIT_BAD_INPUT
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:  # pragma: no cover - click internals
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except (KeyboardInterrupt, Interrupted):
        _say("interrupted")
        return EXIT_INTERRUPTED
    except Terminated:
        _say("terminated")
        return EXIT_TERMINATED
    except Exception as exc:
        # usage errors of the (vendored) click layer: one line, exit 2
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            if _debug():
                traceback.print_exc()
            _say(_usage_error(exc))
            return EXIT_BAD_INPUT
        if type(exc).__name__ == "Abort":  # click's Ctrl-C at a prompt
            _say("interrupted")
            return EXIT_INTERRUPTED
        if _debug():
            traceback.print_exc()
        _say(f"internal error: {type(exc).__name__}: {exc}; rerun with LDIV_DEBUG=1 for the "
             "traceback")
        return EXIT_INTERNAL
    return rc if isinstance(rc, int) else 0


def single_blas_thread() -> None:
    """Have numpy's BLAS (OpenBLAS in its wheels) run on the calling thread only, when numpy is
    not imported yet and the environment does not choose (``OPENBLAS_NUM_THREADS`` already
    set is kept). OpenBLAS otherwise starts a worker thread per core when numpy is imported,
    whose start and waiting cost CPU the engines' own threads need; the CLI's numpy work is
    integer and elementwise, and its few BLAS calls (vector products) are too small to gain
    from threads (BENCHMARKS.md, "The 1M-row process, session 16"). Called by :func:`run`
    only: a program importing ``ldiv_polars`` keeps its own BLAS threads."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def run() -> NoReturn:
    """The ``ldiv`` script and ``python -m ldiv_polars``: :func:`main`, then the process ends
    without tearing the interpreter down (its arrays, frames and the engines' thread pools are
    the OS's to free). Every file is written and
    closed, and every temporary file removed, by then (:func:`main` returns only after the
    commands' ``finally`` blocks ran); stdout and stderr are flushed first. SIGINT and SIGTERM
    are turned into :class:`Interrupted` and :class:`Terminated` so that those blocks run on
    them too; SIGPIPE gets its default action (a closed stdout ends the process quietly, as
    for any Unix filter: the shell sees 141); numpy's BLAS gets one thread
    (:func:`single_blas_thread`) and the objects made by the imports are moved out of the
    cyclic collector's reach (``gc.freeze``: they live until the process ends anyway)."""
    single_blas_thread()
    # the objects the imports made live as long as the process: frozen, the cyclic collector
    # never traverses them again (its full collections were a measurable part of a run)
    gc.freeze()
    try:
        signal.signal(signal.SIGINT, _on_signal)
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not the main thread
        pass
    rc = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written
            pass
    os._exit(rc)


if __name__ == "__main__":  # pragma: no cover
    run()
