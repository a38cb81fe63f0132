"""One architecture: a tiny model on the CPU, then the same weights on the device.

The CPU side finds a tiny configuration that builds and runs
(:mod:`.arch_config`) and computes the reference: the logits of a six-token
prompt and :data:`NEW_TOKENS` greedily generated tokens. The device side copies
the same weights to the device and does the same, inside the backend's
fallback probe. Each stage gets a code: ``N`` matches natively, ``F`` matches
with a CPU fallback, ``M`` differs, ``R`` raises, ``K`` raises
``NotImplementedError``, ``C`` has no CPU reference, ``-`` not run because an
earlier stage failed. Logits match within ``rtol`` 1e-3 / ``atol`` 1e-4
(the forward stage's detail gives the largest absolute and relative error
and its ratio to that tolerance, matched or not); tokens must be identical.
"""

from __future__ import annotations

import copy
import warnings

import torch

from .arch_config import MAX_PARAMETERS, TARGETED, attempts, tiny_config
from .op_check import first_line

PROMPT = [[3, 17, 42, 99, 5, 64]]
NEW_TOKENS = 2  # the prefill and one step with the cache: each further step is one more compilation on XLA
RTOL, ATOL = 1e-3, 1e-4


class NoTinyModel(Exception):
    """No size set gave a model that builds and runs on the CPU; ``cause`` says which way it failed."""

    def __init__(self, cause: str, detail: str):
        super().__init__(detail)
        self.cause = cause


def _forward(model, device):
    prompt = torch.tensor(PROMPT, device=device)
    with torch.no_grad():
        return model(input_ids=prompt, attention_mask=torch.ones_like(prompt)).logits.float().cpu()


def _generate(model, device):
    prompt = torch.tensor(PROMPT, device=device)
    with torch.no_grad():
        out = model.generate(
            input_ids=prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    return out[0, prompt.shape[1] :].cpu()


def reference(model_type: str):
    """(model on the CPU, size set name, parameter count, logits, tokens or the generate error)."""
    from transformers import AutoModelForCausalLM

    failures = []
    ran_on_cpu = False
    for sizes, targeted in attempts(model_type):
        name = sizes.name + (
            f", with {', '.join(sorted(TARGETED[model_type]))} set for {model_type}" if targeted else ""
        )
        try:
            config = tiny_config(model_type, sizes, targeted)
            with torch.device("meta"):
                parameters = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
            if parameters > MAX_PARAMETERS:
                failures.append(f"{name}: {parameters:,} parameters")
                continue
            torch.manual_seed(0)
            model = AutoModelForCausalLM.from_config(config).eval()
        except ImportError as exc:
            raise NoTinyModel("p", f"needs a package that is not installed: {first_line(exc)}") from None
        except Exception as exc:
            failures.append(f"{name}: {first_line(exc)}")
            continue
        try:
            logits = _forward(model, "cpu")
        except ImportError as exc:
            raise NoTinyModel("p", f"needs a package that is not installed: {first_line(exc)}") from None
        except Exception as exc:
            ran_on_cpu = True
            failures.append(f"{name}: forward on the CPU raised {first_line(exc)}")
            continue
        try:
            tokens = _generate(model, "cpu")
        except Exception as exc:
            tokens = f"generate on the CPU raised {first_line(exc)}"
        return model, name, parameters, logits, tokens
    if ran_on_cpu:
        raise NoTinyModel("r", "harness: no tiny model it built ran on the CPU: " + "; ".join(failures))
    raise NoTinyModel("c", "harness: config could not be shrunk: " + "; ".join(failures))


def _stage(run, probe, sync, expected, compare):
    """(code, detail, fallbacks) of one stage on the device."""
    try:
        with probe.watch() as seen:
            actual = run()
            sync()
    except Exception as exc:
        return ("K" if isinstance(exc, NotImplementedError) else "R"), first_line(exc), []
    matched, detail = compare(actual, expected)
    if not matched:
        return "M", detail, seen
    return ("F" if seen else "N"), detail, seen


def _compare_logits(actual, expected) -> tuple[bool, str]:
    """(within the tolerance, the size of the difference in words)."""
    if actual.shape != expected.shape:
        return False, f"logits of shape {tuple(actual.shape)}, CPU {tuple(expected.shape)}"
    a, e = actual.double(), expected.double()
    same = (a == e) | (a.isnan() & e.isnan())
    error = torch.where(same, 0.0, torch.nan_to_num((a - e).abs(), nan=float("inf")))
    size = (
        f"max abs error {error.max().item():.3g}, max rel error {(error / e.abs()).nan_to_num(0.0).max().item():.3g}, "
        f"{(error / (ATOL + RTOL * e.abs())).max().item():.3g}x the tolerance (rtol {RTOL:g}, atol {ATOL:g})"
    )
    if not torch.allclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
        return False, f"logits differ: {size}"
    return True, size if error.max().item() else ""


def _compare_tokens(actual, expected) -> tuple[bool, str]:
    same = torch.equal(actual, expected)
    return same, "" if same else f"tokens {actual.tolist()}, CPU {expected.tolist()}"


def check_architecture(model_type: str, device: torch.device, *, probe, sync, compare_with_cpu: bool) -> dict:
    """A plain dict answer: configuration, and code and detail of each stage."""
    warnings.filterwarnings("ignore")
    try:
        model, sizes, parameters, logits, tokens = reference(model_type)
    except NoTinyModel as exc:
        return {"cause": exc.cause, "detail": str(exc), "forward": ("-", ""), "generate": ("-", "")}
    answer = {"config": f"{sizes}; {parameters:,} parameters", "fallbacks": []}
    if not compare_with_cpu:
        answer["forward"] = ("N", "")
        answer["generate"] = ("N", "") if not isinstance(tokens, str) else ("C", tokens)
        return answer
    try:
        on_device = copy.deepcopy(model).to(device)
    except Exception as exc:
        code = "K" if isinstance(exc, NotImplementedError) else "R"
        answer.update(forward=(code, f"moving the model to the device raised {first_line(exc)}"), generate=("-", ""))
        return answer
    fallbacks = set()
    code, detail, seen = _stage(lambda: _forward(on_device, device), probe, sync, logits, _compare_logits)
    answer["forward"] = (code, detail)
    fallbacks.update(seen)
    if isinstance(tokens, str):
        answer["generate"] = ("C", tokens)
    elif code in "RK":
        answer["generate"] = ("-", "")
    else:
        code, detail, seen = _stage(lambda: _generate(on_device, device), probe, sync, tokens, _compare_tokens)
        answer["generate"] = (code, detail)
        fallbacks.update(seen)
    answer["fallbacks"] = sorted(fallbacks)
    return answer
