"""Cell suppression: the MILP's optimum against a brute force over every release, the greedy never
below it and always valid, every release re-verified, counts exact.

The brute force and its checker below share no code with the library: a release is a mask per
distinct key; a record's class is the records with the same pattern (own value) or compatible
with it (wildcard: equal wherever neither is suppressed)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
from ldiv_polars.local.cells import suppress_cells
from ldiv_polars.local.greedy import greedy_masks, mask_costs
from ldiv_polars.local.keys import KeyTable
from ldiv_polars.local.milp import exact_masks
from ldiv_polars.local.result import InfeasibleError
from ldiv_polars.local.verify import verify_release

QI = ["a", "b", "c"]


def _records(table: KeyTable) -> list[tuple[tuple[int, ...], int, int]]:
    """(key codes, sensitive id, n) of every frequency-set cell."""
    return [(tuple(int(c) for c in table.codes[k]), int(s), int(n))
            for k, s, n in zip(table.cell_key, table.cell_s, table.cell_n)]


def _valid(table: KeyTable, masks: tuple[int, ...], k: int, ell: int, semantics: str) -> bool:
    """Brute-force check of a release (a mask per key)."""
    q = len(table.qi)
    pat = [tuple(-1 if (m >> i) & 1 else int(c) for i, c in enumerate(table.codes[key]))
           for key, m in enumerate(masks)]
    cells = [(pat[key], int(s), int(n))
             for key, s, n in zip(table.cell_key, table.cell_s, table.cell_n)]

    def together(p: tuple[int, ...], r: tuple[int, ...]) -> bool:
        if semantics == "value":
            return p == r
        return all(x == y or x == -1 or y == -1 for x, y in zip(p, r))

    for p in set(pat):
        members = [(s, n) for r, s, n in cells if together(p, r)]
        if sum(n for _, n in members) < k or len({s for s, _ in members}) < ell:
            return False
    assert q == len(pat[0])
    return True


def _brute(table: KeyTable, weights: np.ndarray, k: int, ell: int, semantics: str,
           *, safe_intact: bool) -> float:
    q = len(table.qi)
    cost = mask_costs(weights)
    own_ok = [table.n[key] >= k and (table.histogram()[key] > 0).sum() >= ell
              for key in range(table.keys)]
    choices = [[0] if (safe_intact and own_ok[key]) else range(1 << q)
               for key in range(table.keys)]
    best = np.inf
    for masks in itertools.product(*choices):
        c = float(table.n @ cost[list(masks)])
        if c < best and _valid(table, masks, k, ell, semantics):
            best = c
    return best


@st.composite
def small_tables(draw: st.DrawFn) -> pl.DataFrame:
    q = draw(st.integers(2, 3))
    keys = draw(st.integers(2, 5 if q == 2 else 4))
    rows = []
    for _ in range(keys):
        key = [draw(st.integers(0, 2)) for _ in range(q)]
        for _ in range(draw(st.integers(1, 3))):
            rows.append((*key, draw(st.sampled_from("xyz"))))
    return pl.DataFrame(rows, schema=[*QI[:q], "s"], orient="row")


@settings(max_examples=60, deadline=None)
@given(df=small_tables(), k=st.integers(2, 3), ell=st.integers(0, 2),
       semantics=st.sampled_from(["value", "wildcard"]), weighted=st.booleans())
def test_exact_equals_brute_force_and_greedy_is_never_better(
        df: pl.DataFrame, k: int, ell: int, semantics: str, weighted: bool) -> None:
    qi = [c for c in df.columns if c != "s"]
    if semantics == "wildcard":
        ell = 0  # the wildcard MILP formulates k-anonymity
    models = [lp.KAnonymity(k)] + ([lp.DistinctLDiversity(ell)] if ell else [])
    table = KeyTable.build(df, qi, "s")
    weights = table.weights({qi[0]: 2.0} if weighted else None)
    if not _valid(table, (2 ** len(qi) - 1,) * table.keys, k, ell, semantics):
        with pytest.raises(InfeasibleError):
            suppress_cells(df, qi, "s", models, semantics=semantics)
        return
    brute = _brute(table, weights, k, ell, semantics, safe_intact=semantics == "wildcard")
    out = exact_masks(table, models, weights, semantics, 30)
    assert out.optimal and out.objective == pytest.approx(brute)
    assert _valid(table, tuple(int(m) for m in out.masks), k, ell, semantics)
    greedy, _ = greedy_masks(table, models, weights, semantics)
    assert _valid(table, tuple(int(m) for m in greedy), k, ell, semantics)
    assert float(table.n @ mask_costs(weights)[greedy]) >= brute - 1e-9
    if semantics == "wildcard":  # the unrestricted optimum can only be lower
        assert _brute(table, weights, k, ell, semantics, safe_intact=False) <= brute


@settings(max_examples=40, deadline=None)
@given(df=small_tables(), k=st.integers(2, 3), semantics=st.sampled_from(["value", "wildcard"]),
       method=st.sampled_from(["greedy", "exact"]))
def test_every_release_verified_and_counted(df: pl.DataFrame, k: int, semantics: str,
                                            method: str) -> None:
    qi = [c for c in df.columns if c != "s"]
    try:
        res = suppress_cells(df, qi, "s", lp.KAnonymity(k), semantics=semantics, method=method)
    except InfeasibleError:
        assert df.height < k
        return
    out = res.output.collect()
    assert out.height == df.height
    # the released rows, with the suppressed cells put back, are the input rows
    nulls = {q: int(out.get_column(q).null_count()) for q in qi}
    assert nulls == res.utility["cells_suppressed"] == res.verification.suppressed_cells
    assert res.cells_suppressed == sum(nulls.values())
    touched = int(out.select(pl.any_horizontal(pl.col(q).is_null() for q in qi).sum()).item())
    assert touched == res.records_touched
    kept = out.filter(~pl.any_horizontal(pl.col(q).is_null() for q in qi))
    assert kept.join(df, on=[*qi, "s"], how="anti").height == 0
    assert out.get_column("s").sort().to_list() == df.get_column("s").sort().to_list()
    # the release's classes, checked row by row
    assert _valid_rows(out.select(qi).rows(), k, semantics)


def _valid_rows(rows: list[tuple[object, ...]], k: int, semantics: str) -> bool:
    """Every row's class (identical rows, or compatible ones with None as a wildcard) has at
    least k rows."""
    def together(p: tuple[object, ...], r: tuple[object, ...]) -> bool:
        if semantics == "value":
            return p == r
        return all(x == y or x is None or y is None for x, y in zip(p, r))
    return all(sum(together(p, r) for r in rows) >= k for p in rows)


def test_verifier_catches_a_failing_release() -> None:
    out = pl.DataFrame({"a": [1, 1, 2], "b": [1, None, 2], "s": ["x", "y", "x"]})
    assert not verify_release(out, ["a", "b"], "s", [lp.KAnonymity(2)], "value").passed
    assert not verify_release(out, ["a", "b"], "s", [lp.KAnonymity(2)], "wildcard").passed
    ok = out.with_columns(pl.lit(None, pl.Int64).alias("b"))
    assert verify_release(ok, ["a", "b"], "s", [lp.KAnonymity(1)], "wildcard").passed


def test_plan_is_applied_identically_by_a_duckdb_join() -> None:
    import duckdb

    df = pl.DataFrame({"a": [1, 1, 2, 3, 3, 3], "b": ["x", "x", "y", "z", "z", "w"],
                       "s": list("pqpqpq")})
    res = suppress_cells(df, ["a", "b"], "s", lp.KAnonymity(2), method="exact")
    plan = res.plan.table
    con = duckdb.connect()
    con.register("data", df.to_arrow())
    con.register("plan", plan.to_arrow())
    rows = con.sql('SELECT p."__ldiv_out_0" AS a, p."__ldiv_out_1" AS b, d.s FROM data d '
                   'JOIN plan p USING (a, b)').pl()
    key = ["a", "b", "s"]
    assert rows.sort(key, nulls_last=True).rows() == \
        res.output.collect().sort(key, nulls_last=True).rows()


def _entropy_ok(counts: list[int], ell: float) -> bool:
    total = sum(counts)
    h = -sum(c / total * math.log(c / total) for c in counts if c)
    return h >= math.log(ell) - 1e-12


@settings(max_examples=40, deadline=None)
@given(df=small_tables(), semantics=st.sampled_from(["value", "wildcard"]),
       model=st.sampled_from(["entropy", "recursive"]))
def test_greedy_releases_pass_entropy_and_recursive_l(df: pl.DataFrame, semantics: str,
                                                     model: str) -> None:
    """The greedy takes the models the MILP does not; its releases pass, read back row by row
    by a brute force (entropy: -sum p ln p >= ln l; recursive (c, l): r1 < c (r_l + ...))."""
    qi = [c for c in df.columns if c != "s"]
    m = lp.EntropyLDiversity(1.5) if model == "entropy" else lp.RecursiveCLDiversity(3, 2)
    try:
        res = suppress_cells(df, qi, "s", m, semantics=semantics)
    except InfeasibleError:
        return
    out = res.output.collect()
    rows = out.select(qi).rows()
    sens = out.get_column("s").to_list()
    for p in rows:
        members = [s for r, s in zip(rows, sens) if (
            p == r if semantics == "value"
            else all(x == y or x is None or y is None for x, y in zip(p, r)))]
        counts = sorted((members.count(v) for v in set(members)), reverse=True)
        if model == "entropy":
            assert _entropy_ok(counts, 1.5)
        else:
            assert counts[0] < 3 * sum(counts[1:])


def test_importance_decides_which_cell_goes() -> None:
    # four lone records: suppressing every a (classes (*, x), (*, y)) or every b ((1, *),
    # (2, *)) costs four cells either way; the less important QI is the one suppressed
    df = pl.DataFrame({"a": [1, 1, 2, 2], "b": ["x", "y", "x", "y"], "s": list("pqpq")})
    for order, gone in ((["a", "b"], "b"), (["b", "a"], "a")):
        for method in ("greedy", "exact"):
            res = suppress_cells(df, ["a", "b"], "s", lp.KAnonymity(2), importance=order,
                                 method=method)
            assert res.utility["cells_suppressed"][gone] == 4, (order, method)
            assert res.cells_suppressed == 4


def test_nulls_in_the_input_are_a_typed_error() -> None:
    df = pl.DataFrame({"a": [1, None, 2], "b": ["x", "x", "y"]})
    with pytest.raises(lp.NullValuesError, match="suppressed cells as null"):
        suppress_cells(df, ["a", "b"], None, lp.KAnonymity(1))


def test_sink_writes_atomically_and_reverifies(tmp_path) -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "x", "y", "y", "y"], "s": list("pqpqp")})
    src = tmp_path / "in.parquet"
    df.write_parquet(src)
    res = suppress_cells(src, ["a", "b"], "s", lp.KAnonymity(2), verify=False)
    assert res.verification is None
    for name in ("out.parquet", "out.csv"):
        res.sink(tmp_path / name)
        assert res.verification is not None and res.verification.passed
        back = pl.read_parquet(tmp_path / name) if name.endswith("parquet") else \
            pl.read_csv(tmp_path / name)
        assert back.height == df.height
        assert {q: back.get_column(q).null_count() for q in ("a", "b")} == \
            res.utility["cells_suppressed"]
    with pytest.raises(lp.LdivError):
        res.sink(src)  # never over an input
    assert pl.read_parquet(src).equals(df)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.csv",
                                                          "out.parquet"]


def _moderate_table(seed: int = 7) -> pl.DataFrame:
    """3,000 records over 4 QIs of 6 values each: hundreds of keys, many of them unsafe."""
    rng = np.random.default_rng(seed)
    cols = {c: rng.integers(0, 6, 3000) for c in ["a", "b", "c", "d"]}
    return pl.DataFrame({**cols, "s": rng.integers(0, 4, 3000)})


def test_exact_with_no_time_left_returns_the_greedy_release_marked_as_such() -> None:
    df = _moderate_table()
    qi = ["a", "b", "c", "d"]
    res = suppress_cells(df, qi, "s", lp.KAnonymity(3), method="exact", time_limit=0)
    greedy = suppress_cells(df, qi, "s", lp.KAnonymity(3), method="greedy")
    d = res.details
    assert d["status"] == "time_limit" and d["release_from"] == "greedy"
    assert d["bound"] is None and d["gap"] is None and "phase_s" not in d["steps"]
    assert d["cost"] == d["greedy_cost"] == greedy.details["cost"]
    assert res.cells_suppressed == greedy.cells_suppressed > 0
    assert res.verification is not None and res.verification.passed  # re-verified from rows
    table = KeyTable.build(df, qi, "s")
    none = exact_masks(table, [lp.KAnonymity(3)], table.weights(None), "value", 0)
    assert none.masks is None and none.status == "time_limit" and none.objective is None


def test_exact_reports_what_it_has_whatever_the_limit() -> None:
    df = _moderate_table(11)
    qi = ["a", "b", "c", "d"]
    table = KeyTable.build(df, qi, "s")
    models = [lp.KAnonymity(3)]
    greedy, _ = greedy_masks(table, models, table.weights(None), "value")
    g_cost = float(table.n @ mask_costs(table.weights(None))[greedy])
    for limit in (1.5, 30):
        out = exact_masks(table, models, table.weights(None), "value", limit, incumbent=greedy)
        assert out.status in ("optimal", "time_limit") and out.masks is not None
        assert out.objective <= g_cost
        assert out.steps["found_by"] in ("incumbent", "dive", "near", "milp")
        assert _valid(table, tuple(int(m) for m in out.masks), 3, 0, "value")
        if out.bound is not None:
            assert out.bound <= out.objective + 1e-9
            assert out.gap == pytest.approx((out.objective - out.bound) / out.objective)


def test_near_milp_and_cutoff_keep_the_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the dive (the greedy release the incumbent): the near MILPs, then the final
    MILP under its cutoff, reach the optimum HiGHS finds on the whole program (no
    reduced-cost fixing, no cutoff, no near MILP), proven optimal."""
    from ldiv_polars.local import milp as milp_mod

    def lp_only(self, lp_res, semantics):  # type: ignore[no-untyped-def]
        self.bound = lp_res.fun

    monkeypatch.setattr(milp_mod._Search, "lp_and_dive", lp_only)
    table = KeyTable.build(_moderate_table(3), ["a", "b", "c", "d"], "s")
    models = [lp.KAnonymity(4)]
    weights = table.weights(None)
    greedy, _ = greedy_masks(table, models, weights, "value")
    out = exact_masks(table, models, weights, "value", 120, incumbent=greedy)
    unsafe = table.n < 4
    prog = milp_mod._Program(table, *milp_mod._candidates(table, unsafe, "value"), weights)
    prog.pattern_rows(models, "value", 4, 0)
    whole = prog.solve(prog.upper(), 120)
    assert whole.optimal and out.optimal and out.objective == whole.cost
    assert out.objective < float(table.n @ mask_costs(weights)[greedy])
    assert _valid(table, tuple(int(m) for m in out.masks), 4, 0, "value")
    assert out.steps["found_by"] in ("near", "milp") and out.steps["near"]


def test_exact_keeps_the_incumbent_when_every_solver_call_is_cut(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every HiGHS call killed at its limit (``call_within`` answering ``TIMED_OUT``): no LP
    bound, no dive, no MILP; the greedy release comes back, marked as found by the incumbent,
    with the time-limit status."""
    from ldiv_polars.core.limited import TIMED_OUT
    from ldiv_polars.local import milp as milp_mod

    calls: list[float] = []

    def cut(fn, args, seconds):  # type: ignore[no-untyped-def]
        calls.append(seconds)
        return TIMED_OUT

    monkeypatch.setattr(milp_mod, "call_within", cut)
    table = KeyTable.build(_moderate_table(5), ["a", "b", "c", "d"], "s")
    models = [lp.KAnonymity(3)]
    greedy, _ = greedy_masks(table, models, table.weights(None), "value")
    out = exact_masks(table, models, table.weights(None), "value", 30, incumbent=greedy)
    assert calls and all(0 < s <= 30 for s in calls)
    assert out.status == "time_limit" and out.steps["found_by"] == "incumbent"
    assert out.bound is None and (out.masks == greedy).all()


def test_a_final_milp_stopped_by_highs_is_a_solver_error_not_a_time_limit():
    """HiGHS can stop with "Solve error" (status 4) well within its time: the outcome says so
    (status ``solver_error``, the message in ``steps``), keeps the best release and its bound,
    and does not claim the time limit was reached."""
    from scipy.optimize import OptimizeResult

    from ldiv_polars.local import milp as milp_mod

    res = OptimizeResult(status=4, message="HiGHS Status 4: Solve error", x=None, fun=None,
                         mip_dual_bound=None)
    done = milp_mod._Program.read(None, res, np.zeros(0, dtype=np.int64))  # type: ignore[arg-type]
    assert done.error == "HiGHS Status 4: Solve error" and not done.optimal
    search = milp_mod._Search(None, 0.0, 60.0, True)  # type: ignore[arg-type]
    search.offer(np.zeros(3, dtype=np.int64), 12.0, "incumbent")
    search.bound = 10.5
    search._proof(done, known=True)
    assert search.status == "solver_error"
    assert search.steps["solver_error"] == "HiGHS Status 4: Solve error"
    assert search.best_cost == 12.0 and search.bound == 10.5
    # a time limit (status 1) with its bound is not an error
    limit = OptimizeResult(status=1, message="Time limit reached", x=None, fun=None,
                           mip_dual_bound=11.5)
    done = milp_mod._Program.read(None, limit, np.zeros(0, dtype=np.int64))  # type: ignore[arg-type]
    search = milp_mod._Search(None, 0.0, 60.0, True)  # type: ignore[arg-type]
    search.offer(np.zeros(3, dtype=np.int64), 12.0, "incumbent")
    search._proof(done, known=True)
    assert done.error is None and search.status == "optimal"  # ceil(11.5) = 12: proven
