"""Which build of a release a run used.

One torch release comes as several wheels: CPU-only (``2.13.0+cpu``), CUDA
(``2.13.0+cu130``, what the package index serves on Linux), ROCm, XPU. They
differ in what they do without their device (a CUDA build without a GPU is not
a CPU build), so two runs of one release on different wheels are not a version
story, and runs are compared only with runs of the same kind of build. The kind
comes from torch's local version label (PEP 440, read by ``packaging``); the
CUDA version inside a kind (cu128, cu130) moves with the release, like any
dependency of it, and is named, not split on.

Every view that names a version (the matrix and its columns, evidence blocks and
their anchors, accelerator, changes and upgrade pages, downloads, ``show``)
names torch as :func:`torch_named` writes it: the version torch reports, local
label included, and the kind of build in words ('torch 2.13.0+cu130 (CUDA
build)'). The rule is about the run alone, never about what else the store
holds: naming the build only where a column holds two builds of one release
would rename a slice, and move its links, whenever a results file arrives, and
a lone '2.13.0' would still not say which wheel it was. A version with no local
label (the package index's macOS wheels) is written as torch reports it. Free
of Sphinx imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from .records import Environment

UNLABELLED = "unlabelled"  # a torch version without a local label (the package index's macOS wheels)
KIND_PATTERNS = (("cuda", r"cu\d"), ("rocm", r"rocm"), ("xpu", r"xpu"), ("cpu", r"cpu"))
KIND_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU", "cpu": "CPU-only", UNLABELLED: "unlabelled"}
NO_KNOWN_KIND = "build of no known kind"  # a torch version that is no PEP 440 version


@dataclass(frozen=True)
class Build:
    """The kind of torch wheel a run used, and its local label ('cu130'; '' when there is none)."""

    kind: str  # cuda, rocm, xpu, cpu, another label's leading letters, or UNLABELLED
    label: str = ""


def build_of(environment: Environment) -> Build | None:
    """The build of torch a run used; None when its torch version is no PEP 440 version."""
    try:
        label = Version(environment.torch).local or ""
    except InvalidVersion:
        return None
    if not label:
        return Build(UNLABELLED)
    kind = next((kind for kind, pattern in KIND_PATTERNS if re.match(pattern, label)), None)
    return Build(kind or re.match(r"[a-z]*", label)[0] or label, label)


def same_kind(first: Environment, second: Environment) -> bool:
    """Whether two runs used the same kind of torch build (both unreadable counts as not)."""
    a, b = build_of(first), build_of(second)
    return a is not None and b is not None and a.kind == b.kind


def kind_words(build: Build, plural: bool = False) -> str:
    """'CUDA build', 'CPU-only builds': the one way a kind of build is named."""
    return f"{KIND_NAMES.get(build.kind, build.kind)} build{'s' if plural else ''}"


def builds_named(builds: list[Build]) -> str:
    """One kind's builds as a strip names them: 'CUDA builds (+cu128, +cu130)', 'CPU-only build (+cpu)'."""
    labels = sorted({f"+{b.label}" for b in builds if b.label})
    return kind_words(builds[0], plural=len(labels) > 1) + (f" ({', '.join(labels)})" if labels else "")


def torch_named(environment: Environment) -> str:
    """torch as every version label names it: 'torch 2.13.0+cpu (CPU-only build)', 'torch 2.13.0+cu130
    (CUDA build)'; 'torch 2.13.0' when torch reports no local label."""
    build = build_of(environment)
    if build is None:
        return f"torch {environment.torch} ({NO_KNOWN_KIND})"
    return f"torch {environment.torch}" + (f" ({kind_words(build)})" if build.label else "")
