"""What makes builds fast, each checked for what it must not change: the
remembered probe, the preloads, the order claims start in, empty compiler
caches for claims that measure compiling, the memo of what files hold."""

from __future__ import annotations

import ast
import json
import os
import pickle
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from factories import make_environment, make_record, write_results_file
from hostile import run_claims
from kb import write_claim
from torchclaims.authoring.lint import cross_check
from torchclaims.caches import Caches
from torchclaims.claims import load_claims
from torchclaims.evidence.memo import ContentMemo
from torchclaims.evidence.records import Verdict
from torchclaims.run import _child
from torchclaims.run._child import ChildJob, GalleryTarget
from torchclaims.run.cache import InputScanner
from torchclaims.run.compiler_caches import CONDITION_NAME, shared_inductor_dir
from torchclaims.run.probe_cache import MEANING, key_parts, recall, remember
from torchclaims.run.runner import Job, Probe, Runner
from torchclaims.run.scheduling import longest_first

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.processes  # verify runs with and without the fork server's shortcuts


# -- the remembered probe -----------------------------------------------------------


def probe() -> Probe:
    return Probe("cpu", "cpu was requested", None, make_environment())


def test_a_remembered_probe_is_used_while_nothing_it_reads_changed(tmp_path):
    path = Caches(tmp_path).probe("cpu")
    assert recall(path, key_parts("cpu")) == (None, "no earlier probe in this records folder (a first run)")
    remember(path, key_parts("cpu"), probe())
    assert recall(path, key_parts("cpu")) == (probe(), "")


def test_a_changed_variable_or_distribution_makes_the_probe_run_again_and_says_what(tmp_path, monkeypatch):
    path = Caches(tmp_path).probe("cpu")
    remember(path, key_parts("cpu"), probe())
    monkeypatch.setenv("TORCHINDUCTOR_FREEZING", "1")
    assert recall(path, key_parts("cpu")) == (None, "changed since the last probe: the environment variables")
    monkeypatch.delenv("TORCHINDUCTOR_FREEZING")
    site = tmp_path / "site-packages"
    (site / "torch-9.9.9.dist-info").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    packages = MEANING["the installed distributions"]
    assert recall(path, key_parts("cpu")) == (None, f"changed since the last probe: {packages}")
    assert recall(path, key_parts("auto"))[1] == f"changed since the last probe: the backend asked for, {packages}"
    assert "installed or upgraded" in packages  # says what a newcomer may have done


def test_running_as_sphinx_build_or_python_m_sphinx_is_the_same_environment(monkeypatch):
    parts = key_parts("cpu")
    monkeypatch.setattr(sys, "path", [str(Path(sys.executable).parent), *sys.path[1:]])
    assert key_parts("cpu") == parts


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        json.dumps({"format": 1, "parts": {}, "probe": {"backend": "cpu"}}).encode(),
        b"\xff\xfe",
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_a_broken_remembered_probe_is_probed_again(tmp_path, content):
    path = Caches(tmp_path).probe("cpu")
    path.write_bytes(content)
    found, why = recall(path, key_parts("cpu"))
    assert found is None and why


def test_a_run_with_nothing_to_do_starts_no_process_and_an_edit_probes_again(tmp_path, monkeypatch):
    started = []  # what would start the fork server: a probe, a claim
    for name in ("probe", "_start"):
        original = getattr(Runner, name)
        monkeypatch.setattr(
            Runner,
            name,
            lambda self, *args, _original=original, _name=name: started.append(_name) or _original(self, *args),
        )
    write_claim(tmp_path, "kb-holds", "holds")
    first = run_claims(tmp_path, timeout=120)
    ran = ["probe", "_start", "_start"]  # the probe, the device smoke in the sandbox, the claim
    assert set(first.reran) == {"kb-holds"} and started == ran
    second = run_claims(tmp_path, timeout=120)
    assert second.reran == {} and second.records == first.records
    assert started == ran, "a run with nothing to do started a process"
    script = tmp_path / "gallery" / "kb_holds.py"
    script.write_text(script.read_text() + "\n# edited\n")
    third = run_claims(tmp_path, timeout=120)
    assert "changed: gallery/kb_holds.py" in str(third.reran["kb-holds"])
    assert started[3:] == ran, "a run with claims to run probes again"
    assert third.records["kb-holds"].environment == first.records["kb-holds"].environment


def test_a_changed_environment_variable_reruns_every_claim_and_says_why(tmp_path, monkeypatch):
    write_claim(tmp_path, "kb-holds", "holds")
    run_claims(tmp_path, timeout=120)
    monkeypatch.setenv("TORCH_SHOW_CPP_STACKTRACES", "1")
    again = run_claims(tmp_path, timeout=120)
    assert "environment changed: env_vars.TORCH_SHOW_CPP_STACKTRACES (absent) -> 1" in str(again.reran["kb-holds"])
    assert again.records["kb-holds"].environment.env_vars["TORCH_SHOW_CPP_STACKTRACES"] == "1"


# -- preloads and order ----------------------------------------------------------------


def test_a_group_is_preloaded_only_when_more_claims_use_it_than_there_are_workers():
    compiles, hugs = frozenset({"torch.compile"}), frozenset({"transformers.models.llama"})
    runner = Runner("cpu", parallel=2)
    assert runner.preload_for([compiles, compiles, hugs]) == []
    assert runner.preload_for([compiles, compiles, compiles | hugs, frozenset({"torch._dynamo.utils"})]) == [
        "torchclaims.run.preload.compiler"
    ]
    assert runner.preload_for([hugs, hugs, frozenset({"accelerate"})]) == ["torchclaims.run.preload.huggingface"]
    assert runner.preload_for([frozenset({"torch.compiler_x", "transformersx"})] * 5) == []
    assert Runner("cpu", parallel=2, shortcuts=False).preload_for([compiles] * 5) == []


def in_a_server_like_process(code: str, tmp_path: Path, stdin: bytes = b"", args: list[str] = ()) -> list:
    """Run ``code`` in a fresh interpreter that imported what the fork server imports
    first (torchclaims.run.preload), with its own empty temporary folder; its last line, as JSON."""
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(ROOT / "src"))
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", "import torchclaims.run.preload\n" + code, *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def test_a_claims_process_imports_nothing_to_read_its_job(tmp_path):
    """The job a claim's process receives carries the build's sphinx-gallery configuration,
    objects of sphinx-gallery's classes: reading it imports nothing the server has not."""
    from sphinx_gallery.gen_gallery import fill_gallery_conf_defaults

    config = SimpleNamespace(
        sphinx_gallery_conf=runpy.run_path(str(ROOT / "conf.py"))["sphinx_gallery_conf"],
        html_static_path=[],
        templates_path=[],
    )
    fill_gallery_conf_defaults(None, config)
    target = GalleryTarget("x.py", str(tmp_path), str(tmp_path / "out"), dict(config.sphinx_gallery_conf))
    child = ChildJob("x", "x.py", ".", ".", ".", {}, str(tmp_path), {}, (), 1, 100, 10, 1000, gallery=target)
    code = "import pickle, sys, json\nimport torchclaims.run.preload.ready  # the server's last preload, always\n"
    code += "before = set(sys.modules)\npickle.loads(sys.stdin.buffer.read())\n"
    code += "print(json.dumps(sorted(set(sys.modules) - before)))"
    assert in_a_server_like_process(code, tmp_path, pickle.dumps((_child.run, child))) == []


def test_the_servers_background_work_is_done_before_any_claim_forks(tmp_path):
    """The vector-instruction search runs in a thread while the next group imports; the
    last preload step waits for it, so a claim's process inherits its answer and no thread."""
    code = (
        "import json, os, threading\n"
        "import torchclaims.run.preload.compiler, torchclaims.run.preload.huggingface, torchclaims.run.preload.ready\n"
        "from torch._inductor import cpu_vec_isa\n"
        "print(json.dumps([threading.active_count(), cpu_vec_isa.valid_vec_isa_list.cache_info().currsize,"
        " 'TORCHINDUCTOR_CACHE_DIR' in os.environ]))"
    )
    assert in_a_server_like_process(code, tmp_path) == [1, 1, False]


# The compiler group's module, imported with its background work captured instead of
# started: the search, as the server's thread would run it.
CAPTURED_SEARCH = """
import importlib, json, platform, sys, threading
import torchclaims.run.preload as preload
from torch._inductor import cpu_vec_isa
for name in __import__("ast").literal_eval(sys.argv[1]): importlib.import_module(name)
captured = []
preload.in_background, preload.load = captured.append, lambda names: None
import torchclaims.run.preload.compiler
(search,) = captured
"""


def search_imports() -> tuple[str, ...]:
    module = ast.parse((ROOT / "src" / "torchclaims" / "run" / "preload" / "compiler.py").read_text())
    (imports,) = [  # read, not imported: importing the module starts the search
        ast.literal_eval(node.value)
        for node in module.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SEARCH_IMPORTS"
    ]
    return imports


def test_the_vector_instruction_search_imports_nothing_in_its_thread(tmp_path):
    """What it would import lazily is imported before it starts: two threads importing
    the same modules at once could deadlock the server's imports."""
    code = CAPTURED_SEARCH + (
        "cpu_vec_isa.valid_vec_isa_list.cache_clear()\n"
        "before = set(sys.modules)\n"
        "search()\n"
        "print(json.dumps([sorted(set(sys.modules) - before), str(cpu_vec_isa.pick_vec_isa())]))"
    )
    imported, picked = in_a_server_like_process(code, tmp_path, args=[repr(search_imports())])
    assert imported == []
    assert picked  # it found the instruction sets, not nothing


def test_every_candidate_instruction_set_is_tested_at_once(tmp_path):
    """Each test runs a compiler: one after the other they cost the server seconds each.
    Each stand-in candidate's test waits until all of them have started."""
    code = CAPTURED_SEARCH + (
        "gate = threading.Barrier(3, timeout=20)\n"
        "class Candidate:\n"
        "    def __init__(self, name): self.name, self.tested = name, False\n"
        "    def __str__(self): return self.name\n"
        "    def __bool__(self):\n"
        "        gate.wait()\n"
        "        self.tested = True\n"
        "        return True\n"
        "candidates = [Candidate('avx512_vnni'), Candidate('avx512'), Candidate('avx2'), Candidate('amx_tile')]\n"
        "cpu_vec_isa.supported_vec_isa_list = candidates\n"
        "cpu_vec_isa.x86_isa_checker = lambda: ['avx2', 'avx512', 'avx512_vnni']\n"
        "picked = []\n"
        "cpu_vec_isa.pick_vec_isa = lambda: picked.append(True)\n"
        "platform.machine = lambda: 'x86_64'\n"
        "search()\n"
        "print(json.dumps([[c.tested for c in candidates], picked]))"
    )
    tested, picked = in_a_server_like_process(code, tmp_path, args=[repr(search_imports())])
    assert tested == [True, True, True, False]  # not one after the other; not a set the CPU lacks
    assert picked == [True]  # then inductor's own choice, from the answers it cached


def test_the_last_preload_step_imports_what_every_claim_needs(tmp_path):
    code = (
        "import json, sys\n"
        "import torchclaims.run.preload.ready\n"
        "from torchclaims.run.preload import LATE\n"
        "print(json.dumps([name for name in LATE if name not in sys.modules]))"
    )
    assert in_a_server_like_process(code, tmp_path) == []


def job(claim_id: str) -> Job:
    return Job(claim_id, Path(f"gallery/{claim_id}.py"), f"gallery/{claim_id}.py", Path("r.json"), "", {}, 60)


def test_claims_start_longest_first_with_the_unknown_ones_first(tmp_path):
    jobs = [job(name) for name in ("short", "long", "new", "committed", "elsewhere")]
    write_results_file(
        tmp_path / "a.json", [make_record("committed", duration_s=50.0), make_record("elsewhere", duration_s=1.0)]
    )
    xla = make_environment(
        backend="xla", device="xla:0", packages={"torch": "2.9.0", "torch_xla": "2.9.0"}, torch="2.9.0"
    )
    write_results_file(
        tmp_path / "b.json", [make_record("elsewhere", duration_s=99.0, environment=xla)], environment=xla
    )
    order = longest_first(jobs, {"short": 1.0, "long": 30.0}, "cpu", tmp_path)
    assert [j.claim_id for j in order] == ["new", "committed", "long", "short", "elsewhere"]


# -- compiler caches -------------------------------------------------------------------

CACHE_REPORT = """
import json, os, tempfile
from torch._inductor.runtime.cache_dir_utils import cache_dir
place = cache_dir()
seen = {
    "dir": place,
    "tmp": tempfile.gettempdir(),
    "entries": os.listdir(place),
    "triton": os.environ.get("TRITON_CACHE_DIR"),
}
with v.check("runs") as check:
    check.measure("caches", json.dumps(seen))
    check.expect(True, "")
v.finish()
"""


def test_a_claim_that_measures_compiling_gets_empty_caches_and_says_so_and_others_keep_their_own(tmp_path):
    shared = shared_inductor_dir()
    marker = Path(shared, f"left-by-an-earlier-run-{os.getpid()}")
    marker.mkdir(parents=True, exist_ok=True)
    write_claim(tmp_path, "kb-cold", CACHE_REPORT)
    write_claim(tmp_path, "kb-kept", CACHE_REPORT)
    record = tmp_path / "claims" / "kb-cold.toml"
    record.write_text(
        record.read_text().replace(
            'script = "gallery/kb_cold.py"', 'script = "gallery/kb_cold.py"\ncompiler_caches = "cold"'
        )
    )
    own = tmp_path / "_build" / "records" / "compiler-caches" / "cpu" / "kb-kept"
    own.joinpath("torchinductor", "left-by-its-own-earlier-run").mkdir(parents=True)
    try:
        outcome = run_claims(tmp_path, timeout=120)
    finally:
        marker.rmdir()
    seen = {}
    for claim_id, result in outcome.records.items():
        assert result.verdict is Verdict.HOLDS, result.log_tail
        seen[claim_id] = json.loads(result.checks[0].measurements[0].value)
    cold, kept = seen["kb-cold"], seen["kb-kept"]
    assert cold["dir"].startswith(cold["tmp"]) and cold["entries"] == [] and cold["triton"].startswith(cold["tmp"])
    assert Path(kept["dir"]) == own / "torchinductor" and kept["entries"] == ["left-by-its-own-earlier-run"]
    assert kept["triton"] == str(own / "triton")  # never the shared folder's marker
    assert outcome.records["kb-cold"].conditions[CONDITION_NAME].startswith("cold")
    assert CONDITION_NAME not in outcome.records["kb-kept"].conditions
    assert outcome.records["kb-cold"].inputs["compiler caches"] == "cold"


def test_only_an_executable_claim_can_ask_for_cold_caches(tmp_path):
    write_claim(tmp_path, "kb-said", None)
    record = tmp_path / "claims" / "kb-said.toml"
    record.write_text(record.read_text().replace("caveats = ", 'compiler_caches = "cold"\ncaveats = '))
    claims = load_claims(tmp_path / "claims")
    assert [p.field for p in claims.problems] == ["compiler_caches"]


# -- the memo of what files hold -------------------------------------------------------


def test_remembered_imports_and_lint_findings_equal_fresh_ones_and_a_broken_memo_is_ignored(tmp_path):
    write_claim(tmp_path, "kb-holds", "holds")
    write_claim(tmp_path, "kb-device", 'x = torch.ones(1).to("cuda")\nv.finish()\n')
    (tmp_path / "gallery" / "_helper.py").write_text("from torchclaims.verify import Check\nCheck.expect = print\n")
    claims = load_claims(tmp_path / "claims")
    script = tmp_path / "gallery" / "kb_holds.py"
    fresh = (InputScanner(tmp_path).inputs(script), [str(p) for p in cross_check(tmp_path, claims)])
    assert any("literal device 'cuda'" in p for p in fresh[1])
    assert any("_helper.py" in p and "changes the verification API" in p for p in fresh[1])
    path = tmp_path / "memo.json"
    memo = ContentMemo(path)
    InputScanner(tmp_path, memo).inputs(script)
    cross_check(tmp_path, claims, memo)
    memo.save()
    again = ContentMemo(path)
    assert (
        InputScanner(tmp_path, again).inputs(script),
        [str(p) for p in cross_check(tmp_path, claims, again)],
    ) == fresh
    data = json.loads(path.read_text())
    for shelf in data.values():
        for key in shelf["answers"]:
            shelf["answers"][key] = (
                {"calls": "wrong", "problems": [[1, 2, 3]]} if isinstance(shelf["answers"][key], dict) else [7]
            )
    path.write_text(json.dumps(data))
    tampered = ContentMemo(path)
    assert (
        InputScanner(tmp_path, tampered).inputs(script),
        [str(p) for p in cross_check(tmp_path, claims, tampered)],
    ) == fresh
    path.write_text("{broken")
    assert InputScanner(tmp_path, ContentMemo(path)).inputs(script) == fresh[0]
