"""The ``backend-descriptors`` directive: the descriptor table, from the code."""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ...backends import all_backends
from ..views.markup import table


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
                    ", ".join(backend.packages),
                    ", ".join(backend.env_prefixes) or "—",
                ]
            )
        headers = ["Name", "What", "Device type", "Distributed", "Compile", "Versions recorded", "Variables recorded"]
        return [table(headers, rows, ["tc-backends"])]


def setup_backends_table(app) -> None:
    app.add_directive("backend-descriptors", BackendDescriptorsDirective)
