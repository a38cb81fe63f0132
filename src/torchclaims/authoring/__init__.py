"""Writing claims: the scaffold a contributor starts from, and the review lint does.

:mod:`.scaffold` (``torchclaims new``) writes a claim record and a script from
``templates/``; :mod:`.lint` reports every problem of a knowledge base at once,
with :mod:`.fixed_judgements` (checks that cannot fail) and
:mod:`.gallery_text` (markup that must not reach a page); :mod:`.ci_review` adds what CI
asks besides (:mod:`.breaking_tests`, :mod:`.formatting`), for ``torchclaims lint``.
"""
