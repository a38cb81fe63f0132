"""The pieces a claim's process is built from: the bounded output tail and the
links to torch's shared caches in each script's own temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostile import run_claims
from kb import write_claim
from torchclaims.run.processes import OutputTail


def test_short_output_is_kept_whole():
    tail = OutputTail(100)
    tail.add(b"one\ntwo\n")
    assert tail.text(10) == "one\ntwo"


def test_the_end_is_kept_within_the_bytes_and_lines_with_a_mark():
    tail = OutputTail(200)
    for number in range(1000):
        tail.add(f"line {number}\n".encode())
    text = tail.text(5)
    kept = [f"line {n}" for n in range(995, 1000)]
    assert text.splitlines()[1:] == kept
    dropped = tail.total - len("".join(line + "\n" for line in kept))
    assert text.splitlines()[0] == f"[… {dropped:,} earlier bytes of output not kept]"


def test_one_huge_line_is_cut_to_its_end():
    tail = OutputTail(200)
    tail.add(b"x" * 10_000 + b"END\n")
    text = tail.text(40)
    assert len(text.encode()) <= 200 and text.endswith("xEND") and "earlier bytes of output not kept" in text


@pytest.mark.processes
def test_scripts_find_their_own_caches_where_torch_looks_for_them(tmp_path):
    body = """
import os, tempfile, getpass
place = tempfile.gettempdir()
links = sorted(name for name in os.listdir(place) if os.path.islink(os.path.join(place, name)))
print("LINKS=" + ",".join(f"{name}>{os.readlink(os.path.join(place, name))}" for name in links))
raise SystemExit(1)
"""
    write_claim(tmp_path, "kb-links", body)
    (record,) = run_claims(tmp_path, timeout=60).records.values()
    line = next(line for line in record.log_tail.splitlines() if line.startswith("LINKS="))
    links = dict(item.split(">") for item in line.removeprefix("LINKS=").split(","))
    assert any(name.startswith("torchinductor_") for name in links)
    own = tmp_path / "_build" / "records" / "compiler-caches" / "cpu" / "kb-links"  # never another claim's
    assert all(Path(target).parent == own and Path(target).is_dir() for target in links.values())
