"""The release list: which versions a sweep runs, and which runs stand for them.

``sweep/releases.toml`` names the series (torch on the CPU, torch_xla on XLA on
the CPU, transformers on the CPU) and their releases, oldest first;
``sweep/constraints.txt`` holds every other package at one version. A run (a
results file, or this build) stands for a release of a series only when the
release is the one thing that differs: same backend, the series' package at
that version, the series' own requirements met, and every held package that
the run's fingerprint records at its held version. Both files are data from
the repository and are validated with errors that name the file and field.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated

from packaging import version as pep440
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..backends import BACKEND_NAMES, all_backends, vendor_packages_without_device
from ..errors import InvalidFileError, Problem, problems_from_validation
from ..evidence.records import Environment

RELEASES_FILE = "sweep/releases.toml"
CONSTRAINTS_FILE = "sweep/constraints.txt"
VERSION = r"^\d+(\.\d+)*([a-z]+\d+)?(\.post\d+)?$"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)$")

Version = Annotated[str, Field(pattern=VERSION)]
Requirement = Annotated[str, Field(pattern=PIN.pattern)]


def canonical(name: str) -> str:
    """Distribution names compare case- and separator-insensitively (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(version: str) -> tuple:
    """The order of releases, PEP 440's (``packaging``): '2.10.0' after '2.9.0', '2.10.0rc1' before
    '2.10.0'. The local label ('+cpu') names the build, not the release (evidence.builds), and is
    ignored. A string that is no version sorts before every version, as text."""
    try:
        return (1, pep440.Version(pep440.Version(version).public), "")
    except pep440.InvalidVersion:
        return (0, pep440.Version("0"), version)


LABEL_VERSION = re.compile(r"(.*?)(?: (\d\S*)|$)")  # a label's first word that starts with a digit is its version


def label_parts(label: str) -> tuple[str, str, str]:
    """A label split at its version: 'cpu · torch 2.13.0+cpu (CPU-only build)' -> ('cpu · torch',
    '2.13.0+cpu', ' (CPU-only build)'); a label with no version is all name."""
    match = LABEL_VERSION.match(label)
    return match[1], match[2] or "", label[match.end() :]


def label_key(label: str) -> tuple:
    """The order of labels ('torch 2.10.0+cpu (CPU-only build)', 'cpu · torch 2.10.0'): by what comes
    before the version, then by ``version_key``; the whole text breaks ties ('+cpu' and '+cu130' builds)."""
    name, version, _ = label_parts(label)
    return (name, version_key(version), label)


class SeriesModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field(pattern="^(" + "|".join(BACKEND_NAMES) + ")$")
    package: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    versions: list[Version] = Field(min_length=1)
    requires: list[Requirement] = Field(default_factory=list)
    requires_by_version: dict[Version, list[Requirement]] = Field(default_factory=dict)
    follows: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]] = Field(default_factory=list)
    timeout: float | None = Field(None, gt=0, le=7200)
    default: bool = True


class ReleasesModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    series: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*$")], SeriesModel] = Field(min_length=1)


@dataclass(frozen=True)
class Series:
    """One walk over the releases of one package on one backend."""

    name: str
    backend: str
    package: str
    versions: tuple[str, ...]
    requires: tuple[str, ...] = ()
    requires_by_version: dict[str, tuple[str, ...]] = field(default_factory=dict)
    follows: tuple[str, ...] = ()  # packages left to pip: they move with the release (its own dependencies)
    default: bool = True
    timeout: float | None = None  # seconds per claim, when the series needs more than the sweep's default
    held: dict[str, str] = field(
        default_factory=dict
    )  # canonical name -> version, the varied package and its followers left out

    @property
    def unheld(self) -> set[str]:
        """Canonical names this series does not hold: the varied package and those that follow it."""
        return {canonical(self.package), *(canonical(name) for name in self.follows)}

    def requirements(self, version: str, exact: bool = False) -> list[str]:
        """What pip installs for one release of the series. ``exact`` pins the
        release's own version string (``===``): pip then takes the package
        index's build and never a local build of the same release (a machine's
        ``2.13.0+cpu`` wheel), so every release of the series is the same kind
        of build."""
        pin = "===" if exact else "=="
        return [f"{self.package}{pin}{version}", *self.requires, *self.requires_by_version.get(version, ())]

    def pins(self) -> dict[str, str]:
        """Every version a run of this series must have, apart from the varied package."""
        pins = dict(self.held)
        for requirement in self.requires:
            name, version = PIN.match(requirement).groups()
            pins[canonical(name)] = version
        return pins

    def release_of(self, env: Environment) -> str | None:
        """The release this run stands for, or None when something else differs too."""
        if env.backend != self.backend or vendor_packages_without_device(env.backend, env.packages):
            return None  # a run with a vendor's plugin (torch-tpu on a CPU host) is not a plain release run
        installed = _installed(env)
        version = installed.get(canonical(self.package))
        if version is None:
            return None
        for name, pinned in self.pins().items():
            if name in installed and installed[name] != pinned:
                return None
        return version

    def concerns(self, imported: frozenset[str]) -> bool:
        """Whether a claim depends on this series' package, given every module its script and the
        project files it imports import: torch and the backend's own package are loaded by every
        run on the backend; any other (transformers) only by a script that imports it."""
        backend = all_backends().get(self.backend)
        loaded = {"torch", canonical(backend.primary_package) if backend else "torch"}
        module = canonical(self.package).replace("-", "_")  # the name 'import' uses: torch-xla -> torch_xla
        return canonical(self.package) in loaded or module in {name.split(".")[0] for name in imported}

    def label(self, version: str) -> str:
        return f"{self.package} {version}"


def _installed(env: Environment) -> dict[str, str]:
    versions = {canonical(name): value.split("+")[0] for name, value in env.packages.items()}
    versions["torch"] = env.torch.split("+")[0]
    return versions


@dataclass(frozen=True)
class Releases:
    series: dict[str, Series]
    held: dict[str, str]  # canonical name -> version (sweep/constraints.txt)
    constraints_path: Path

    def for_backend(self, backend: str) -> list[Series]:
        return [s for s in self.series.values() if s.backend == backend]

    def constraints_for(self, series: Series) -> str:
        """The constraints file's text less what the series does not hold (pip refuses a pin that
        contradicts a requirement)."""
        lines = self.constraints_path.read_text(encoding="utf-8").splitlines()
        kept = [
            line
            for line in lines
            if not (PIN.match(line.strip()) and canonical(PIN.match(line.strip())[1]) in series.unheld)
        ]
        return "\n".join(kept) + "\n"


def read_constraints(path: Path) -> dict[str, str]:
    """``name==version`` lines (comments and blank lines allowed); anything else is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidFileError([Problem(path, "", f"cannot be read: {exc}")]) from None
    pins, problems = {}, []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = PIN.match(line)
        if match is None:
            problems.append(Problem(path, "pin", f"expected 'name==version', found {line!r}", number))
        elif canonical(match[1]) in ("torch", "torch-xla"):
            problems.append(
                Problem(path, "pin", f"{match[1]} is what a sweep varies; it must not be held here", number)
            )
        else:
            pins[canonical(match[1])] = match[2]
    if problems:
        raise InvalidFileError(problems)
    return pins


def load_releases(root: Path) -> Releases:
    """Read ``sweep/releases.toml`` and ``sweep/constraints.txt`` under ``root``."""
    path, constraints = root / RELEASES_FILE, root / CONSTRAINTS_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidFileError([Problem(path, "", f"cannot be read: {exc}")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidFileError([Problem(path, "", f"not valid TOML: {exc}")]) from None
    try:
        model = ReleasesModel.model_validate(data)
    except ValidationError as exc:
        raise InvalidFileError(problems_from_validation(path, exc)) from None
    held = read_constraints(constraints)
    series, problems = {}, []
    for name, s in model.series.items():
        if sorted(s.versions, key=version_key) != s.versions or len(set(s.versions)) != len(s.versions):
            problems.append(Problem(path, f"series.{name}.versions", "list each release once, oldest first"))
        unknown = sorted(set(s.requires_by_version) - set(s.versions))
        if unknown:
            problems.append(
                Problem(
                    path, f"series.{name}.requires_by_version", f"names releases not in versions: {', '.join(unknown)}"
                )
            )
        one = Series(
            name,
            s.backend,
            s.package,
            tuple(s.versions),
            tuple(s.requires),
            {k: tuple(v) for k, v in s.requires_by_version.items()},
            tuple(s.follows),
            s.default,
            s.timeout,
        )
        series[name] = replace(one, held={k: v for k, v in held.items() if k not in one.unheld})
    if problems:
        raise InvalidFileError(problems)
    return Releases(series, held, constraints)
