"""The device smoke: run where a claim runs (forked from the fork server, in the
sandbox) before any claim, to tell whether the device works there
(torchclaims.run.runner.Runner.device_smoke). It answers on the record channel
with one JSON object: ``{"unavailable": null}`` when the device answered, else
why not, in the runtime's own words."""

import json
import os

from torchclaims.backends import resolve_backend
from torchclaims.run._child import RECORD_FD_ENV

backend, _ = resolve_backend(os.environ["TORCHCLAIMS_BACKEND"])
os.write(int(os.environ[RECORD_FD_ENV]), json.dumps({"unavailable": backend.smoke()}).encode("utf-8"))
