"""torchclaims: executable claims about running PyTorch on other accelerators.

Data flows one way, claim → script → record → page. Each unit below imports
only from units listed before it (``tests/test_layout.py`` holds the order):

- foundation: :mod:`.errors` (one error hierarchy, exit codes), :mod:`.text_safety` (what text
  from data may hold where it is shown), :mod:`.limits`
  (every size and time bound), :mod:`.fileio` (bounded, atomic file reading
  and writing), :mod:`.config` (settings given as text), :mod:`.project` (the
  project's folders and the defaults every entry point shares), :mod:`.caches`
  (every cache a run or a build keeps: where, and under which key), :mod:`.backends`
  (one descriptor per device backend);
- :mod:`.topics` and :mod:`.claims`: the claim model, read from ``claims/*.toml``;
  :mod:`.vendor_word`: what vendors state about their backends, read from ``vendor_word/*.toml``;
- :mod:`.site_addresses`: where a claim, its evidence and a coverage row are on the site;
- :mod:`.evidence`: result records, results files, the store, and the trust
  checks on them;
- :mod:`.history`: the release list, the release sweep, and what changed
  between releases;
- :mod:`.run`: the isolated, sandboxed runner that turns scripts into records;
- :mod:`.verify`: **the scripts' interface**, the only part of the package a
  gallery script imports, with :mod:`.coverage`, the coverage sweeps;
- :mod:`.authoring`: ``torchclaims new`` and ``torchclaims lint``;
- :mod:`.check`: ``torchclaims check``, for a team's own model;
- :mod:`.sphinxext`: the site, rendered from records only (its directives, views and build plumbing);
- :mod:`.cli`: the ``torchclaims`` command (``__main__`` runs it).
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    # ``import torchclaims; torchclaims.check(model, inputs)`` without importing torch up front
    if name == "check":
        import importlib

        return importlib.import_module(".check", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
