"""Downstream language servers: one `Backend` per (server, root), kept in a `BackendPool`; its process
(`server_process`), requests (`pending`), document sync (`document_sync`) and progress (`server_progress`)."""

from lsp_hub.proxy.backends.backend import Backend, BackendHost, State
from lsp_hub.proxy.backends.pending import NotSupported, Pending
from lsp_hub.proxy.backends.pool import BackendPool

__all__ = ["Backend", "BackendHost", "BackendPool", "NotSupported", "Pending", "State"]
