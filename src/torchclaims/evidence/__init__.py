"""Evidence: what a run established, and how far a reader may trust it.

A result record (:mod:`.records`) holds one claim's verdict on one backend
with its measurements, the environment's fingerprint (:mod:`.fingerprint`)
and, for coverage claims, a whole table (:mod:`.coverage_table`). Records
travel in results files (:mod:`.results`, written by :mod:`.output`); a file
is admitted only after its records are judged again from their measurements
(:mod:`.admission`, :mod:`.judging`, :mod:`.script_history`), and each verdict
says where it came from (:mod:`.provenance`, :mod:`.attestation`). The store
(:mod:`.store`) merges this build's records with the admitted files;
:mod:`.freshness` says whether a verdict is outdated and :mod:`.scope` what it
says about a claim. :mod:`.memo` remembers what was worked out from a file's
text. Nothing here runs a script or renders a page.
"""
