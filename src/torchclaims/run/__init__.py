"""Running claim scripts: isolated, in parallel, bounded, and sandboxed.

:mod:`.execution` decides which claims are stale (:mod:`.cache`) and hands them
to :mod:`.runner`, which forks each from a server that has torch imported
(:mod:`.preload`) in the order of :mod:`.scheduling`. Inside the claim's
process, :mod:`._child` confines the script (:mod:`.sandbox`), watches what it
starts (:mod:`.processes`) and writes its gallery page from data only
(:mod:`.gallery_page`); :mod:`.stopping` ends everything a run started.
:mod:`.compiler_caches` shares or empties the compiler caches,
:mod:`.probe_cache` remembers the environment probe, and :mod:`.bundle` packs
what ``verify`` needs for a machine without the package index.
"""
