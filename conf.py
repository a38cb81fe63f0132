"""Sphinx configuration of the torchclaims site.

Settings that a rebuild may change come from environment variables, which the
nox sessions set: TORCHCLAIMS_BACKEND (cpu, cuda, xla, ..., auto),
TORCHCLAIMS_TIMEOUT (seconds per claim), TORCHCLAIMS_JOBS (claims run in
parallel), TORCHCLAIMS_FORCE=1 (re-run every claim), TORCHCLAIMS_EXECUTE=0
(render existing records only).
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "src"))

from torchclaims import __version__  # noqa: E402
from torchclaims.project import BUILD, CLAIMS, DEFAULTS, GALLERY, PUBLISH_DIR, RESULTS, TIMEOUT_VAR  # noqa: E402

project = "torchclaims"
author = "torchclaims contributors"
copyright = "2026, torchclaims contributors"
release = version = __version__

extensions = ["myst_parser", "sphinx_gallery.gen_gallery", "torchclaims.sphinxext"]
myst_enable_extensions = ["colon_fence", "deflist"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"

# conf.py sits at the repository root: prune the walk and allow-list the pages.
# docs/upgrades/: pages earlier builds generated there (upgrades are sections of docs/upgrades.md now).
exclude_patterns = [
    BUILD,
    ".*",
    "**/.*",
    "venv",
    "node_modules",
    GALLERY,
    CLAIMS,
    "tests",
    RESULTS,
    "src",
    "docs/upgrades/**",
]
include_patterns = ["index.md", "docs/**"]

html_theme = "furo"
html_title = "torchclaims"
html_static_path = []
html_use_index = False  # no page has index entries: a General Index would be an empty page written by every build

# sphinx-gallery only assembles pages here: torchclaims runs every script in its
# own process beforehand (see torchclaims.sphinxext.build.state), so the pattern that
# selects scripts for in-process execution matches nothing.
sphinx_gallery_conf = {
    "examples_dirs": [GALLERY],
    "gallery_dirs": ["docs/auto_gallery"],
    "filename_pattern": r"(?!)",
    "ignore_pattern": r"^_",  # matched against the file name: helper modules
    "remove_config_comments": True,
    "download_all_examples": False,
    "write_computation_times": False,
    "show_memory": False,
    "plot_gallery": "True",
    "within_subsection_order": "FileNameSortKey",
}

# Passed on as text: the extension checks each value and names the variable
# when one is not a valid number or flag.
torchclaims_backend = os.environ.get("TORCHCLAIMS_BACKEND", "cpu")
torchclaims_timeout = os.environ.get(TIMEOUT_VAR, str(DEFAULTS.timeout_s))
torchclaims_parallel = os.environ.get("TORCHCLAIMS_JOBS", str(os.cpu_count() or 1))
torchclaims_force = os.environ.get("TORCHCLAIMS_FORCE", "0")
torchclaims_execute = os.environ.get("TORCHCLAIMS_EXECUTE", "1")
torchclaims_max_age_days = os.environ.get("TORCHCLAIMS_MAX_AGE_DAYS", str(DEFAULTS.max_age_days))
# OWNER/REPO: verify the results files' attestations with gh (the publish workflow sets it),
# or, with TORCHCLAIMS_ATTESTATIONS, decide from the answers `torchclaims attest` wrote there.
torchclaims_verify_attestations = os.environ.get("TORCHCLAIMS_VERIFY_ATTESTATIONS", "")
torchclaims_attestations = os.environ.get("TORCHCLAIMS_ATTESTATIONS", "")
# nox -s docs builds into _build/sphinx; the extension then publishes the site
# into this folder without doctrees, sources or build information.
torchclaims_publish_dir = os.environ.get("TORCHCLAIMS_PUBLISH_DIR", PUBLISH_DIR)
