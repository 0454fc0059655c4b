#!/usr/bin/env bash
# Create .venv-pycanon/ at the repository root with pycanon 1.3.6, isolated from the project's
# own environment: pycanon pins numpy==2.0.2, pandas==2.3.3, scipy==1.15.3, typer==0.23.2 and
# must never constrain ldiv_polars' dependencies. Used by tests/test_pycanon_agreement.py and
# bench/bench_check.py (both skip pycanon when this venv is absent).
#
# Idempotent: does nothing when the venv already has pycanon 1.3.6. Never fails the caller: if
# the venv cannot be created or PyPI is unreachable it prints a note and exits 0 (the pycanon
# tests then skip with a clear reason).
set -u
PYCANON_VERSION="1.3.6"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-pycanon"
PY="${PYTHON:-python3}"

note() { echo "setup_pycanon_venv: $*" >&2; }

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$PYCANON_VERSION" <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version("pycanon") == sys.argv[1] else 1)
PYEOF
then
    note "pycanon $PYCANON_VERSION already installed in $VENV"
    exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PY" -m venv "$VENV"; then
        note "could not create $VENV with $PY -m venv; pycanon comparisons will be skipped"
        rm -rf "$VENV"
        exit 0
    fi
fi

if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "pycanon==$PYCANON_VERSION"; then
    note "pip install pycanon==$PYCANON_VERSION failed (PyPI unreachable?);" \
         "pycanon comparisons will be skipped. Re-run this script when online."
    exit 0
fi
note "installed pycanon $PYCANON_VERSION into $VENV"
exit 0
