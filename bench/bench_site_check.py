"""What checking a site's rows against its release plan costs (trust10), alternated in one
process on synthetic rows written to Parquet (``ldiv synth``'s generator, the demo
hierarchies): the release alone (``apply_plan`` with ``check_site_rows`` a no-op: the
baseline), ``apply_plan`` (one frequency set of the site's rows, before anything is written,
then the release), and ``release_site`` (what ``ldiv apply-plan`` runs: the check, the release
and its re-verification, which reads the expected class sizes from the check's frequency set)
against ``release_site`` counting the rows a second time, as it did before.

    .venv/bin/python bench/bench_site_check.py                  # 1M rows, 5 reps
    .venv/bin/python bench/bench_site_check.py --rows 200000 --reps 3

Prints the medians and their ratios to the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_check import SYNTH_QI, SYNTH_SA, fmt_s, machine  # noqa: E402

import ldiv_polars.search.federated as federated  # noqa: E402
from ldiv_polars.cli.anonymize import demo_hierarchies  # noqa: E402
from ldiv_polars.datasets.synth import write_synthetic  # noqa: E402
from ldiv_polars.models import KAnonymity  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site.parquet"
        write_synthetic(site, args.rows)
        hs = demo_hierarchies(site, SYNTH_QI)
        fs = federated.site_counts(str(site), SYNTH_QI, SYNTH_SA)
        _, plan = federated.anonymize_counts([fs], hs, KAnonymity(5), suppression=0.02,
                                             metric="loss")
        assert plan is not None
        runs = _alternate(str(site), plan, hs, Path(tmp) / "out.parquet", args.reps)
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(machine())
    print(f"{args.rows:,} synthetic rows, QIs {','.join(SYNTH_QI)}, levels {plan.levels}, "
          f"{len(plan.suppressed)} suppressed classes; median of {args.reps}")
    for name, t in med.items():
        print(f"  {name:<44} {fmt_s(t):>9}   {t / med['release only (baseline)']:.2f}x")
    return 0


def _alternate(site: str, plan: federated.ReleasePlan, hs: dict, out: Path,
               reps: int) -> dict[str, list[float]]:
    """The variants' wall times, alternated ``reps`` times: the release alone (the check a
    no-op), ``apply_plan`` (check, release), ``release_site`` as ``ldiv apply-plan`` runs it
    (check, release, re-verification from the check's frequency set) and as it ran before
    (the re-verification counting the rows again)."""
    checked, verified = federated.check_site_rows, federated._verified

    def recount(*a, expected=None, **k):  # type: ignore[no-untyped-def]
        return verified(*a, **k)

    variants = {
        "release only (baseline)": lambda: federated.apply_plan(site, plan, hs, out),
        "apply_plan (check, release)": lambda: federated.apply_plan(site, plan, hs, out),
        "release_site (check, release, verify)": lambda: federated.release_site(site, plan,
                                                                                hs, out),
        "release_site, rows counted twice (before)": lambda: federated.release_site(
            site, plan, hs, out),
    }
    runs: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(reps):
        for name, run in variants.items():
            federated.check_site_rows = (lambda *a, **k: None) if "baseline" in name \
                else checked
            federated._verified = recount if "before" in name else verified
            t0 = time.perf_counter()
            run()
            runs[name].append(time.perf_counter() - t0)
    federated.check_site_rows, federated._verified = checked, verified
    return runs


if __name__ == "__main__":
    raise SystemExit(main())
