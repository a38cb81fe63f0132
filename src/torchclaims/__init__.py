"""torchclaims: executable claims about running PyTorch on other accelerators."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # ``import torchclaims; torchclaims.check(model, inputs)`` without importing torch up front
    if name == "check":
        import importlib

        return importlib.import_module(".check", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
