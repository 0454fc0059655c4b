"""Calls that must return within a wall-clock limit, whatever the callees do.

HiGHS keeps its own ``time_limit`` only where it checks the clock: on a loaded machine its LP and
its root cut loop ran far past the limit (BENCHMARKS.md, the exact method's time limit). A call
made through :func:`call_within` runs in a forked child process; the parent waits at most the
limit, then kills the child and answers :data:`TIMED_OUT`. :func:`race_within` runs several
calls at once, one child each (a portfolio on several cores), and hands back each answer as it
comes.

>>> call_within(sum, ([1, 2, 3],), 30.0)
6
>>> sorted(race_within([(sum, ([1, 2],)), (max, ([4, 3],))], 30.0))
[(0, 3), (1, 4)]
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

TIMED_OUT: Any = None
"""What :func:`call_within` returns for a call that did not finish in time."""

Call = tuple[Callable[..., Any], Sequence[Any]]
"""A function and its positional arguments."""


def call_within(fn: Callable[..., Any], args: Sequence[Any], seconds: float) -> Any:
    """``fn(*args)``, or :data:`TIMED_OUT` when it has not returned within ``seconds`` (wall
    clock). The call runs in a forked child (its result is pickled back), which is killed at
    the limit; an exception it raises is raised here. Where ``fork`` is not available (not
    Linux or macOS), the call runs in this process, unbounded."""
    for _, value in race_within([(fn, args)], seconds):
        return value
    return TIMED_OUT


def race_within(calls: Sequence[Call], seconds: float) -> Iterator[tuple[int, Any]]:
    """Run every call at once, each in its own forked child, and yield ``(index, result)`` for
    each as it returns, in the order they finish, until all have answered or ``seconds``
    (wall clock) have passed. The children still running when the generator ends -- the
    limit reached, or the caller stopped iterating (``break``, an exception, ``close()``) --
    are killed: a caller that has what it needs stops the others. An exception raised by a
    call is raised here (the other children killed). Without ``fork`` the calls run one after
    the other in this process, unbounded."""
    with Race(seconds) as race:
        for fn, args in calls:
            race.start(fn, args)
        yield from race.answers()


class Race:
    """Calls run at once, each in a forked child, all bounded by one wall-clock deadline
    (``seconds`` from creation); more calls may be started while answers are awaited. Use as
    a context manager: leaving it kills the children still running.

    >>> with Race(30.0) as race:
    ...     first = race.start(divmod, (7, 2))
    ...     [(i, v) for i, v in race.answers()]
    [(0, (3, 1))]
    """

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + max(seconds, 0.0)
        self.running: dict[Connection, tuple[int, Any]] = {}
        self.started = 0
        self.pending: list[tuple[int, Any]] = []  # answers computed in-process (no fork)

    def start(self, fn: Callable[..., Any], args: Sequence[Any] = ()) -> int:
        """Start ``fn(*args)`` in a new child; its index (0, 1, ... in starting order).
        Without ``fork`` it runs here, now, unbounded."""
        i = self.started
        self.started += 1
        if "fork" not in mp.get_all_start_methods():
            self.pending.append((i, fn(*args)))
            return i
        ctx = mp.get_context("fork")
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
        child.start()
        send.close()
        self.running[receive] = (i, child)
        return i

    def answers(self) -> Iterator[tuple[int, Any]]:
        """``(index, result)`` of each call as it returns, until none is running (calls started
        meanwhile included) or the deadline passes; an exception a call raised is raised."""
        while self.pending or self.running:
            if self.pending:
                yield self.pending.pop(0)
                continue
            ready = wait(list(self.running), max(self.deadline - time.monotonic(), 0.0))
            if not ready:
                return
            for receive in ready:
                i, child = self.running.pop(receive)
                answered, value = _answer(receive, child)
                if answered:
                    yield i, value

    def left(self) -> float:
        """Seconds left before the deadline."""
        return max(self.deadline - time.monotonic(), 0.0)

    def close(self) -> None:
        """Kill and reap every child still running."""
        for receive, (_, child) in self.running.items():
            _end(receive, child)
        self.running.clear()

    def __enter__(self) -> Race:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _answer(receive: Connection, child: Any) -> tuple[bool, Any]:
    """``(True, value)`` a finished child sent (raising the exception it sent instead), or
    ``(False, None)`` when it died without an answer (killed from outside, out of memory);
    the child is reaped."""
    try:
        ok, value = receive.recv()
    except EOFError:
        return False, None
    finally:
        _end(receive, child)
    if not ok:
        raise value
    return True, value


def _end(receive: Connection, child: Any) -> None:
    """Kill and reap ``child``, close its pipe."""
    child.kill()
    child.join()
    receive.close()


def _child(send: Connection, fn: Callable[..., Any], args: Sequence[Any]) -> None:
    """Run the call in the child and send back ``(True, result)`` or ``(False, exception)``."""
    try:
        out = (True, fn(*args))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        out = (False, exc)
    send.send(out)
    send.close()
