"""The build's plumbing: its settings (:mod:`.settings`) and state (:mod:`.state`: claims verified,
the results store), which page shows which claims (:mod:`.tracking`), links resolved after reading
(:mod:`.links`), the gallery's process, output and safety, data written beside pages, the search index
of coverage rows, the published folder and its manifest (:mod:`.publishing`, :mod:`.site`), and the
build's last words (:mod:`.summary`)."""
