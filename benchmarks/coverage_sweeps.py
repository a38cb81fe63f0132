"""What the coverage sweeps cost: wall time, peak memory, throughput, where time goes.

Three measurements, each printing figures and asserting nothing:

``session``
    every claim through ``torchclaims verify`` on the backend, as ``nox -s xla``
    runs it (without creating the virtual environment): total wall time, peak
    memory of the whole process tree, the slowest claims, and the figures the
    two sweeps recorded.
``operators`` / ``architectures``
    one sweep in this process: cells, samples, cells/s, samples/s and
    operators/s, peak memory, worker starts, time per phase and the slowest
    cells.

Usage (in the environment that has the backend, e.g. ``.nox/xla/bin/python``)::

    PJRT_DEVICE=CPU python benchmarks/coverage_sweeps.py session --backend xla
    PJRT_DEVICE=CPU python benchmarks/coverage_sweeps.py operators --backend xla --max-samples 8
    python benchmarks/coverage_sweeps.py architectures --backend cpu
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from torchclaims.coverage.operators import DEFAULT_MAX_SAMPLES  # noqa: E402


class PeakMemory:
    """Samples the resident memory of a process and all its descendants."""

    def __init__(self, root_pid: int, every_s: float = 0.5):
        self.root, self.every, self.peak_bytes = root_pid, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _tree_rss(self) -> int:
        parents, rss = {}, {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(stat[1])
                rss[int(entry.name)] = int(stat[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                continue
        tree, frontier = {self.root}, [self.root]
        while frontier:
            parent = frontier.pop()
            children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
            tree.update(children)
            frontier.extend(children)
        return sum(rss.get(pid, 0) for pid in tree)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, self._tree_rss())
            self._stop.wait(self.every)


def gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def session(args) -> None:
    with tempfile.TemporaryDirectory(prefix="tc-bench-") as tmp:
        command = [
            sys.executable,
            "-m",
            "torchclaims",
            "verify",
            "--backend",
            args.backend,
            "--output",
            f"{tmp}/results.json",
            "--records-dir",
            f"{tmp}/records",
            "--force",
            "--timeout",
            str(args.timeout),
        ]
        env = dict(os.environ, TORCHCLAIMS_BACKEND=args.backend)
        began = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        with PeakMemory(process.pid) as memory:
            output, _ = process.communicate()
        wall = time.perf_counter() - began
        results = json.loads(Path(f"{tmp}/results.json").read_text()) if Path(f"{tmp}/results.json").exists() else None
        if args.save and results is not None:
            Path(args.save).write_text(json.dumps(results))
    print(f"session: torchclaims verify --backend {args.backend} (every claim, --force)")
    print(
        f"  wall time {wall / 60:.1f} min ({wall:.0f} s); peak memory of the process tree {gib(memory.peak_bytes)}; "
        f"exit code {process.returncode}"
    )
    if results is None:
        print(output[-3000:])
        return
    records = sorted(results["records"], key=lambda r: -r["duration_s"])
    print(f"  {len(records)} claims; verdicts {dict(Counter(r['verdict'] for r in records))}")
    for record in records:
        if record["verdict"] == "error":
            print(f"  error: {record['claim_id']}: {record['reason'][:300]}")
    print("  slowest claims: " + ", ".join(f"{r['claim_id']} {r['duration_s']:.0f} s" for r in records[:8]))
    for record in records:
        for table in record.get("tables", []):
            measures = {m["name"]: m["value"] for check in record["checks"] for m in check["measurements"]}
            took = measures.get("sweep took")
            print(
                f"  {record['claim_id']}: {len(table['rows'])} rows, sweep {took} s, claim {record['duration_s']:.0f} s"
            )


def save(args, table) -> None:
    if args.save:
        Path(args.save).write_text(table.model_dump_json())


def operators(args) -> None:
    from torchclaims.coverage.operators import sweep_operators

    with PeakMemory(os.getpid()) as memory:
        sweep = sweep_operators(
            args.backend, max_samples=args.max_samples, workers=args.workers, tuned_workers=not args.default_settings
        )
    table = sweep.table
    save(args, table)
    cells = len(sweep.cell_seconds)
    listed = sum(c.listed for c in table.columns)
    outcomes = Counter(outcome for _, _, outcome, _, _ in table.cells())
    print(
        f"operators on {args.backend}: {len(table.rows)} op_db entries, {listed} operator x dtype cells "
        f"({cells} run, the rest excluded by OpInfo), {sweep.samples_run} samples, at most {args.max_samples} per cell"
    )
    print(
        f"  wall {sweep.seconds:.0f} s with {sweep.workers} workers ({sweep.worker_starts} started); peak memory "
        f"{gib(memory.peak_bytes)}"
    )
    print(
        f"  throughput: {len(table.rows) / sweep.seconds:.2f} operators/s, {cells / sweep.seconds:.2f} cells/s, "
        f"{sweep.samples_run / sweep.seconds:.1f} samples/s"
    )
    busy = sum(sweep.cell_seconds.values())
    print(
        f"  worker time {busy:.0f} s: making samples {sweep.timing.get('samples_s', 0):.0f} s, device calls and "
        f"fallback probe {sweep.timing.get('device_s', 0):.0f} s, CPU reference and comparison "
        f"{sweep.timing.get('cpu_s', 0):.0f} s, the rest (pipes, recovery) {busy - sum(sweep.timing.values()):.0f} s; "
        f"worker start-up not included"
    )
    print(f"  outcomes: {dict(outcomes.most_common())}")
    slow = sorted(sweep.cell_seconds.items(), key=lambda kv: -kv[1])[:10]
    print("  slowest cells: " + ", ".join(f"{name} {s:.1f} s" for name, s in slow))


def architectures(args) -> None:
    from torchclaims.coverage.architectures import sweep_architectures

    with PeakMemory(os.getpid()) as memory:
        table, facts = sweep_architectures(args.backend, workers=args.workers, tuned_workers=not args.default_settings)
    save(args, table)
    result = table.column("result")
    print(f"architectures on {args.backend}: {len(table.rows)} listed; {dict(result.count())}")
    print(
        f"  wall {facts['seconds']:.0f} s with {facts['workers']} workers ({facts['worker_starts']} started); "
        f"peak memory {gib(memory.peak_bytes)}; {len(table.rows) / facts['seconds']:.2f} architectures/s"
    )
    slow = sorted(facts["item_seconds"].items(), key=lambda kv: -kv[1])[:10]
    print("  slowest: " + ", ".join(f"{name} {s:.1f} s" for name, s in slow))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["session", "operators", "architectures"])
    parser.add_argument("--backend", default=os.environ.get("TORCHCLAIMS_BACKEND", "cpu"))
    parser.add_argument("--max-samples", type=int, default=DEFAULT_MAX_SAMPLES)
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="default: up to one per core (memory permitting), grown into as cores fall idle",
    )
    parser.add_argument("--timeout", type=float, default=2400, help="seconds per claim (session)")
    parser.add_argument(
        "--default-settings",
        action="store_true",
        help="sweep workers keep the backend's defaults (see coverage.worker_settings)",
    )
    parser.add_argument("--save", help="write the sweep's table (or the session's results file) here")
    args = parser.parse_args()
    {"session": session, "operators": operators, "architectures": architectures}[args.what](args)


if __name__ == "__main__":
    main()
