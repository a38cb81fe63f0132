"""A project's folders and the defaults its entry points share, in one place.

The CLI, ``conf.py``, the Sphinx configuration and the release sweep read them
here, so no two of them can disagree about where results live or how long a
claim may run. ``tests/test_one_home.py`` fails when a module spells one of
these folder names as a path, or one of these defaults as a value, itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import config

# The folders of a project, relative to its root.
CLAIMS = "claims"  # one record per claim (claims/*.toml)
GALLERY = "gallery"  # the claims' scripts
RESULTS = "results"  # committed results files
VENDOR_WORD = "vendor_word"  # what vendors state about their backends, per release (vendor_word/<backend>.toml)
BUILD = "_build"  # everything a run or a build writes
FOLDER_NAMES = (CLAIMS, GALLERY, RESULTS, VENDOR_WORD, BUILD)
IN_GALLERY = f"{GALLERY}/"  # how a script's path starts, as claims and records give it
# Places beneath the build folder, as text: defaults of options and of settings given as text.
RECORDS_DIR = f"{BUILD}/records"  # the per-claim records of this machine's runs, one folder per backend
RUN_RESULTS_DIR = f"{BUILD}/results"  # where verify writes its results file unless told otherwise
CHECK_OUTPUT_DIR = f"{BUILD}/check"  # check --backend's results
PUBLISH_DIR = f"{BUILD}/html"  # the published site

TIMEOUT_VAR = "TORCHCLAIMS_TIMEOUT"


@dataclass(frozen=True)
class Defaults:
    """What a setting is when nobody set it."""

    timeout_s: float = 300.0  # seconds per claim: verify, sweep, the site build, the runner's probe
    max_age_days: float = 90.0  # a record older than this is marked stale on the site
    check_timeout_s: float = 600.0  # seconds `torchclaims check --backend` may run the model's step


DEFAULTS = Defaults()


def claim_timeout(given, environ=os.environ) -> float:
    """Seconds per claim: ``given`` (a --timeout option), else $TORCHCLAIMS_TIMEOUT, else the default."""
    value = given if given is not None else environ.get(TIMEOUT_VAR, DEFAULTS.timeout_s)
    return config.seconds(value, f"--timeout / {TIMEOUT_VAR}")


@dataclass(frozen=True)
class Folders:
    """Where a project's parts are, from its root."""

    root: Path

    @property
    def claims(self) -> Path:
        return self.root / CLAIMS

    @property
    def gallery(self) -> Path:
        return self.root / GALLERY

    @property
    def results(self) -> Path:
        return self.root / RESULTS

    @property
    def vendor_word(self) -> Path:
        return self.root / VENDOR_WORD

    @property
    def records(self) -> Path:
        return self.root / RECORDS_DIR

    @property
    def run_results(self) -> Path:
        return self.root / RUN_RESULTS_DIR
