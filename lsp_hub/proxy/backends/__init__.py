"""Downstream language servers: one `Backend` per (server, root), kept in a `BackendPool`."""

from lsp_hub.proxy.backends.backend import Backend, BackendHost, NotSupported, Pending, State
from lsp_hub.proxy.backends.pool import BackendPool

__all__ = ["Backend", "BackendHost", "BackendPool", "NotSupported", "Pending", "State"]
