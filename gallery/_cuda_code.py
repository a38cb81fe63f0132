"""What the claims about code written for CUDA share: running one CUDA call and
saying what it did, and the question each of them asks only where CUDA is absent."""

import warnings

import torch


def attempt(call) -> tuple[str, object, list[str]]:
    """Run ``call()``: ('returned', value, warnings) or ('raised', 'Type: first line', warnings).

    A call that raises is caught whatever its type, since which type a build
    raises (AssertionError, RuntimeError, OSError, ...) is part of the finding.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except Exception as exc:  # noqa: BLE001 - every exception is evidence here
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            return "raised", f"{type(exc).__name__}: {first}", _messages(caught)
    return "returned", value, _messages(caught)


def _messages(caught) -> list[str]:
    return [(str(w.message).strip().splitlines() or [""])[0][:200] for w in caught]


def require_no_cuda(check) -> None:
    """These claims are about hosts where torch.cuda has no GPU: on a CUDA or ROCm
    host, code written for CUDA runs as written, so there is nothing to decide."""
    available = torch.cuda.is_available()
    check.measure("torch.cuda.is_available()", available)
    check.measure("torch build", f"{torch.__version__} (CUDA {torch.version.cuda}, HIP {torch.version.hip})")
    if available:
        check.unsupported("torch.cuda has a GPU here (CUDA or ROCm): code written for CUDA runs as written")


def names_cuda(message: str) -> bool:
    """Whether an error message tells a reader that CUDA (or its driver or NCCL) is what is missing."""
    lowered = message.lower()
    return any(word in lowered for word in ("cuda", "nvidia", "nccl", "gpu"))
