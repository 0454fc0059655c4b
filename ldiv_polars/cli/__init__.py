"""The ``ldiv`` command line.

Each subcommand lives in its own module of this package and exposes
``register(app: typer.Typer) -> None``; modules are discovered at start-up, so adding a
subcommand means adding a file. Bad input (any :class:`~ldiv_polars.errors.LdivError`)
exits with code 2 and a one-line message.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

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


def _register_all() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ldiv`` script; returns the process exit code."""
    try:
        rc = app(args=argv, standalone_mode=False)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
