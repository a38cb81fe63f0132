"""The JSON Schema committed for editors matches the claim model."""

import json
from pathlib import Path

from torchclaims.claims import claim_json_schema

SCHEMA = Path(__file__).resolve().parents[1] / "claims" / "claim.schema.json"


def test_committed_schema_is_current():
    assert json.loads(SCHEMA.read_text()) == claim_json_schema(), (
        "claims/claim.schema.json is stale: run `torchclaims schema --output claims/claim.schema.json`"
    )
