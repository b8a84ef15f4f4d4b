"""One client's side of semantic tokens: the hub's legend as this client knows it, its registration, and every
server's tokens remapped into it (`semantic_tokens.py` holds the pure legend and remapping rules).

A client that registers semantic tokens dynamically gets a legend that grows as servers with new names start
(registered again each time, under a new id); any other client gets the standard legend in its initialize answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.semantic_tokens import (
    DELTA,
    FULL,
    REGISTRATION_METHOD,
    HubLegend,
    hub_provider,
    method_for,
    remap_result,
    server_provider,
    unwrap_result_id,
    wrap_result_id,
)

if TYPE_CHECKING:
    from lsp_hub.proxy.backends import Backend, BackendPool

logger = logging.getLogger(__name__)


class ClientSemanticTokens:
    def __init__(self, registers_dynamically: Callable[[], bool],
                 request: Callable[[str, Any], asyncio.Future[Any]],
                 spawn: Callable[[Awaitable[Any]], asyncio.Task[Any]]) -> None:
        self._registers_dynamically = registers_dynamically
        self._request = request
        self._spawn = spawn
        self._legend: HubLegend | None = None  # made at first use, once the client's capabilities are known
        self._registration: tuple[str, int] | None = None  # (registration id, legend version) the client has

    @property
    def legend(self) -> HubLegend:
        if self._legend is None:
            # Growable only if the client lets the hub register the grown legend again.
            self._legend = HubLegend(growable=self._registers_dynamically())
        return self._legend

    def static_provider(self) -> dict[str, Any] | None:
        """SemanticTokensOptions for the initialize answer, or None when the hub registers them once servers run."""
        return None if self.legend.growable else hub_provider(self.legend)

    @staticmethod
    def provider(backend: Backend) -> dict[str, Any] | None:
        if not backend.spec.allows(FULL):
            return None
        return server_provider(backend.capabilities, backend.registered_options(REGISTRATION_METHOD))

    def issuer(self, pool: BackendPool, params: Any) -> tuple[Backend, str] | None:
        """The running server process that issued a delta request's previousResultId, and its own id for it."""
        from lsp_hub.proxy.backends import State

        unwrapped = unwrap_result_id(params.get("previousResultId") if isinstance(params, dict) else None)
        if unwrapped is None:
            return None
        uid, generation, server_result_id = unwrapped
        backend = pool.by_uid(uid)
        if backend is None or backend.state != State.RUNNING or backend.pid != generation:
            return None  # gone, or restarted since: the new process never issued that id
        provider = self.provider(backend)
        if provider is None or method_for(provider, DELTA) != DELTA:
            return None
        return backend, server_result_id

    def for_client(self, backend: Backend, result: Any) -> Any:
        provider = self.provider(backend)
        if provider is None or not isinstance(result, dict):
            return None  # without the server's legend its indices mean nothing to the client
        token_map = self.legend.map_for(provider["legend"])
        return wrap_result_id(remap_result(result, token_map), backend.uid, backend.pid or 0)

    def register(self, backend: Backend) -> None:
        """With a client that registers dynamically: (re-)register textDocument/semanticTokens when a running
        server's legend is new to the hub. The legend only grows, so tokens the client already has stay valid."""
        legend = self.legend
        provider = self.provider(backend)
        if not legend.growable or provider is None:
            return
        legend.map_for(provider["legend"])
        previous = self._registration
        if previous is not None and previous[1] == legend.version:
            return
        registration_id = f"lsp-hub/semanticTokens/{legend.version}"
        self._registration = (registration_id, legend.version)
        answers = []
        if previous is not None:
            answers.append(self._request("client/unregisterCapability", {
                "unregisterations": [{"id": previous[0], "method": REGISTRATION_METHOD}]}))
        answers.append(self._request("client/registerCapability", {"registrations": [{
            "id": registration_id, "method": REGISTRATION_METHOD,
            "registerOptions": {"documentSelector": None, **hub_provider(legend)}}]}))
        self._spawn(quietly(answers, "semantic tokens registration"))


async def quietly(answers: list[asyncio.Future[Any]], what: str) -> None:
    """Await the client's answers to the hub's own requests; a refusal is logged, not raised."""
    for answer in answers:
        try:
            await answer
        except Exception as exc:
            logger.info("client declined %s: %s", what, exc)
