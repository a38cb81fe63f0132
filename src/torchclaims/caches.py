"""Every cache a run or a build keeps, in one place: what each holds, where it is, what it is keyed by.

Four live in the records folder (``_build/records`` unless ``--records-dir``
says otherwise), the store memo beside Sphinx's pickled environment (the
doctrees folder, ``_build/doctrees``), so that a fresh environment drops it
too. Each entry is kept under a key that changes with what it was worked out
from, so a stale one is never used, and deleting any cache costs only time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from .project import BUILD, RECORDS_DIR

STORE_MEMO_FILE = "torchclaims-store.pickle"
MEMO_FILE = "memo.json"
COMPILER_DIR = "compiler-caches"
DOCTREES_DIR = f"{BUILD}/doctrees"  # where nox -s docs has Sphinx keep its environment


@dataclass(frozen=True)
class Cache:
    name: str
    folder: str  # the records folder, or Sphinx's doctrees folder (the defaults, from the project's root)
    place: str  # in that folder; <...> stands for a part that varies
    holds: str
    key: str  # what a kept entry is told stale by

    @property
    def where(self) -> str:
        return f"{self.folder}/{self.place}"


CACHES = (
    Cache(
        "records",
        RECORDS_DIR,
        "<backend>/<claim>.json",
        "each claim's last record, its figures beside it: a claim whose key is unchanged does not run again",
        "the script and the project modules it imports, with the environment fingerprint",
    ),
    Cache(
        "probe",
        RECORDS_DIR,
        "probe-<backend digest>.json",
        "what the environment probe found, so a run with nothing to run starts no fork server",
        "the interpreter, the installed distributions, the hardware and the recorded environment variables",
    ),
    Cache(
        "memo",
        RECORDS_DIR,
        MEMO_FILE,
        "what was worked out from a script's or a module's text: what it imports, its lint",
        "the file's sha256, under a digest of the code that analyses it",
    ),
    Cache(
        "compiler caches",
        RECORDS_DIR,
        f"{COMPILER_DIR}/<backend>/<claim>",
        "the kernels a claim's earlier runs compiled (inductor, triton), each claim's own; bounded, "
        "the caches of the claims run longest ago removed first (torchclaims.run.cache_eviction)",
        "the claim and the backend; inside, the compilers' own keys",
    ),
    Cache(
        "store memo",
        DOCTREES_DIR,
        STORE_MEMO_FILE,
        "the judged results store, between site builds",
        "a digest of everything the store is judged from and of the code that judges it",
    ),
)


@dataclass(frozen=True)
class Caches:
    """The caches' paths in one records folder (and the doctrees folder, for the store memo)."""

    records_root: Path

    def record(self, backend: str, claim_id: str) -> Path:
        return self.records_root / backend / f"{claim_id}.json"

    def probe(self, backend: str) -> Path:
        """Beside the records' backend folders, never in one (they hold records only)."""
        return self.records_root / f"probe-{hashlib.sha256(backend.encode()).hexdigest()[:16]}.json"

    def memo(self) -> Path:
        return self.records_root / MEMO_FILE

    def compiler(self, backend: str, claim_id: str) -> Path:
        return self.records_root / COMPILER_DIR / backend / claim_id


def store_memo(doctrees: Path) -> Path:
    return doctrees / STORE_MEMO_FILE
