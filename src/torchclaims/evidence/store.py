"""The results store: this build's records merged with committed results files.

Everything a page shows about verdicts comes from here. A claim with no entry
is "not run"; nothing is ever inferred from the absence of an error. Every
results file passes torchclaims.evidence.admission on the way in, and every entry
carries its :class:`~torchclaims.evidence.provenance.Source`: within a matrix column the
build's own records come first, then attested workflow runs, then files
submitted by hand, newest first within each.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ..backends import all_backends, vendor_packages_without_device
from ..errors import InvalidFileError, Problem
from ..fileio import leaves
from .admission import Admission
from .attestation import Verifier, stray_notes
from .attestation_answers import AnswersVerifier
from .builds import torch_named
from .judging import read_own_record
from .provenance import FileHistory, Source, Trust, file_histories
from .records import Environment, ResultRecord, record_key
from .results import read_results

THIS_BUILD = "this build"
EARLIER_BUILD = "an earlier build"
THIS_MACHINE = "this machine"  # records an earlier run left in _build/records (show)
OWN_ORIGINS = (THIS_BUILD, EARLIER_BUILD, THIS_MACHINE)


@dataclass(frozen=True)
class Entry:
    """A record and where it came from."""

    record: ResultRecord
    origin: str  # THIS_BUILD, EARLIER_BUILD, THIS_MACHINE or the results file name
    label: str = ""
    source: Source | None = None  # filled in from origin and label when not given

    def __post_init__(self) -> None:
        if self.source is None:
            trust = Trust.BUILD if self.origin in OWN_ORIGINS else Trust.BY_HAND
            object.__setattr__(self, "source", Source(trust, self.origin, self.label))

    @property
    def backend(self) -> str:
        return self.record.environment.backend

    @property
    def version(self) -> str:
        """The version that matters on this entry's backend: 'torch_xla 2.9.0'."""
        return version_label(self.record.environment)

    @property
    def column(self) -> str:
        """Backend plus version: 'xla · torch_xla 2.9.0' (a version within a matrix column)."""
        return column_label(self.record.environment)


def version_label(env: Environment) -> str:
    """The slice of a backend's column a run belongs to, naming torch's build (evidence.builds):
    'torch 2.13.0+cpu (CPU-only build)', 'torch_xla 2.9.0 on torch 2.9.0+cu128 (CUDA build)', or
    'torch 2.13.0+cpu (CPU-only build) + torch-tpu 0.2.0 (vendor package, no TPU)' for a run that had
    a vendor's plugin but not its device: two wheels of one release are two slices, never one."""
    backend = all_backends().get(env.backend)
    package = backend.primary_package if backend else "torch"
    torch = torch_named(env)
    named = torch if package == "torch" else f"{package} {env.packages.get(package, '?')} on {torch}"
    vendors = "".join(
        f" + {b.primary_package} {v} (vendor package, no {b.device_noun})"
        for b, v in vendor_packages_without_device(env.backend, env.packages)
    )
    return named + vendors


def column_label(env: Environment) -> str:
    return f"{env.backend} · {version_label(env)}"


@dataclass
class Store:
    entries: dict[str, list[Entry]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    rejected: dict[str, list[Problem]] = field(default_factory=dict)  # claim id -> records left out, and why
    build_environment: Environment | None = None
    _claim_digests: dict[str, str] = field(default_factory=dict, repr=False)  # claim id -> digest of its entries
    _texts: set[str] = field(default_factory=set, repr=False)  # each record added (as JSON), once
    # claim id -> each entry's record as JSON, in the order of its entries (the store is pickled: no id() keys)
    _entry_texts: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def add(self, entry: Entry) -> None:
        text = record_key(entry.record)  # the same run seen twice (this build and its own exported file) is added once
        if text not in self._texts:
            self._texts.add(text)
            self.entries.setdefault(entry.record.claim_id, []).append(entry)
            self._entry_texts.setdefault(entry.record.claim_id, []).append(text)
            self._claim_digests.pop(entry.record.claim_id, None)

    def history(self, claim_id: str) -> list[Entry]:
        """Every entry for a claim, newest first."""
        return [entry for entry, _ in self._newest_first(claim_id)]

    def _newest_first(self, claim_id: str) -> list[tuple[Entry, str]]:
        pairs = zip(self.entries.get(claim_id, []), self._entry_texts.get(claim_id, []), strict=True)
        return sorted(pairs, key=lambda pair: pair[0].record.started_at, reverse=True)

    def ranked(self, claim_id: str) -> list[Entry]:
        """Every entry for a claim, the most trusted source first (this build, then
        attested workflow runs, then files submitted by hand), newest first within each."""
        return sorted(self.history(claim_id), key=lambda e: e.source.trust)  # stable: dates stay in order

    def latest_by_column(self, claim_id: str) -> dict[str, Entry]:
        """The entry each column shows: a file never outranks this build."""
        latest: dict[str, Entry] = {}
        for entry in self.ranked(claim_id):
            latest.setdefault(entry.column, entry)
        return latest

    def columns(self) -> list[str]:
        """Matrix columns: this build's first, then the others by name."""
        build = column_label(self.build_environment) if self.build_environment else None
        names = {e.column for entries in self.entries.values() for e in entries}
        return sorted(names, key=lambda c: (c != build, c))

    def digest(self, claim_ids: list[str]) -> str:
        """Changes whenever anything shown about these claims changes (and only then:
        the same environment gives the same digest however its maps are ordered)."""
        h = hashlib.sha256()
        for claim_id in sorted(claim_ids):
            h.update(self._claim_digest(claim_id).encode())
        h.update(self._environment_text)
        return h.hexdigest()

    @cached_property
    def _environment_text(self) -> bytes:
        environment = self.build_environment
        return json.dumps(environment.model_dump(mode="json"), sort_keys=True).encode() if environment else b""

    def _claim_digest(self, claim_id: str) -> str:
        """Every page showing a claim asks for this digest: worked out once per build."""
        if claim_id not in self._claim_digests:
            h = hashlib.sha256()
            for entry, text in self._newest_first(claim_id):
                # The source too: a file verified, committed or relabelled reads differently on its page.
                h.update(
                    f"{claim_id}|{entry.origin}|{entry.source.mark}|{entry.source.describe()}|".encode() + text.encode()
                )
            self._claim_digests[claim_id] = h.hexdigest()
        return self._claim_digests[claim_id]


def load_store(
    build_records: dict[str, ResultRecord],
    build_environment: Environment | None,
    results_dir: Path | None,
    history_dir: Path | None = None,
    admission: Admission | None = None,
    verifier: Verifier | AnswersVerifier | None = None,
) -> Store:
    """Merge this build's records, earlier builds' superseded records and the
    records of every results file in ``results_dir`` that pass ``admission``
    (by default the checks that need no claims: verdicts, environments, dates).
    A file is attested only when ``verifier`` verifies its attestation now."""
    store = Store(build_environment=build_environment)
    admission = admission or Admission()
    for record in build_records.values():
        store.add(Entry(record, THIS_BUILD))
    if results_dir is not None and results_dir.is_dir():
        store.problems.extend(stray_notes(results_dir))
        store.problems.extend(verifier.problems if verifier else [])
        committed = file_histories(results_dir)
        for path in sorted(results_dir.glob("*.json")):
            for entry in results_entries(path, admission, store, verifier, committed.get(path.name)):
                store.add(entry)
    # After the results files, so a record merged into results/ is named by its file.
    for path in sorted(history_dir.rglob("*.json")) if history_dir and history_dir.is_dir() else []:
        try:
            store.add(Entry(read_own_record(path), EARLIER_BUILD))
        except InvalidFileError as exc:
            store.problems.extend(exc.problems)
    return store


def results_entries(
    path: Path,
    admission: Admission,
    store: Store,
    verifier: Verifier | AnswersVerifier | None = None,
    committed: FileHistory | None = None,
) -> list[Entry]:
    """The admitted records of one results file, each with its source; what is
    wrong with the file goes to the store's problems (and rejections)."""
    outside = leaves(path, path.parent.parent)  # results/ lies in the repository root
    if outside:
        store.problems.append(Problem(path, "", outside))
        return []
    try:
        results = read_results(path)
    except InvalidFileError as exc:
        store.problems.extend(exc.problems)
        return []
    admitted = admission.check(path, results)
    attestation, wrong = verifier.check(path, results.provenance) if verifier and admitted.records else (None, [])
    store.problems.extend(admitted.problems + wrong)
    for claim_id, problems in admitted.rejected.items():
        store.rejected.setdefault(claim_id, []).extend(problems)
    if attestation is not None:
        source = Source(
            Trust.ATTESTED,
            path.name,
            results.label,
            results.provenance,
            attestation.url,
            attestation.run_url,
            committed,
            attestation,
        )
    else:
        source = Source(Trust.BY_HAND, path.name, results.label, results.provenance, committed=committed)
    return [Entry(record, path.name, results.label, source) for record in admitted.records]
