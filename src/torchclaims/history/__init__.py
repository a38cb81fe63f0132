"""Releases: the same claims over torch and torch_xla releases, and what moved between them.

:mod:`.releases` reads ``sweep/releases.toml`` and finds the runs that stand
for each release; the release sweep plans which stale claims each release
must run (:mod:`.sweep_plan`), runs them in the release's own environment and
merges the results (:mod:`.release_sweep`), and reports what each run measured
(:mod:`.sweep_report`); :mod:`.private_names` lists the private torch names the
project uses, which :mod:`.name_sweep` has :mod:`.name_probe` check in each
release (the answers: :mod:`.name_answers`). :mod:`.changes` compares two
runs, :mod:`.upgrades` one upgrade claim by claim, and
:mod:`.version_history` one claim across every release.
"""
