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
``aten::_fft_r2c``); it was read off a dispatch recorder on torch 2.13, and
the interpolate rows' kernels off the operators those rows dispatched in the
committed tables.

A name stands for more than one kernel in two cases. An in-place operator
(``aten::index_put_``) is measured through its out-of-place form, as OpInfo
tests it. An operator family (:data:`FAMILIES`) has a kernel per backend:
``scaled_dot_product_attention`` is dispatched as
``_scaled_dot_product_flash_attention_for_cpu`` on the CPU and under other
``_scaled_dot_product_*`` names elsewhere, so a row or a defect claim about
any of them speaks for all of them (never for their backward kernels, which
the backward columns measure). The cast rows (``long``, ``chalf``...) all
dispatch ``aten::_to_copy``; each speaks only for casts to its own dtype
(:data:`CAST_TARGETS`).

Where a table records what each row dispatched, a row speaks for the
operators among them that it is named for (:func:`own_operators`). A row
named for none of them (``square`` dispatches ``aten::pow.Tensor_Scalar``,
``nn.functional.grid_sample`` ``aten::grid_sampler_2d``) speaks for what it
dispatched when that is one kernel (in one or more ranks, as
``reflection_pad1d`` and ``reflection_pad2d``) once the layout and allocation
operators that only take part (:data:`LAYOUT`) are set aside: a row that
composes several kernels speaks for none of them.

A backward kernel (a name with ``_backward`` in it: ``convolution_backward``,
``_softmax_backward_data``) is measured by a row's backward column, where the
table records what each row's gradients dispatched
(``SweepTable.backward_operators``). A row speaks there for the backward
kernels of the operators it speaks for (:func:`forward_of`:
``aten::convolution_backward`` belongs to ``aten::convolution``,
``aten::nll_loss_backward`` to ``aten::nll_loss_forward``), else, by the same
one-kernel rule, for the one backward kernel its gradients dispatched when
only layout operators took part (``relu``'s ``threshold_backward``; not the
``slice_backward`` among the kernels of ``linalg.cond``'s gradients); any other operator its gradients
dispatched (a ``mul``, a ``gather``) is an ordinary kernel, which the forward
columns measure.
"""

from __future__ import annotations

import re

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
    "nn.functional.rms_norm": ("aten::_fused_rms_norm",),
    "nn.functional.interpolate.nearest": (
        "aten::upsample_nearest1d",
        "aten::upsample_nearest2d",
        "aten::upsample_nearest3d",
    ),
    "nn.functional.interpolate.nearest-exact": (
        "aten::_upsample_nearest_exact1d",
        "aten::_upsample_nearest_exact2d",
        "aten::_upsample_nearest_exact3d",
    ),
    "nn.functional.interpolate.linear": ("aten::upsample_linear1d",),
    "nn.functional.interpolate.bilinear": ("aten::upsample_bilinear2d",),
    "nn.functional.interpolate.bicubic": ("aten::upsample_bicubic2d",),
    "nn.functional.interpolate.trilinear": ("aten::upsample_trilinear3d",),
    "nn.functional.interpolate.area": (
        "aten::_adaptive_avg_pool1d",
        "aten::_adaptive_avg_pool2d",
        "aten::_adaptive_avg_pool3d",
    ),
    "nn.functional.upsample_bilinear": ("aten::upsample_bilinear2d",),
    "nn.functional.upsample_nearest": (
        "aten::upsample_nearest1d",
        "aten::upsample_nearest2d",
        "aten::upsample_nearest3d",
    ),
}
# The kernels of one operator that each backend dispatches under its own name: prefix -> the family's name
FAMILIES = {"aten::_scaled_dot_product_": "aten::scaled_dot_product_attention"}
BACKWARD_SUFFIX = "_backward"
FORWARD_SUFFIX = "_forward"  # aten::nll_loss_forward: its backward kernel is aten::nll_loss_backward
# Operators that reshape, alias or allocate: they take part in a row's samples without being what it tests
LAYOUT = frozenset(
    f"aten::{name}"
    for name in (
        "view _unsafe_view expand squeeze squeeze_ unsqueeze permute transpose transpose_ t alias lift_fresh "
        "detach select slice view_as_real view_as_complex clone empty empty_like new_empty new_zeros new_ones "
        "zeros zeros_like ones ones_like full full_like"
    ).split()
)
RANK_SUFFIX = re.compile(r"_?\d+d$")  # reflection_pad2d -> reflection_pad
CAST = "aten::_to_copy"
# OpInfo's cast rows -> the dtype they cast to (torch's names for the dtypes, as the recorder writes them)
CAST_TARGETS = {
    "bfloat16": "bfloat16",
    "bool": "bool",
    "byte": "uint8",
    "char": "int8",
    "double": "float64",
    "float": "float32",
    "half": "float16",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "cdouble": "complex128",
    "cfloat": "complex64",
    "chalf": "complex32",
}


def aten_names(row: str) -> set[str]:
    """The ATen operators (without overload) and families a row stands for, by name."""
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
    extra = EXTRA.get(row, EXTRA.get(base, ()))
    if row in CAST_TARGETS:
        extra = (*extra, CAST)
    return {f"aten::{name}", *extra} if name else set(extra)


def packet(operator: str) -> str:
    """The operator without its overload: aten::add.Tensor -> aten::add."""
    namespace, _, rest = operator.partition("::")
    return f"{namespace}::{rest.split('.')[0]}"


def out_of_place(operator: str) -> str:
    """The out-of-place form of an in-place operator (aten::index_put_ -> aten::index_put), else itself."""
    name, dot, overload = operator.partition(".")
    return name.removesuffix("_") + dot + overload if name.endswith("_") and not name.endswith("__") else operator


def own_operators(row: str, dispatched) -> set[str]:
    """The operators (aten::name.overload), of those a row's samples dispatched, that the row speaks for."""
    names = aten_names(row)
    named = {operator for operator in dispatched if subjects(operator) & names}
    if named:
        return named
    kernels = {operator for operator in dispatched if packet(operator) not in LAYOUT} or set(dispatched)
    return kernels if len({RANK_SUFFIX.sub("", packet(k)) for k in kernels}) == 1 else set()


def is_backward(operator: str) -> bool:
    """Whether the operator is a backward kernel, which only a backward column measures."""
    return BACKWARD_SUFFIX in packet(operator)


def forward_of(operator: str) -> str:
    """The operator a backward kernel belongs to, without overload or a ``_forward`` suffix:
    aten::_softmax_backward_data -> aten::_softmax; aten::nll_loss_forward.default -> aten::nll_loss."""
    return packet(operator).split(BACKWARD_SUFFIX)[0].removesuffix(FORWARD_SUFFIX)


def own_backward_operators(row: str, dispatched, backward) -> set[str]:
    """The backward kernels, of those a row's gradients dispatched (``backward``), that the row speaks for
    (see the module docstring); ``dispatched``: what its forward calls dispatched."""
    forwards = {forward_of(name) for name in own_operators(row, dispatched) | aten_names(row)}
    named = {kernel for kernel in backward if is_backward(kernel) and forward_of(kernel) in forwards}
    if named:
        return named
    kernels = {operator for operator in backward if packet(operator) not in LAYOUT}
    one = len({RANK_SUFFIX.sub("", forward_of(k)) for k in kernels}) == 1 and all(map(is_backward, kernels))
    return kernels if one else set()


def subjects(operator: str) -> set[str]:
    """What a dispatched operator (aten::name.overload) is looked up as, by name: its packet, the
    packet of its out-of-place form, and its family (:data:`FAMILIES`)."""
    found = {packet(operator), packet(out_of_place(operator))}
    if not operator.split(".")[0].endswith(BACKWARD_SUFFIX):
        found |= {family for prefix, family in FAMILIES.items() if operator.startswith(prefix)}
    return found
