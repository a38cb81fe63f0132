"""The results policy ``torchclaims verify`` applies to a run (FiguresKept)."""

from __future__ import annotations

from ..errors import InvalidFileError
from ..evidence.judging import read_own_record
from .cache import InputScanner
from .execution import Settings, record_path

NO_FIGURES = (
    "its cached record has no figures although the script draws (a site build keeps them on the gallery page only)"
)


class FiguresKept:
    """A results file never goes out without the figures its records had: a claim
    whose cached record lost them (a site build made it) re-runs, and one that could
    not (``--backend auto`` knows the records' folder only after probing) is left out."""

    def __init__(self, settings: Settings):
        self.settings, self.scanner = settings, InputScanner(settings.root)

    def lost(self, claim, record) -> bool:
        if not record.checks or record.figures:
            return False
        return any(
            module.split(".")[0] == "matplotlib" for module in self.scanner.uses_of(self.settings.root / claim.script)
        )

    def reasons(self, claim) -> list[str]:
        """extra_reasons for verify."""
        if self.settings.backend == "auto":
            return []
        try:
            record = read_own_record(record_path(self.settings, self.settings.backend, claim.id))
        except InvalidFileError:
            return []  # absent or unreadable: it runs anyway
        return [NO_FIGURES] if self.lost(claim, record) else []

    def refused(self, claims, outcome) -> list[str]:
        """Claims whose record would go out without its figures; they are left out of the results file."""
        return [
            c.id
            for c in claims
            if c.id in outcome.records and c.id not in outcome.reran and self.lost(c, outcome.records[c.id])
        ]
