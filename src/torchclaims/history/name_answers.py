"""Each sweep release's answer to the private-name probe: one small file per release, checked on read.

``results/private-torch-names/<series>-<version>.json`` holds what
:mod:`.name_probe` found in that release's environment, as the release sweep
wrote it (:mod:`.name_sweep`). An answer stands for its release while it was
made with the release's version of the series' package and probed every name
:mod:`.private_names` lists now; otherwise the sweep probes the release again.
A file that cannot be read is reported with its name and field and stands for
nothing; the others are judged all the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from packaging import version as pep440
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import InvalidFileError, Problem, problems_from_validation
from ..fileio import read_json, replace_file
from .private_names import NAMES

FOLDER = "private-torch-names"  # beneath the results folder
MAX_BYTES = 256 * 1024
MAX_NAMES = 1000

Name = Annotated[str, Field(pattern=r"^torch(\.[A-Za-z_][A-Za-z0-9_]*)+$", max_length=200)]
Text = Annotated[str, Field(min_length=1, max_length=400)]


class ProbeAnswer(BaseModel):
    """What the probe writes in a release's environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    package: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100)]
    version: Annotated[str, Field(min_length=1, max_length=64)]
    torch: Annotated[str, Field(min_length=1, max_length=64)]
    python: Annotated[str, Field(min_length=1, max_length=32)]
    resolves: list[Name] = Field(max_length=MAX_NAMES)
    missing: dict[Name, Text] = Field(max_length=MAX_NAMES)

    @model_validator(mode="after")
    def _each_name_once(self):
        both = sorted(set(self.resolves) & set(self.missing))
        if both or len(set(self.resolves)) != len(self.resolves):
            raise ValueError(f"a name is given twice: {', '.join(both) or 'in resolves'}")
        return self


class Answer(ProbeAnswer):
    """A probe's answer as kept in results, with the release it stands for."""

    release: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*-[0-9][A-Za-z0-9.+]*$", max_length=100)]

    def unprobed(self) -> list[str]:
        """Names listed now that this answer says nothing about (listed after it was made)."""
        return sorted(set(NAMES) - set(self.resolves) - set(self.missing))


def answers_folder(results_dir: Path) -> Path:
    return results_dir / FOLDER


def answer_path(results_dir: Path, release) -> Path:
    return answers_folder(results_dir) / f"{release.name}.json"


def _validated(model: type[ProbeAnswer], path: Path, what: str) -> ProbeAnswer:
    data = read_json(path, MAX_BYTES, what)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidFileError(problems_from_validation(path, exc)) from None


def read_probe_output(path: Path) -> ProbeAnswer:
    return _validated(ProbeAnswer, path, "probe's answer")


def read_answer(path: Path) -> Answer:
    answer = _validated(Answer, path, "answer file")
    if answer.release != path.stem:
        raise InvalidFileError([Problem(path, "release", f"says {answer.release!r}; the file is named for another")])
    return answer


def write_answer(path: Path, answer: Answer) -> None:
    replace_file(path, (json.dumps(answer.model_dump(mode="json"), indent=1, sort_keys=True) + "\n").encode())


def version_problem(answer: ProbeAnswer, release) -> str:
    """'' when the answer was made with the release's version of the series' package."""
    if answer.package != release.series.package or _public(answer.version) != release.version:
        return f"made with {answer.package} {answer.version}, not {release.series.package} {release.version}"
    return ""


def _public(version: str) -> str:
    """The release a version names, without the build's local label ('2.9.0+cpu' is 2.9.0)."""
    try:
        return pep440.Version(version).public
    except pep440.InvalidVersion:
        return version


def standing(results_dir: Path, release) -> tuple[Answer | None, str]:
    """The release's answer, and why the release must be probed again ('' when the answer stands for it)."""
    path = answer_path(results_dir, release)
    if not path.exists():
        return None, "no answer to the private-name probe"
    try:
        answer = read_answer(path)
    except InvalidFileError as exc:
        return None, f"its answer cannot be used: {exc}"
    why = version_problem(answer, release)
    unprobed = answer.unprobed()
    if not why and unprobed:
        why = f"its answer predates {len(unprobed)} listed name(s) ({', '.join(unprobed[:3])}...)"
    return answer, why


def problems(results_dir: Path, releases: list, every_release: list) -> list[str]:
    """What is wrong with the answers of ``releases`` (a release with none is not counted here: see
    ``lacking``): a listed name that does not resolve, an answer that no longer stands for its
    release; and any file of the folder that answers no release of ``every_release``."""
    found = []
    for release in releases:
        if not answer_path(results_dir, release).exists():
            continue
        answer, why = standing(results_dir, release)
        found += [f"{release.name}: {why}"] if why else []
        for name, reason in sorted(answer.missing.items()) if answer else ():
            if name in NAMES:
                found.append(f"{release.name}: {name} does not resolve ({reason})")
    known = {release.name for release in every_release}
    folder = answers_folder(results_dir)
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.suffix != ".json" or path.stem not in known:
            found.append(f"{path}: answers no release of the sweep")
    return found


def lacking(results_dir: Path, releases: list) -> list[str]:
    """The releases with no answer file."""
    return [r.name for r in releases if not answer_path(results_dir, r).exists()]
