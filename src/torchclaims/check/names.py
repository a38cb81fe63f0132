"""OpInfo row names mapped to the ATen operators they dispatch: the match by name.

Used only for tables that do not record, per row, the operators their samples
dispatched (``SweepTable.operators``, recorded by sweeps since that field
exists); a report says which of its matches were made this way.

The rule: a row ``name.variant`` stands for ``aten::name``; the namespaces
``fft.``, ``linalg.`` and ``special.`` become prefixes (``linalg.vector_norm``
-> ``aten::linalg_vector_norm``) and ``nn.functional.`` is dropped
(``nn.functional.pixel_shuffle`` -> ``aten::pixel_shuffle``). :data:`EXTRA`
adds what a composite function decomposes into on the CPU, which a dispatch
mode sees instead of the function (``torch.fft.rfft`` dispatches
``aten::_fft_r2c``); it was read off a dispatch recorder on torch 2.13.
"""

from __future__ import annotations

PREFIXED = ("fft", "linalg", "special")
FFT_R2C, FFT_C2C, FFT_C2R = "aten::_fft_r2c", "aten::_fft_c2c", "aten::_fft_c2r"
EXTRA = {
    "fft.fft": (FFT_R2C, FFT_C2C),
    "fft.fft2": (FFT_R2C, FFT_C2C),
    "fft.fftn": (FFT_R2C, FFT_C2C),
    "fft.ifft": (FFT_C2C,),
    "fft.ifft2": (FFT_C2C,),
    "fft.ifftn": (FFT_C2C,),
    "fft.rfft": (FFT_R2C,),
    "fft.rfft2": (FFT_R2C,),
    "fft.rfftn": (FFT_R2C,),
    "fft.irfft": (FFT_C2R,),
    "fft.irfft2": (FFT_C2R,),
    "fft.irfftn": (FFT_C2R,),
    "fft.hfft": (FFT_C2R,),
    "fft.ihfft": (FFT_R2C,),
    "nn.functional.conv1d": ("aten::convolution",),
    "nn.functional.conv2d": ("aten::convolution",),
    "nn.functional.conv3d": ("aten::convolution",),
    "nn.functional.conv_transpose1d": ("aten::convolution",),
    "nn.functional.conv_transpose2d": ("aten::convolution",),
    "nn.functional.conv_transpose3d": ("aten::convolution",),
    "nn.functional.linear": ("aten::addmm", "aten::mm"),
    "matmul": ("aten::mm", "aten::bmm"),
    "softmax": ("aten::_softmax",),
    "nn.functional.softmax": ("aten::_softmax",),
    "log_softmax": ("aten::_log_softmax",),
    "nn.functional.log_softmax": ("aten::_log_softmax",),
    "nn.functional.layer_norm": ("aten::native_layer_norm",),
    "nn.functional.batch_norm": ("aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit_no_training"),
    "nn.functional.group_norm": ("aten::native_group_norm",),
    "nn.functional.dropout": ("aten::native_dropout",),
    "nn.functional.max_pool2d": ("aten::max_pool2d_with_indices",),
    "nn.functional.nll_loss": ("aten::nll_loss_forward",),
    "nn.functional.cross_entropy": ("aten::_log_softmax", "aten::nll_loss_forward"),
    "nn.functional.scaled_dot_product_attention": ("aten::_scaled_dot_product_flash_attention_for_cpu",),
    "nn.functional.rms_norm": ("aten::_fused_rms_norm",),
}


def aten_names(row: str) -> set[str]:
    """The ATen operators (without overload) a row stands for, by name."""
    parts = row.split(".")
    if parts[:2] == ["nn", "functional"]:
        name = parts[2] if len(parts) > 2 else ""
    elif parts[0] in PREFIXED and len(parts) > 1:
        name = f"{parts[0]}_{parts[1]}"
    else:
        name = parts[0]
    base = ".".join(
        parts[:3] if parts[:2] == ["nn", "functional"] else parts[:2] if parts[0] in PREFIXED else parts[:1]
    )
    return {f"aten::{name}", *EXTRA.get(base, ())} if name else set(EXTRA.get(base, ()))
