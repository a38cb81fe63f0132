"""The build's settings (``torchclaims_*`` in conf.py): declared here, checked once at ``config-inited``.

conf.py passes most of them as text, from environment variables. Each is checked
before anything runs, and a bad one stops the build with Sphinx's configuration
error, whose message names the setting and its variable; every handler after
that reads the checked values (:func:`build_settings`), never the raw text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from weakref import WeakKeyDictionary

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

from ... import config as settings_text
from ...errors import UsageError
from ...evidence.attestation import Verifier
from ...evidence.attestation_answers import AnswersVerifier, build_verifier
from ...project import CLAIMS, DEFAULTS, RESULTS


@dataclass(frozen=True)
class BuildSettings:
    """The torchclaims settings of one build, checked."""

    backend: str
    timeout: float
    parallel: int
    force: bool
    execute: bool
    max_age_days: float
    verifier: Verifier | AnswersVerifier | None  # how results files' attestations are decided (None: not at all)
    claims_dir: str
    results_dir: str
    gallery_output: str


def checked_settings(config: Config, root: Path) -> BuildSettings:
    """``config``'s torchclaims settings, or a ConfigError naming the first bad one."""
    try:
        return BuildSettings(
            backend=config.torchclaims_backend,
            timeout=settings_text.seconds(config.torchclaims_timeout, "torchclaims_timeout (TORCHCLAIMS_TIMEOUT)"),
            parallel=settings_text.count(config.torchclaims_parallel, "torchclaims_parallel (TORCHCLAIMS_JOBS)"),
            force=settings_text.flag(config.torchclaims_force, "torchclaims_force (TORCHCLAIMS_FORCE)"),
            execute=settings_text.flag(config.torchclaims_execute, "torchclaims_execute (TORCHCLAIMS_EXECUTE)"),
            max_age_days=settings_text.days(
                config.torchclaims_max_age_days, "torchclaims_max_age_days (TORCHCLAIMS_MAX_AGE_DAYS)"
            ),
            verifier=build_verifier(config.torchclaims_verify_attestations, config.torchclaims_attestations, root),
            claims_dir=config.torchclaims_claims_dir,
            results_dir=config.torchclaims_results_dir,
            gallery_output=config.torchclaims_gallery_output,
        )
    except UsageError as exc:
        raise ConfigError(str(exc)) from None


# Each application's checked settings, beside it: set at config-inited, read at builder-inited.
_SETTINGS: WeakKeyDictionary[Sphinx, BuildSettings] = WeakKeyDictionary()


def build_settings(app: Sphinx) -> BuildSettings:
    return _SETTINGS[app]


def _check(app: Sphinx, config: Config) -> None:
    _SETTINGS[app] = checked_settings(config, Path(app.confdir))


def setup_settings(app: Sphinx) -> None:
    # Numbers and flags may come as text (from environment variables in conf.py): _check reads them.
    app.add_config_value("torchclaims_backend", "cpu", "env", str)
    app.add_config_value("torchclaims_timeout", DEFAULTS.timeout_s, "", (int, float, str))
    app.add_config_value("torchclaims_parallel", 2, "", (int, str))
    app.add_config_value("torchclaims_force", False, "", (bool, str))
    app.add_config_value("torchclaims_execute", True, "", (bool, str))
    app.add_config_value("torchclaims_claims_dir", CLAIMS, "env", str)
    app.add_config_value("torchclaims_results_dir", RESULTS, "env", str)
    app.add_config_value("torchclaims_gallery_output", "docs/auto_gallery", "env", str)
    app.add_config_value("torchclaims_max_age_days", DEFAULTS.max_age_days, "env", (int, float, str))
    app.add_config_value("torchclaims_verify_attestations", "", "env", str)  # OWNER/REPO: verify attestations with gh
    app.add_config_value("torchclaims_attestations", "", "env", str)  # or decide from gh's answers in this file
    app.add_config_value("torchclaims_accelerator_pages", "docs/accelerators", "env", str)
    app.add_config_value("torchclaims_publish_dir", "", "", str)
    app.connect("config-inited", _check)
