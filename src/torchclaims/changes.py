"""What moved between two runs: verdicts, and the versions behind the move."""

from __future__ import annotations

from dataclasses import dataclass

from .records import Environment, ResultRecord, Verdict


@dataclass(frozen=True)
class Change:
    claim_id: str
    old: ResultRecord | None
    new: ResultRecord | None

    @property
    def old_verdict(self) -> str:
        return self.old.verdict.value if self.old else "not run"

    @property
    def new_verdict(self) -> str:
        return self.new.verdict.value if self.new else "not run"

    @property
    def regression(self) -> bool:
        """A claim that held no longer does (including: it is no longer checked)."""
        return self.old is not None and self.old.verdict is Verdict.HOLDS and (self.new is None or self.new.verdict is not Verdict.HOLDS)


def verdict_changes(old: dict[str, ResultRecord], new: dict[str, ResultRecord]) -> list[Change]:
    """Every claim whose verdict differs between two runs, in id order."""
    changes = []
    for claim_id in sorted(set(old) | set(new)):
        before, after = old.get(claim_id), new.get(claim_id)
        if (before.verdict if before else None) != (after.verdict if after else None):
            changes.append(Change(claim_id, before, after))
    return changes


def version_differences(old: Environment, new: Environment) -> dict[str, tuple[str, str]]:
    """Software that differs between two fingerprints: name -> (old, new)."""
    return {
        key.removeprefix("packages."): values
        for key, values in old.differences(new).items()
        if key == "torch" or key.startswith(("packages.", "accelerator_runtime.", "python", "device_name", "torchclaims"))
    }


def describe(old: Environment, new: Environment) -> str:
    moved = version_differences(old, new)
    if not moved:
        return "no package versions differ"
    return ", ".join(f"{name} {a} -> {b}" for name, (a, b) in moved.items())
