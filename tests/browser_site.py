"""A small site built once per test session for the browser tests, and a web server for it.

Claims of two topics with every verdict, a claim about another vendor's
hardware, an attributed claim, a value too long to show whole, a figure, a
page for two accelerators (and their choice on the home page); then a
results file from XLA on the CPU and one from another torch version, as a team
with hardware and an older build would leave them. The published folder
(``_build/site``) is what the browser reads.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import threading
from dataclasses import dataclass
from pathlib import Path

from kb import build, moved, write_accelerator_pages, write_claim, write_site, xla_sweep_table
from torchclaims.evidence.records import Verdict, read_record
from torchclaims.evidence.results import build_results, write_results

XLA_REASON = "addition on the device: the sum is off by one on XLA"  # kb-holds, refuted on XLA on the CPU
LONG_VALUE = "XLA_FLAGS= --xla_cpu_enable_fast_math=false " + "and-a-long-tail " * 20

INDEX = """\
# Fixture knowledge base

```{accelerator-choice}
```

```{claims-matrix}
```

```{toctree}
docs/topic
docs/compile
docs/coverage
docs/changes
docs/auto_gallery/index
```
"""

LONG_BODY = f"""
with v.check("keeps a long value") as check:
    check.equal("{LONG_VALUE}", "{LONG_VALUE}", "the flags")
v.finish()
"""


@dataclass
class Site:
    root: Path
    stderr: str

    @property
    def published(self) -> Path:
        return self.root / "_build" / "site"


def build_browser_site(root: Path) -> Site:
    write_site(root)
    with (root / "conf.py").open("a") as conf:
        conf.write('html_theme = "furo"  # the theme of the real site, with its phone layout and dark mode\n')
    (root / "index.md").write_text(INDEX)
    write_accelerator_pages(root, ("neuron", "xla"))
    (root / "docs" / "matrix.md").unlink()
    (root / "docs" / "compile.md").write_text("# Compile\n\n```{topic-claims} compile\n```\n")
    write_claim(root, "kb-holds", "holds")
    write_claim(root, "kb-refuted", "refuted")
    write_claim(root, "kb-unverified", "unverified")
    write_claim(root, "kb-raise", "raise")
    write_claim(root, "kb-said", None)
    write_claim(root, "kb-vendor", "holds", about=("neuron",), claimed_by=("AWS",), relation="narrows")
    write_claim(root, "kb-figure", "figure", topic="compile", about=("cpu", "xla"))
    write_claim(root, "kb-long", LONG_BODY, topic="compile")
    write_claim(root, "kb-sweep", "sweep", topic="compile")
    (root / "docs" / "coverage.md").write_text("# Coverage\n\n```{coverage-table} kb-sweep\n```\n")
    first = build(root, TORCHCLAIMS_PUBLISH_DIR="_build/site")
    if first.returncode != 0:
        raise RuntimeError(first.stderr[-3000:])
    records = {p.stem: read_record(p) for p in (root / "_build" / "records" / "cpu").glob("*.json")}
    off_by_one = [  # a failing measurement against its bound, as a refutation on XLA reads
        c.model_copy(
            update={
                "outcome": Verdict.REFUTED,
                "measurements": [m.model_copy(update={"value": 1.0}) for m in c.measurements],
            }
        )
        for c in records["kb-holds"].checks
    ]
    refuted = records["kb-holds"].model_copy(
        update={"verdict": Verdict.REFUTED, "reason": XLA_REASON, "checks": off_by_one}
    )
    sweep = records["kb-sweep"].model_copy(update={"tables": [xla_sweep_table()]})
    on_xla = [refuted, sweep] + [records[i] for i in ("kb-unverified", "kb-figure", "kb-long")]
    _results_file(
        root,
        "xla-run",
        on_xla,
        backend="xla",
        torch="2.9.0",
        packages={"torch_xla": "2.9.0"},
        device_name="XLA CPU (Test CPU)",
    )
    _results_file(
        root, "cpu-older", list(records.values()), backend="cpu", torch="2.12.0", packages={}, device_name="Older CPU"
    )
    second = build(root, TORCHCLAIMS_PUBLISH_DIR="_build/site")
    if second.returncode != 0:
        raise RuntimeError(second.stderr[-3000:])
    return Site(root, second.stderr)


def _results_file(
    root: Path, name: str, records: list, backend: str, torch: str, packages: dict, device_name: str
) -> None:
    """The records, as if run on another backend or version, in a results file under results/."""
    env = moved(records[0].environment, backend, torch, packages, device_name=device_name)
    copies = [r.model_copy(update={"environment": env, "figures": []}) for r in records]
    (root / "results").mkdir(exist_ok=True)
    write_results(root / "results" / f"{name}.json", build_results(copies, env, label=f"{name} box"))


class Server:
    """The published folder over HTTP on the loopback address, as a reader would get it;
    ``compress``: text gzip-compressed to a client that accepts it, as a static host serves it."""

    def __init__(self, folder: Path, compress: bool = False) -> None:
        handler = functools.partial(_GzipHandler if compress else _QuietHandler, directory=str(folder))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
        pass


class _GzipHandler(_QuietHandler):
    """Pages, scripts, styles and data gzip-compressed; anything else as the base class sends it."""

    COMPRESSED = (".html", ".js", ".css", ".json", ".svg", ".txt", ".csv")

    def do_GET(self) -> None:
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        if (
            "gzip" not in self.headers.get("Accept-Encoding", "")
            or path.suffix not in self.COMPRESSED
            or not path.is_file()
        ):
            super().do_GET()
            return
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        self.wfile.write(body)
