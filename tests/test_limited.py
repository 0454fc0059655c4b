"""``call_within``: a call's result, its exception, or ``TIMED_OUT`` once the limit passes (the
child is killed: a call that never returns does not hold the caller)."""

from __future__ import annotations

import threading

import pytest

from ldiv_polars.core.limited import TIMED_OUT, call_within


def _never_returns() -> None:
    threading.Event().wait()


def _fails() -> None:
    raise ValueError("from the child")


def test_result_exception_and_time_out() -> None:
    assert call_within(divmod, (17, 5), 60.0) == (3, 2)
    with pytest.raises(ValueError, match="from the child"):
        call_within(_fails, (), 60.0)
    assert call_within(_never_returns, (), 0.2) is TIMED_OUT
    assert call_within(divmod, (1, 1), 0.0) in ((1, 0), TIMED_OUT)  # no time: either answer
