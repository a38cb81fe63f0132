"""What isolation costs a site build, against plain sphinx-gallery on the same scripts.

One run times, each on a fresh copy in a temporary folder and with fresh
compiler caches (``TMPDIR``):

(a) cold builds of this site (``TORCHCLAIMS_JOBS=2``);
(b) cold builds of plain sphinx-gallery executing the same gallery scripts one
    after the other in its own process (a minimal ``conf.py``, the same
    interpreter), alternating with (a): site, plain, plain, site, ... so that
    a machine slowing down or speeding up meanwhile weighs on both alike;
(c) rebuilds with nothing changed, of both, alternating;
(d) a rebuild after one script changed, of both;
(e) synthetic knowledge bases of 20 and of 200 tiny claims: cold, and rebuilt
    with nothing changed.

Each ratio of (a)-(c) is of the two sides' medians: a single build's time on
a small machine varies by a tenth or more from one build to the next.

For each it prints the wall time, the peak memory of the whole process tree,
how many claims ran, whether any process imported torch, and whether any
process outlived the build; then each ratio beside its target. The verdicts
of (a) and (b) are compared claim by claim. It asserts nothing. Usage (in an
environment with the docs and claims extras, which ``nox -s benchmark`` makes)::

    python benchmarks/build_speed.py [--skip-kb] [--skip-site] [--cold-runs N] [--keep DIR] [--json FILE]

``--json benchmarks/build_speed.json`` replaces the committed figures that
docs/speed.md shows; commit them only from a run on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

import build_watch  # noqa: E402
from build_watch import Run  # noqa: E402

WORKERS = "2"
# What the runner sets for every script, given to the plain run too so both run alike.
SCRIPT_ENV = {
    "MPLBACKEND": "Agg",
    "HF_HUB_OFFLINE": "1",
    "TORCHINDUCTOR_COMPILE_THREADS": "1",
    "TORCHCLAIMS_BACKEND": "cpu",
}
# The site's sphinx-build arguments: noxfile.SPHINX_BUILD, which tests/test_noxfile.py holds them to
SITE_BUILD = ("-q", "-j", str((os.cpu_count() or 1) + 1), "-b", "html", "-d", "_build/doctrees", ".", "_build/sphinx")
PLAIN_BUILD = ("-b", "html", "-d", "_build/doctrees", ".", "_build/sphinx")
TOUCHED = "device_switch_parity.py"  # the script changed for (d)

PLAIN_CONF = """\
project = "plain sphinx-gallery"
extensions = ["sphinx_gallery.gen_gallery"]
exclude_patterns = ["_build"]
sphinx_gallery_conf = {{
    "examples_dirs": ["gallery"],
    "gallery_dirs": ["docs/auto_gallery"],
    "filename_pattern": r".*",
    "ignore_pattern": r"{ignore}",
    "abort_on_example_error": False,
    "only_warn_on_example_error": True,
    "write_computation_times": False,
    "download_all_examples": False,
}}


def setup(app):
    app.add_role("claim-verdict", lambda *args, **kwargs: ([], []))  # torchclaims' role: nothing to show here
"""


def project_files(root: Path) -> list[str]:
    """The files of the working tree that git tracks or would track."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True, check=True
    )
    return [name for name in listed.stdout.decode().split("\0") if name and (root / name).is_file()]


def copy_project(destination: Path) -> Path:
    """The working tree as it is, in a clone that shares the repository's history:
    the build checks committed results files against the scripts' git history."""
    subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT), str(destination)], check=True)
    subprocess.run(["git", "reset", "--quiet"], cwd=destination, check=True)
    for name in project_files(ROOT):
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return destination


def claim_scripts(root: Path) -> list[str]:
    from torchclaims.claims import load_claims

    return sorted(Path(c.script).name for c in load_claims(root / "claims").executable())


def plain_project(site: Path, destination: Path) -> Path:
    """The site's gallery under a minimal sphinx-gallery conf: every claim script runs, nothing else.
    The claim records come along: a script may read one (a figure beside an attributed claim's)."""
    shutil.copytree(site / "gallery", destination / "gallery")
    shutil.copytree(site / "claims", destination / "claims")
    scripts = "|".join(name.replace(".", r"\.") for name in claim_scripts(site))
    (destination / "conf.py").write_text(PLAIN_CONF.format(ignore=rf"^_|^(?!({scripts})$)"))
    (destination / "index.rst").write_text(
        "Plain sphinx-gallery\n====================\n\n.. toctree::\n\n   docs/auto_gallery/index\n"
    )
    return destination


# Settings of the machine the benchmark runs on that a build must not inherit. Python's
# bytecode caches are among them: without them the site compiles its own package from
# source in every build (a tenth of a second of each rebuild), where plain sphinx-gallery
# imports nothing but installed packages, whose caches pip wrote.
NOT_INHERITED = ("TORCHCLAIMS_", "TORCHINDUCTOR_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


def environment(tmp: Path, **extra: str) -> dict[str, str]:
    """The build's environment: fresh compiler caches under ``tmp`` and no inherited settings."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_INHERITED)}
    return dict(env, TMPDIR=str(tmp), **extra)


def sphinx(root: Path) -> list[str]:
    """The site builds as ``nox -s docs`` builds it; the plain project with sphinx-build's defaults."""
    args = SITE_BUILD if (root / "noxfile.py").is_file() else PLAIN_BUILD
    return [sys.executable, "-m", "sphinx", *args]


def records(directory: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
            found[data["claim_id"]] = data
        except (OSError, ValueError, KeyError):
            continue
    return found


class Bench:
    def __init__(self, work: Path):
        self.work = work
        self.hooks = build_watch.install_hook(work / "hooks")
        self.rows: list[tuple[str, Run, int | None]] = []

    def build(self, label: str, root: Path, env: dict[str, str], records_dir: Path) -> Run:
        before = {k: r.get("started_at") for k, r in records(records_dir).items()}
        run = build_watch.run(sphinx(root), root, env, self.hooks)
        logs = self.work / "logs"
        logs.mkdir(exist_ok=True)
        (logs / f"{len(self.rows):02d}.log").write_text(f"{label}\n{run.output}")
        after = records(records_dir)
        reran = sum(1 for k, r in after.items() if before.get(k) != r.get("started_at"))
        self.rows.append((label, run, reran))
        state = "ok" if run.returncode == 0 else f"exit {run.returncode}"
        print(f"  {label:<46} {run.seconds:7.1f} s  {state}", flush=True)
        if run.returncode != 0:
            print("\n".join(run.output.splitlines()[-15:]))
        build_watch.end(run.left_behind)
        return run

    def rebuilds(self, label: str, root: Path, env: dict[str, str], records_dir: Path, times: int = 3) -> list[Run]:
        return [self.build(f"{label} #{n + 1}", root, env, records_dir) for n in range(times)]


def median(runs: list[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def touch(script: Path) -> None:
    script.write_text(script.read_text() + "\n# changed by benchmarks/build_speed.py\n")


class Side(NamedTuple):
    """One of the two projects of a run, copied afresh for each cold build."""

    label: str
    root: Path
    env: dict[str, str]

    @property
    def records(self) -> Path:
        return self.root / "_build" / "records" / "cpu"

    def verdicts(self) -> dict[str, str]:
        return {k: r["verdict"] for k, r in records(self.records).items()}


def sides(work: Path, n: int) -> tuple[Side, Side]:
    """The site and the plain project, the ``n``-th fresh copy of each (own folders, own caches)."""
    site = copy_project(work / f"site-{n}")
    plain = plain_project(site, work / f"plain-{n}")
    site_env = environment(work / f"tmp-site-{n}", TORCHCLAIMS_JOBS=WORKERS, TORCHCLAIMS_PUBLISH_DIR="_build/html")
    plain_env = environment(
        work / f"tmp-plain-{n}", **SCRIPT_ENV, TORCHCLAIMS_RECORDS_DIR=str(plain / "_build" / "records")
    )
    plain_env["PYTHONPATH"] = str(site / "src")
    return Side("torchclaims", site, site_env), Side("plain sphinx-gallery", plain, plain_env)


def alternating(pair: tuple[Side, Side], n: int) -> tuple[Side, ...]:
    """Site first on even rounds, plain first on odd ones: site, plain, plain, site, ..."""
    return pair if n % 2 == 0 else pair[::-1]


def site_and_plain(bench: Bench, cold_runs: int, same_runs: int) -> dict:
    out = {"site cold": [], "plain cold": [], "site same": [], "plain same": [], "verdicts": []}
    for n in range(cold_runs):
        pair = sides(bench.work, n + 1)
        if n == 0:
            kept = pair  # the rebuilds below start from the first cold builds
            out["claims"] = len(claim_scripts(pair[0].root))
            print(f"this site: {out['claims']} executable claims")
        for side in alternating(pair, n):
            letter = "a" if side is pair[0] else "b"
            run = bench.build(f"({letter}) {side.label}: cold build #{n + 1}", side.root, side.env, side.records)
            out["site cold" if side is pair[0] else "plain cold"].append(run)
        out["verdicts"].append((pair[0].verdicts(), pair[1].verdicts()))
        if n == 0:
            out["compute"] = sum(r["duration_s"] for r in records(pair[0].records).values())
    site, plain = kept
    for n in range(same_runs):
        for side in alternating(kept, n):
            key = "site same" if side is site else "plain same"
            out[key].append(
                bench.build(f"(c) {side.label}: nothing changed #{n + 1}", side.root, side.env, side.records)
            )
    for side in kept:
        touch(side.root / "gallery" / TOUCHED)
        key = "site touched" if side is site else "plain touched"
        out[key] = bench.build(f"(d) {side.label}: {TOUCHED} changed", side.root, side.env, side.records)
    return out


def knowledge_base(bench: Bench, count: int) -> dict:
    from kb import write_claim, write_site

    root = bench.work / f"kb{count}"
    root.mkdir()
    write_site(root)
    for number in range(count):
        write_claim(root, f"tiny-{number:03d}", "holds")
    env = environment(bench.work / f"tmp-kb{count}", TORCHCLAIMS_TIMEOUT="300")
    env["PYTHONPATH"] = str(ROOT / "src")
    kept = root / "_build" / "records" / "cpu"
    cold = bench.build(f"(e) {count} tiny claims: cold build", root, env, kept)
    same = bench.rebuilds(f"(e) {count} tiny claims: nothing changed", root, env, kept)
    return {"cold": cold, "same": same, "compute": sum(r["duration_s"] for r in records(kept).values())}


def verdict_line(ok: bool | None) -> str:
    return {True: "met", False: "NOT MET", None: "-"}[ok]


def report(bench: Bench, site: dict | None, kbs: dict[int, dict]) -> dict:
    """Print the builds and the figures beside their targets; return the same as data (--json)."""
    load = os.getloadavg()
    measured_at = datetime.now(UTC)
    out = {
        "measured_at": f"{measured_at:%Y-%m-%d %H:%M} UTC",
        "cores": os.cpu_count(),
        "load_average": [round(x, 1) for x in load],
        "python": platform.python_version(),
        "claims": site["claims"] if site else None,
        "source": "python benchmarks/build_speed.py",
        "builds": [],
        "figures": [],
    }
    print()
    print(
        f"build speed, {out['measured_at']}, {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, Python {platform.python_version()}"
    )
    print()
    print(f"{'build':<48} {'wall s':>7} {'ran':>4} {'RSS MB':>7} {'PSS MB':>7}  torch imported by / left behind")
    for label, run, reran in bench.rows:
        importers = f"{len(run.torch_imported_by)} process(es)" if run.torch_imported_by else "no process"
        print(
            f"{label:<48} {run.seconds:7.1f} {reran if reran is not None else '-':>4} "
            f"{run.peak_rss_mb:7.0f} {run.peak_pss_mb:7.0f}  "
            f"{importers} / {len(run.left_behind)} left"
        )
        out["builds"].append(
            {
                "build": label,
                "seconds": round(run.seconds, 1),
                "claims_run": reran,
                "peak_rss_mb": round(run.peak_rss_mb),
                "peak_pss_mb": round(run.peak_pss_mb),
                "torch_imported_by": len(run.torch_imported_by),
                "left_behind": len(run.left_behind),
            }
        )
    print()
    print(f"{'figure':<62} {'value':>8}  {'target':<10} verdict")

    def line(what: str, value: float, target: str, ok: bool | None, unit: str = "x") -> None:
        print(f"{what:<62} {value:7.2f}{unit}  {target:<10} {verdict_line(ok)}")
        out["figures"].append(
            {
                "figure": what.strip(),
                "value": round(value, 2),
                "unit": unit.strip(),
                "target": target,
                "verdict": verdict_line(ok),
            }
        )

    if site:
        runs, same_runs = len(site["site cold"]), len(site["site same"])
        cold = median(site["site cold"]) / median(site["plain cold"])
        line(f"cold build / plain sphinx-gallery cold (medians of {runs} each)", cold, "<= 0.7", cold <= 0.7)
        for n, (ours, theirs) in enumerate(zip(site["site cold"], site["plain cold"], strict=True)):
            line(f"  cold builds #{n + 1}: 2 workers / serial", ours.seconds / theirs.seconds, "", None)
        same = median(site["site same"]) / median(site["plain same"])
        line(f"no-change rebuild / plain no-change rebuild (medians of {same_runs})", same, "<= 1.0", same <= 1.0)
        reran = max(r for label, _, r in bench.rows if label.startswith("(c) torchclaims"))
        line("  claims re-run in the no-change rebuilds", reran, "0", reran == 0, unit=" ")
        importers = sum(len(r.torch_imported_by) for r in site["site same"])
        line("  processes that imported torch in the no-change rebuilds", importers, "0", importers == 0, unit=" ")
        touched = site["site touched"].seconds / site["plain touched"].seconds
        line("one script changed / plain, one script changed", touched, "", None)
        pss = max(r.peak_pss_mb for r in site["site cold"]) / 1024
        rss = max(r.peak_rss_mb for r in site["site cold"]) / 1024
        line("peak memory of the process tree, cold build, PSS (GB)", pss, "<= 2", pss <= 2, unit=" ")
        line(
            "  the same as RSS summed over processes (a shared page counted in each) (GB)",
            rss,
            "<= 2",
            rss <= 2,
            unit=" ",
        )
        plain_pss = max(r.peak_pss_mb for r in site["plain cold"]) / 1024
        line("  plain sphinx-gallery, PSS (GB)", plain_pss, "", None, unit=" ")
        line(
            "claims' own compute (sum of durations) / cold build wall time (#1)",
            site["compute"] / site["site cold"][0].seconds,
            "",
            None,
        )
        left = sum(len(r.left_behind) for label, r, _ in bench.rows if "torchclaims" in label)
        line("processes left behind by torchclaims builds", left, "0", left == 0, unit=" ")
        builds = [
            (f"{who} #{n + 1}", verdicts)
            for n, pair in enumerate(site["verdicts"])
            for who, verdicts in zip(("torchclaims", "plain"), pair, strict=True)
        ]
        claim_ids = sorted(set().union(*(verdicts for _, verdicts in builds)))
        differ = [c for c in claim_ids if len({verdicts.get(c) for _, verdicts in builds}) > 1]
        line("claims whose verdict differs between any two cold builds", len(differ), "0", not differ, unit=" ")
        for claim_id in differ:
            print(f"    {claim_id}: " + ", ".join(f"{who} {v.get(claim_id, 'no record')}" for who, v in builds))
    if 20 in kbs and 200 in kbs:
        small, large = kbs[20], kbs[200]
        same = median(large["same"]) / median(small["same"])
        line("200-claim no-change rebuild / 20-claim one", same, "<= 2", same <= 2)
        # Linear in the claims' own compute: what the build spends beyond it, per
        # claim, does not grow with the number of claims (a load on the machine
        # slows the claims and the build alike, so this is read per claim).
        beyond = {n: (kb["cold"].seconds - kb["compute"] / int(WORKERS)) / n for n, kb in ((20, small), (200, large))}
        line(
            "cold build beyond the claims' own compute, per claim: 200 / 20",
            beyond[200] / beyond[20],
            "<= 1.0",
            beyond[200] <= beyond[20],
        )
        for count, kb in ((20, small), (200, large)):
            line(
                f"  {count} claims: cold build s / (claims' own compute s / {WORKERS} workers)",
                kb["cold"].seconds / (kb["compute"] / int(WORKERS)),
                "",
                None,
            )
    return out


def at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--skip-site", action="store_true", help="leave out (a)-(d): only the synthetic knowledge bases"
    )
    parser.add_argument("--skip-kb", action="store_true", help="leave out (e)")
    parser.add_argument(
        "--cold-runs",
        type=at_least_one,
        default=3,
        help="cold builds of each side for (a) and (b) (default %(default)s)",
    )
    parser.add_argument(
        "--same-runs",
        type=at_least_one,
        default=5,
        help="no-change rebuilds of each side for (c) (default %(default)s)",
    )
    parser.add_argument("--keep", type=Path, help="work in this (new) folder and keep it, instead of a temporary one")
    parser.add_argument(
        "--json",
        type=Path,
        help="also write the builds and figures here (benchmarks/build_speed.json is what docs/speed.md shows)",
    )
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="torchclaims-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    bench = Bench(work)
    try:
        site = None if args.skip_site else site_and_plain(bench, args.cold_runs, args.same_runs)
        kbs = {} if args.skip_kb else {count: knowledge_base(bench, count) for count in (20, 200)}
        figures = report(bench, site, kbs)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
            print(f"figures: {args.json}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
