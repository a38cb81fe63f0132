"""Which page shows which claims, so a page is re-read when its evidence moved.

At read time each directive stores a digest of what it showed (claim record +
every result entry). On the next build ``env-get-outdated`` recomputes the
digests from the fresh store and returns the pages whose digests differ. This
does not depend on file modification times, and a claim without a record is
handled like any other (its digest changes when a record appears). A page that
lists a *selection* (every claim, a topic's claims) is noted by the selection,
not by the ids it held, so adding, removing or renaming a claim re-reads every
page that lists it.
"""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors import EnvironmentCollector

from .state import get_state

_ATTRIBUTE = "torchclaims_shown"
ALL_CLAIMS = "*"  # key of pages that show every claim (the matrix)
TOPIC = "topic:"  # key prefix of pages that show a topic's claims


def shown(env: BuildEnvironment) -> dict[str, dict[str, tuple[list[str], str]]]:
    """docname -> {key: (claim ids, digest at read time)}."""
    if not hasattr(env, _ATTRIBUTE):
        setattr(env, _ATTRIBUTE, {})
    return getattr(env, _ATTRIBUTE)


def note_shown(env: BuildEnvironment, claim_ids: list[str], digest: str, key: str | None = None) -> None:
    key = key or ",".join(sorted(claim_ids))
    shown(env).setdefault(env.docname, {})[key] = (sorted(claim_ids), digest)


class ShownClaimsCollector(EnvironmentCollector):
    """Keeps the page -> claims map right across incremental and parallel builds."""

    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        shown(env).pop(docname, None)

    def merge_other(self, app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
        for docname in docnames:
            if docname in shown(other):
                shown(env)[docname] = shown(other)[docname]

    def process_doc(self, app: Sphinx, doctree) -> None:
        """Nothing to do: directives note what they show while they run."""


def outdated_pages(app: Sphinx, env: BuildEnvironment, added, changed, removed) -> list[str]:
    state = get_state(app.env)
    stale = []
    for docname, keys in shown(env).items():
        if docname in changed or docname in removed:
            continue
        if any(state.digest(selection(state, key, ids)) != digest for key, (ids, digest) in keys.items()):
            stale.append(docname)
    return stale


def selection(state, key: str, ids: list[str]) -> list[str]:
    """The claims a key stands for now (a fixed list of ids stands for itself)."""
    if key == ALL_CLAIMS:
        return list(state.claims.claims)
    if key.startswith(TOPIC):
        return [claim.id for claim in state.claims.by_topic().get(key.removeprefix(TOPIC), [])]
    return ids


def setup_tracking(app: Sphinx) -> None:
    app.add_env_collector(ShownClaimsCollector)
    app.connect("env-get-outdated", outdated_pages)
