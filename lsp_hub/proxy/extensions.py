"""The features that live beside the proxy, wired into each session."""

from __future__ import annotations

from lsp_hub.proxy.session import SessionExtension


def default_extensions() -> list[SessionExtension]:
    from lsp_hub.proxy.index_extension import IndexExtension

    return [IndexExtension()]
