"""The ``ldiv`` command line.

Each subcommand lives in its own module of this package, named like the command, and exposes
``register(app: typer.Typer) -> None``; modules are discovered by name (only the one being run
is imported), so adding a subcommand means adding a file.
Bad input (any :class:`~ldiv_polars.errors.LdivError`)
exits with code 2 and a one-line message.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from typing import NoReturn

import typer

from ldiv_polars.errors import LdivError

app = typer.Typer(
    name="ldiv",
    help="Check and enforce privacy models (k-anonymity, l-diversity, t-closeness, ...) "
    "inside Polars and DuckDB.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ldiv`` script; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    _register_for(args)
    try:
        rc = app(args=args, standalone_mode=False)
    except LdivError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:  # pragma: no cover - click internals
        return int(exc.code or 0)
    except Exception as exc:
        # usage errors of the (vendored) click layer: show the message, exit 2
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            return 2
        if type(exc).__name__ == "Abort":
            return 1
        raise
    return rc if isinstance(rc, int) else 0


def run() -> NoReturn:
    """The ``ldiv`` script and ``python -m ldiv_polars``: :func:`main`, then the process ends
    without tearing the interpreter down (its arrays, frames and the engines' thread pools are
    the OS's to free: ~0.06 s of a 1M-row ``ldiv anonymize``). Every file is written and
    closed by then; stdout and stderr are flushed first."""
    rc = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written
            pass
    os._exit(rc)


if __name__ == "__main__":  # pragma: no cover
    run()
