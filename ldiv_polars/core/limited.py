"""A call that must return within a wall-clock limit, whatever the callee does.

HiGHS keeps its own ``time_limit`` only where it checks the clock: on a loaded machine its LP and
its root cut loop ran far past the limit (BENCHMARKS.md, the exact method's time limit). A call
made through :func:`call_within` runs in a forked child process; the parent waits at most the
limit, then kills the child and answers :data:`TIMED_OUT`.

>>> call_within(sum, ([1, 2, 3],), 30.0)
6
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

TIMED_OUT: Any = None
"""What :func:`call_within` returns for a call that did not finish in time."""


def call_within(fn: Callable[..., Any], args: Sequence[Any], seconds: float) -> Any:
    """``fn(*args)``, or :data:`TIMED_OUT` when it has not returned within ``seconds`` (wall
    clock). The call runs in a forked child (its result is pickled back), which is killed at
    the limit; an exception it raises is raised here. Where ``fork`` is not available (not
    Linux or macOS), the call runs in this process, unbounded."""
    if "fork" not in mp.get_all_start_methods():
        return fn(*args)
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(max(seconds, 0.0)):
            return TIMED_OUT
        ok, value = receive.recv()
    except EOFError:  # the child died without an answer (killed from outside, out of memory)
        return TIMED_OUT
    finally:
        child.kill()
        child.join()
        receive.close()
    if not ok:
        raise value
    return value


def _child(send: Connection, fn: Callable[..., Any], args: Sequence[Any]) -> None:
    """Run the call in the child and send back ``(True, result)`` or ``(False, exception)``."""
    try:
        out = (True, fn(*args))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        out = (False, exc)
    send.send(out)
    send.close()
