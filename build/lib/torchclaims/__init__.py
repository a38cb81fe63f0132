"""torchclaims: executable claims about running PyTorch on other accelerators."""

__version__ = "0.1.0"
