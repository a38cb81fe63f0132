"""The topics claims are grouped by, in the order the site presents them."""

TOPICS: dict[str, str] = {
    "device-switch": "Device switch and backend registration",
    "op-coverage": "Eager operator coverage and CPU fallback",
    "compile": "torch.compile",
    "recompilation": "Recompilation and static shapes",
    "distributed": "Distributed training",
    "mixed-precision": "Mixed precision",
    "custom-ops": "Custom kernels and custom operators",
    "huggingface": "Hugging Face integration and device placement",
    "checkpoints": "Checkpoint portability",
    "rng": "Random numbers and determinism",
    "numerics": "Numerical parity",
    "accelerator-api": "torch.accelerator and memory APIs",
    "status": "Versions, status and testimony",
}
