"""A small knowledge base on disk, for tests that run scripts or build a site."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from torchclaims.evidence.records import Environment

SRC = Path(__file__).resolve().parents[1] / "src"

RECORD = """\
id = "{id}"
title = "Claim {id}"
proposition = "The proposition of claim {id}, which is checked by its script."
kind = "{kind}"
topic = "{topic}"
about = {about}
relation = "{relation}"
{script_line}
caveats = ["A caveat of {id}."]

[[sources]]
url = "https://docs.pytorch.org/{id}"
quote = "A verbatim quote for {id}"
publisher = "PyTorch documentation"
{claimant_lines}date = "2026-10"
"""

HEADER = '''"""
Claim {id}
========================================

:claim-verdict:`{id}`

Checks claim {id}.
"""
import torch
from torchclaims.verify import verification
v = verification("{id}", model="a tensor of three ones")
'''

# Bodies of scripts, by how they end. Each one is a complete gallery script.
BODIES = {
    "holds": """
with v.check("addition on the device") as check:
    check.close(torch.ones(3, device=v.device) * 2, torch.full((3,), 2.0), rtol=0, atol=0, what="sum")
v.finish()
""",
    "figure": """
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
with v.check("draws") as check:
    check.expect(True, "")
v.finish()
""",
    "refuted": """
with v.check("one equals two") as check:
    check.equal(1, 2, "one")
v.finish()
""",
    "unverified": """
with v.check("needs an accelerator") as check:
    check.unsupported("no accelerator on this machine")
v.finish()
""",
    "raise": """
print("printed before the raise")
raise ValueError("boom from the script")
""",
    "exit": """
import sys
sys.exit(3)
""",
    "os_exit": """
import os
os._exit(7)
""",
    "segfault": """
import ctypes
ctypes.string_at(0)
""",
    "sweep": """
from torchclaims.coverage import TableBuilder
from torchclaims.coverage.operators import OUTCOMES, SAMPLE_CODES
builder = TableBuilder("operators", "operator", ["add", "histc", "norm"], {"float32": OUTCOMES, "int64": OUTCOMES},
                       SAMPLE_CODES)
builder.set("add", "float32", "N", samples="nn")
builder.set("histc", "float32", "N", samples="n")
builder.set("norm", "float32", "X", "op_db skips it")
builder.set("add", "int64", "N", samples="n")
v.add_table(builder.table())
with v.check("the table is complete") as check:
    check.expect(True, "")
v.finish()
""",
    "hang": """
import time
time.sleep(3600)
""",
    "no_finish": """
with v.check("runs") as check:
    pass
""",
}


def xla_sweep_table():
    """The table of the "sweep" body as an XLA run might give it: histc falls back, norm differs on its 0-dim
    sample; as a sweep records it now, with argument kinds and the kernels norm dispatched on the device (the
    "sweep" body's own table has neither, as older records)."""
    from torchclaims.coverage.operators import OUTCOMES, SAMPLE_CODES
    from torchclaims.evidence.coverage_table import ARGUMENT_KINDS as KIND_LEGEND
    from torchclaims.evidence.coverage_table import TableBuilder

    columns = {"float32": OUTCOMES, "int64": OUTCOMES}
    builder = TableBuilder("operators", "operator", ["add", "histc", "norm"], columns, SAMPLE_CODES, KIND_LEGEND)
    builder.set("add", "float32", "N")
    builder.set("histc", "float32", "F", "CPU fallback: aten::histc")
    builder.set("norm", "float32", "M", "1 of 3 samples differ", samples="nmn", arguments="2/ 0/ 22/k")
    builder.add_operators("norm", ["aten::linalg_vector_norm"])
    builder.add_operators("norm", ["aten::linalg_vector_norm", "aten::abs"], on_device=True)
    builder.set("add", "int64", "N")
    return builder.table()


def write_claim(
    root: Path,
    claim_id: str,
    body: str | None,
    topic: str = "device-switch",
    about: tuple[str, ...] = ("cpu",),
    claimed_by: tuple[str, ...] = ("Tests",),
    relation: str = "is",
) -> None:
    """A record and (for executable claims) a script whose behaviour is ``body``."""
    script = f"gallery/{claim_id.replace('-', '_')}.py"
    kind = "executable" if body is not None else "attributed"
    script_line = f'script = "{script}"' if body is not None else ""
    (root / "claims").mkdir(parents=True, exist_ok=True)
    (root / "claims" / f"{claim_id}.toml").write_text(
        RECORD.format(
            id=claim_id,
            kind=kind,
            topic=topic,
            script_line=script_line,
            about=json.dumps(list(about)),
            relation=relation,
            claimant_lines=""
            if relation == "own-finding"
            else f"claimant = {json.dumps(claimed_by[0])}\nabout = {json.dumps(list(about))}\n",
        )
    )
    if body is not None:
        (root / "gallery").mkdir(parents=True, exist_ok=True)
        (root / script).write_text(HEADER.format(id=claim_id) + BODIES.get(body, body))


CONF = """
import os, sys
extensions = ["myst_parser", "sphinx_gallery.gen_gallery", "torchclaims.sphinxext"]
exclude_patterns = ["_build", ".*", "**/.*", "gallery", "claims", "results"]
include_patterns = ["index.md", "docs/**"]
html_theme = "alabaster"
sphinx_gallery_conf = {
    "examples_dirs": ["gallery"],
    "gallery_dirs": ["docs/auto_gallery"],
    "filename_pattern": r"(?!)",
    "ignore_pattern": r"^_",
    "write_computation_times": False,
    "download_all_examples": False,
}
torchclaims_timeout = os.environ.get("TORCHCLAIMS_TIMEOUT", "20")  # text, checked by the extension (as in conf.py)
torchclaims_parallel = 2
torchclaims_publish_dir = os.environ.get("TORCHCLAIMS_PUBLISH_DIR", "")
"""

INDEX = """\
# Fixture knowledge base

```{toctree}
docs/topic
docs/matrix
docs/changes
docs/auto_gallery/index
```
"""


def write_site(root: Path) -> None:
    (root / "conf.py").write_text(CONF)
    (root / "index.md").write_text(INDEX)
    docs = root / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "topic.md").write_text("# Topic\n\n```{topic-claims} device-switch\n```\n")
    (docs / "matrix.md").write_text("# Matrix\n\n```{claims-matrix}\n```\n")
    (docs / "changes.md").write_text("# Changes\n\n```{claims-changes}\n```\n")
    (root / "gallery").mkdir(exist_ok=True)
    (root / "gallery" / "GALLERY_HEADER.rst").write_text("Scripts\n=======\n")


def write_accelerator_pages(root: Path, backends: tuple[str, ...] = ("neuron", "xla")) -> None:
    """A page per backend (each only the directive), an index listing them, and the index in the site's toctree."""
    folder = root / "docs" / "accelerators"
    folder.mkdir(parents=True, exist_ok=True)
    for backend in backends:
        (folder / f"{backend}.md").write_text(f"```{{accelerator}} {backend}\n```\n")
    (folder / "index.md").write_text(
        "# Accelerators\n\n```{accelerator-choice}\n```\n\n```{toctree}\n"
        + "".join(f"{b}\n" for b in backends)
        + "```\n"
    )
    index = root / "index.md"
    index.write_text(index.read_text().replace("```{toctree}\n", "```{toctree}\ndocs/accelerators/index\n", 1))


def build(root: Path, *options: str, **env: str) -> subprocess.CompletedProcess:
    """Build the site in a separate process, as a user would (``options``: sphinx-build's, such as -q)."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]), **env)
    return subprocess.run(
        [sys.executable, "-m", "sphinx", *options, "-b", "html", str(root), str(root / "_build" / "html")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )


def built(root: Path, *options: str, **env: str) -> subprocess.CompletedProcess:
    """``build``, for a test that needs the build to succeed: a failure shows Sphinx's last lines."""
    result = build(root, *options, **env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def add_page(root: Path, name: str, text: str) -> None:
    """docs/<name>.md, listed in the site's toctree (INDEX) after the pages added before it."""
    (root / "docs" / f"{name}.md").write_text(text)
    index = root / "index.md"
    index.write_text(index.read_text().replace("docs/matrix\n", f"docs/{name}\ndocs/matrix\n", 1))


def moved(
    environment: Environment,
    backend: str | None = None,
    torch: str | None = None,
    packages: dict | None = None,
    **fields,
) -> Environment:
    """``environment`` as a run on another backend or release reports it: the device follows the
    backend, packages["torch"] follows torch, and ``packages`` (given) replaces the other packages."""
    data = environment.model_dump()
    if backend is not None:
        data.update(backend=backend, device="cpu" if backend == "cpu" else f"{backend}:0")
    if torch is not None:
        data["torch"] = torch
        data["packages"] = {**data["packages"], "torch": torch}
    if packages is not None:
        data["packages"] = {"torch": data["torch"], **packages}
    return Environment.model_validate({**data, **fields})


def read_page(path: Path) -> str:
    """An HTML page as a reader has it once its folded blocks are open: each part the page
    loads on demand (sphinxext/build/page_data.py) in its placeholder's place, from the page's data file."""
    import html
    import json
    import re

    raw = path.read_text(encoding="utf-8")

    def part(match: re.Match) -> str:
        src, key = html.unescape(match[1]), html.unescape(match[2])
        data = (path.parent / src).read_text(encoding="utf-8")
        return json.loads(data.partition('"] = ')[2].strip().removesuffix(";"))[key]

    # the placeholder whole, its stand-in included (no <div> inside it), as the page's script replaces it
    return re.sub(
        r'<div class="tc-later" data-tc-later="[^"]*" data-tc-src="([^"]*)" data-tc-key="([^"]*)">'
        r"<p>[^<]*</p>(?:(?!</?div[ >]).)*</div>",
        part,
        raw,
        flags=re.S,
    )


def page_text(path: Path) -> str:
    """Visible text of an HTML page (its folded parts loaded), whitespace folded."""
    import html
    import re

    raw = read_page(path)
    raw = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", raw, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def dedent(text: str) -> str:
    return textwrap.dedent(text)
