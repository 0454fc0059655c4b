"""Shared fixtures. Reference data lives in ``../shared/data`` beside the checkout (CI has it
there); tests that need it skip with a clear reason when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples (reproducible verdicts); local runs
# keep exploring new random examples.
# No profile has a deadline: a wall-clock limit per example fails on a loaded machine, not on a
# wrong answer.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("local", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LDIV_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_data_path(*parts: str) -> Path:
    """Path under the shared reference data, or skip the calling test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data not found at {path} (set LDIV_SHARED_DATA or check out "
                    f"shared/ beside the repository)")
    return path


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """Directory with ARX's Adult extract and hierarchies."""
    return shared_data_path("adult")


@pytest.fixture(scope="session")
def adult_csv(adult_dir: Path) -> Path:
    return adult_dir / "adult.csv"
