"""The ``backend-descriptors`` directive: the descriptor table, from the code."""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ...backends import FallbackSwitch, all_backends
from ..views.markup import table


def _fallback_switch(switch: FallbackSwitch | None) -> str:
    """The switch `torchclaims check --backend` also runs the step with, and what it forbids."""
    return "—" if switch is None else f"{switch}: {switch.covers}"


class BackendDescriptorsDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        rows = []
        for backend in all_backends().values():
            rows.append(
                [
                    nodes.literal("", backend.name),
                    backend.description,
                    nodes.literal("", backend.device_type),
                    f"{backend.dist_backend}"
                    + (f" ({backend.dist_init_method})" if backend.dist_init_method else "")
                    + (
                        f"; ranks share a device through {backend.shared_device_dist_backend}"
                        if backend.shared_device_dist_backend
                        else ""
                    ),
                    backend.compile_backend,
                    _fallback_switch(backend.fallback_switch),
                    ", ".join(backend.packages),
                    ", ".join(backend.env_prefixes) or "—",
                ]
            )
        headers = [
            "Name",
            "What",
            "Device type",
            "Distributed",
            "Compile",
            "CPU fallback forbidden by",
            "Versions recorded",
            "Variables recorded",
        ]
        return [table(headers, rows, ["tc-backends"])]


def setup_backends_table(app) -> None:
    app.add_directive("backend-descriptors", BackendDescriptorsDirective)
