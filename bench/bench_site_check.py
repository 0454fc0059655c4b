"""What checking a site's rows against its release plan costs (trust10): ``apply_plan`` with
``check_site_rows`` (one frequency set of the site's rows, before anything is written) against
the same release with that check replaced by a no-op, alternated in one process, on synthetic
rows written to Parquet (``ldiv synth``'s generator and the demo hierarchies).

    .venv/bin/python bench/bench_site_check.py                  # 1M rows, 5 reps
    .venv/bin/python bench/bench_site_check.py --rows 200000 --reps 3

Prints the medians and the ratio (with check / without).
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
        checked = federated.check_site_rows
        runs: dict[str, list[float]] = {"check": [], "none": []}
        for _ in range(args.reps):
            for name in ("check", "none"):
                federated.check_site_rows = checked if name == "check" \
                    else (lambda *a, **k: None)
                t0 = time.perf_counter()
                federated.apply_plan(str(site), plan, hs, Path(tmp) / "out.parquet")
                runs[name].append(time.perf_counter() - t0)
        federated.check_site_rows = checked
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(machine())
    print(f"apply_plan, {args.rows:,} synthetic rows, QIs {','.join(SYNTH_QI)}, levels "
          f"{plan.levels}, {len(plan.suppressed)} suppressed classes; median of {args.reps}")
    print(f"  with check_site_rows {fmt_s(med['check'])}   without {fmt_s(med['none'])}   "
          f"ratio {med['check'] / med['none']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
