"""The features that live beside the proxy, wired into each session (the code index joins here)."""

from __future__ import annotations

from lsp_hub.session import SessionExtension


def default_extensions() -> list[SessionExtension]:
    return []
