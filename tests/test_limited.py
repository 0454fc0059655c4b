"""``call_within``: a call's result, its exception, or ``TIMED_OUT`` once the limit passes (the
child is killed: a call that never returns does not hold the caller)."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from ldiv_polars.core.limited import TIMED_OUT, Race, call_within, race_within


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


def test_race_yields_answers_as_they_come_and_kills_the_rest() -> None:
    """The fast calls answer (a ``None`` result included), in finishing order; the one that
    never returns is killed at the limit; stopping early kills the others at once."""
    got = list(race_within([(_never_returns, ()), (divmod, (7, 2)), (dict.get, ({}, 1))],
                           1.0))
    assert sorted(got, key=lambda p: p[0]) == [(1, (3, 1)), (2, None)]
    race = race_within([(_never_returns, ()), (abs, (-4,))], 600.0)
    for i, value in race:
        assert (i, value) == (1, 4)
        break  # the caller has what it needs: the other child is killed now
    race.close()
    assert not multiprocessing.active_children()
    with pytest.raises(ValueError, match="from the child"):
        list(race_within([(_never_returns, ()), (_fails, ())], 60.0))


def test_race_takes_calls_started_while_it_waits() -> None:
    """A call started after the first answer is awaited too, within the same deadline; the
    indices follow the starting order; leaving the race kills what still runs."""
    with Race(60.0) as race:
        assert race.start(divmod, (9, 4)) == 0
        assert race.start(_never_returns) == 1
        seen = []
        for i, value in race.answers():
            seen.append((i, value))
            if i == 0:
                assert race.start(pow, (2, 5)) == 2
            else:
                break
    assert seen == [(0, (2, 1)), (2, 32)]
    assert not multiprocessing.active_children()
