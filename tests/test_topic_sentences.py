"""Topic pages say no more about a backend than a record or a source: every sentence of
docs/topics/*.md that names a backend (its name, package or vendor, as the backend
descriptors spell them) carries what stands behind it, in the same sentence:

- a claim reference ({ref}`claim-<id>`, {claim-verdict}, {claim-measure}) to a claim
  that is about that backend (its ``about`` list), so its sources and records are one
  click away, or to a claim's record on that backend ({claim-verdict}`<id> <backend>`); or
- a link to a source (``[words](https://…)``).

A sentence that names two backends needs both behind it. Code spans are not prose
(``.cuda()`` names an API, not a backend) and are left out of the reading.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchclaims.backends import BUILTIN_BACKENDS
from torchclaims.claims import load_claims

ROOT = Path(__file__).resolve().parent.parent
TOPICS = ROOT / "docs" / "topics"
GENERIC = {"GPUs", "TPUs"}  # words of the descriptors' hardware names that name no one backend


def backend_words() -> dict[str, str]:
    """word (lower case) -> the backend it names: the descriptor's name, its package, and the
    capitalised words of its hardware and device nouns ('NVIDIA', 'Trainium', 'TorchTPU')."""
    words: dict[str, str] = {}
    for backend in BUILTIN_BACKENDS:
        if backend.name == "cpu":
            continue
        names = {backend.name, backend.primary_package} - {"torch"}
        names |= {w for w in re.findall(r"[A-Za-z_-]+", f"{backend.hardware} {backend.device_noun}") if w[0].isupper()}
        for word in names - GENERIC:
            words.setdefault(word.lower(), backend.name)
    return words


WORDS = backend_words()
ALTERNATIVES = "|".join(re.escape(word) for word in sorted(WORDS, key=len, reverse=True))
NAMED = re.compile(rf"(?<![\w-])({ALTERNATIVES})(?![\w-])", re.I)
# a claim, or a claim's record on one backend ({claim-verdict}`id backend`: the role warns when there is none)
CLAIM_REFERENCE = re.compile(r"\{ref\}`claim-([a-z0-9-]+)`|\{claim-(?:verdict|measure)\}`([a-z0-9-]+) ?([a-z0-9]*)")
SOURCE_LINK = re.compile(r"\]\(https?://[^)\s]+\)")


def sentences(text: str) -> list[tuple[int, str]]:
    """(line, sentence) of a page's prose: headings and fenced directives left out."""
    out = []
    prose = re.sub(r"```.*?```", lambda m: "\n" * m[0].count("\n"), text, flags=re.S)
    line = 1
    for paragraph in prose.split("\n\n"):
        if paragraph.strip() and not paragraph.lstrip().startswith("#"):
            for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z`{(])", paragraph.strip().replace("\n", " ")):
                out.append((line + paragraph[: len(paragraph) - len(paragraph.lstrip("\n"))].count("\n"), sentence))
        line += paragraph.count("\n") + 2
    return out


def unbacked(text: str, about: dict[str, set[str]]) -> list[str]:
    """'line N: <sentence> (names B without a record or source)' for each sentence naming a
    backend that no claim reference about it and no source link stands behind."""
    problems = []
    for line, sentence in sentences(text):
        if SOURCE_LINK.search(sentence):
            continue
        named = {WORDS[m.lower()] for m in NAMED.findall(re.sub(r"`[^`]*`", "", sentence))}
        references = [(ref or role, backend) for ref, role, backend in CLAIM_REFERENCE.findall(sentence)]
        unknown = [claim_id for claim_id, _ in references if claim_id not in about]
        covered = {backend for _, backend in references if backend}
        covered |= set().union(*(about[c] for c, _ in references if c in about))
        why = [f"names {', '.join(sorted(named - covered))} without a record or source"] if named - covered else []
        why += [f"refers to unknown claims {unknown}"] if unknown else []
        if why:
            problems.append(f"line {line}: {sentence[:160]}… ({'; '.join(why)})")
    return problems


@pytest.fixture(scope="module")
def about() -> dict[str, set[str]]:
    return {claim.id: set(claim.about) for claim in load_claims(ROOT / "claims").claims.values()}


@pytest.mark.parametrize("page", sorted(TOPICS.glob("*.md")), ids=lambda p: p.name)
def test_every_topic_sentence_naming_a_backend_has_a_record_or_a_source_behind_it(page, about):
    assert unbacked(page.read_text(encoding="utf-8"), about) == []


def test_a_sentence_without_its_record_is_caught(about):
    """The rule fails for the reason it states: an unbacked backend, a reference to a claim about
    another backend, a reference to no claim; a source link or a fitting reference passes."""
    page = (
        "# T\n\nIntro without a backend.\n\n"
        "Compilers specialise graphs, as XLA does, and therefore TorchTPU and the Neuron compiler.\n\n"
        "On ROCm it differs ({ref}`claim-tf32-defaults`).\n\n"
        "On Trainium it is so ({ref}`claim-no-such-claim`).\n\n"
        "AWS says so ([guide](https://awsdocs-neuron.readthedocs-hosted.com/)). "
        "On torch_xla too ({ref}`claim-xla-static-shapes-recompile`). "
        "Code calling `.cuda()` is code.\n"
    )
    problems = unbacked(page, about)
    assert len(problems) == 3, problems
    assert problems[0].startswith("line 5: Compilers") and "names neuron, tpu, xla without" in problems[0]
    assert problems[1].startswith("line 7: On ROCm") and "names rocm without" in problems[1]  # tf32-defaults: cuda
    assert problems[2].startswith("line 9:") and "unknown claims ['no-such-claim']" in problems[2]
