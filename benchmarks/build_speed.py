"""What isolation costs a site build, against plain sphinx-gallery on the same scripts.

One run times, each on a fresh copy in a temporary folder and with fresh
compiler caches (``TMPDIR``):

(a) a cold build of this site (``TORCHCLAIMS_JOBS=2``);
(b) plain sphinx-gallery executing the same gallery scripts one after the
    other in its own process (a minimal ``conf.py``, the same interpreter);
(c) a rebuild with nothing changed, of both (the median of three);
(d) a rebuild after one script changed, of both;
(e) synthetic knowledge bases of 20 and of 200 tiny claims: cold, and rebuilt
    with nothing changed.

For each it prints the wall time, the peak memory of the whole process tree,
how many claims ran, whether any process imported torch, and whether any
process outlived the build; then each ratio beside its target. The verdicts
of (a) and (b) are compared claim by claim. It asserts nothing. Usage (in an
environment with the docs and claims extras, which ``nox -s benchmark`` makes)::

    python benchmarks/build_speed.py [--skip-kb] [--skip-site] [--keep DIR] [--json FILE]

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


def environment(tmp: Path, **extra: str) -> dict[str, str]:
    """The build's environment: fresh compiler caches under ``tmp`` and no inherited settings."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHCLAIMS_", "TORCHINDUCTOR_", "PYTHONPATH"))}
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


def site_and_plain(bench: Bench) -> dict:
    site = copy_project(bench.work / "site")
    plain = plain_project(site, bench.work / "plain")
    site_env = environment(bench.work / "tmp-site", TORCHCLAIMS_JOBS=WORKERS, TORCHCLAIMS_PUBLISH_DIR="_build/html")
    plain_env = environment(
        bench.work / "tmp-plain", **SCRIPT_ENV, TORCHCLAIMS_RECORDS_DIR=str(plain / "_build" / "records")
    )
    plain_env["PYTHONPATH"] = str(site / "src")
    site_records, plain_records = site / "_build" / "records" / "cpu", plain / "_build" / "records" / "cpu"
    out = {"claims": len(claim_scripts(site))}
    print(f"this site: {out['claims']} executable claims")
    out["site cold"] = bench.build("(a) torchclaims: cold build", site, site_env, site_records)
    out["plain cold"] = bench.build("(b) plain sphinx-gallery: cold build", plain, plain_env, plain_records)
    out["site same"] = bench.rebuilds("(c) torchclaims: nothing changed", site, site_env, site_records)
    out["plain same"] = bench.rebuilds("(c) plain sphinx-gallery: nothing changed", plain, plain_env, plain_records)
    touch(site / "gallery" / TOUCHED)
    touch(plain / "gallery" / TOUCHED)
    out["site touched"] = bench.build(f"(d) torchclaims: {TOUCHED} changed", site, site_env, site_records)
    out["plain touched"] = bench.build(f"(d) plain sphinx-gallery: {TOUCHED} changed", plain, plain_env, plain_records)
    out["verdicts"] = (
        {k: r["verdict"] for k, r in records(site_records).items()},
        {k: r["verdict"] for k, r in records(plain_records).items()},
    )
    out["compute"] = sum(r["duration_s"] for r in records(site_records).values())
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
        cold = site["site cold"].seconds / site["plain cold"].seconds
        line("cold build / plain sphinx-gallery cold (2 workers vs serial)", cold, "<= 0.7", cold <= 0.7)
        same = median(site["site same"]) / median(site["plain same"])
        line("no-change rebuild / plain no-change rebuild (medians of 3)", same, "<= 1.0", same <= 1.0)
        reran = max(r for label, _, r in bench.rows if label.startswith("(c) torchclaims"))
        line("  claims re-run in the no-change rebuilds", reran, "0", reran == 0, unit=" ")
        importers = sum(len(r.torch_imported_by) for r in site["site same"])
        line("  processes that imported torch in the no-change rebuilds", importers, "0", importers == 0, unit=" ")
        touched = site["site touched"].seconds / site["plain touched"].seconds
        line("one script changed / plain, one script changed", touched, "", None)
        pss, rss = site["site cold"].peak_pss_mb / 1024, site["site cold"].peak_rss_mb / 1024
        line("peak memory of the process tree, cold build, PSS (GB)", pss, "<= 2", pss <= 2, unit=" ")
        line(
            "  the same as RSS summed over processes (a shared page counted in each) (GB)",
            rss,
            "<= 2",
            rss <= 2,
            unit=" ",
        )
        line("  plain sphinx-gallery, PSS (GB)", site["plain cold"].peak_pss_mb / 1024, "", None, unit=" ")
        line(
            "claims' own compute (sum of durations) / cold build wall time",
            site["compute"] / site["site cold"].seconds,
            "",
            None,
        )
        left = sum(len(r.left_behind) for label, r, _ in bench.rows if "torchclaims" in label)
        line("processes left behind by torchclaims builds", left, "0", left == 0, unit=" ")
        ours, theirs = site["verdicts"]
        differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        line("claims whose verdict differs from the plain run", len(differ), "0", not differ, unit=" ")
        for claim_id in differ:
            print(
                f"    {claim_id}: torchclaims {ours.get(claim_id, 'no record')}, "
                f"plain {theirs.get(claim_id, 'no record')}"
            )
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--skip-site", action="store_true", help="leave out (a)-(d): only the synthetic knowledge bases"
    )
    parser.add_argument("--skip-kb", action="store_true", help="leave out (e)")
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
        site = None if args.skip_site else site_and_plain(bench)
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
