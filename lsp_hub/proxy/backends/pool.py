"""The backends of a workspace, keyed by (server, root): every client session of the workspace uses the same ones."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator

from lsp_hub.proxy.backends.backend import Backend, State
from lsp_hub.proxy.routing import BackendKey


class BackendPool:
    def __init__(self, factory: Callable[[BackendKey, int], Backend]) -> None:
        self._factory = factory
        self._backends: dict[BackendKey, Backend] = {}
        self._by_uid: dict[int, Backend] = {}
        self._uids = itertools.count(1)

    def get_or_create(self, key: BackendKey) -> Backend:
        backend = self._backends.get(key)
        if backend is None:
            backend = self._factory(key, next(self._uids))
            self._backends[key] = backend
            self._by_uid[backend.uid] = backend
        return backend

    def get(self, key: BackendKey) -> Backend | None:
        return self._backends.get(key)

    def by_uid(self, uid: int) -> Backend | None:
        return self._by_uid.get(uid)

    def __iter__(self) -> Iterator[Backend]:
        return iter(list(self._backends.values()))

    def running(self) -> list[Backend]:
        return [b for b in self._backends.values() if b.state == State.RUNNING]

    async def stop_all(self, *, grace_seconds: float = 2.0) -> None:
        await asyncio.gather(
            *(backend.stop(grace_seconds=grace_seconds) for backend in self._backends.values()),
            return_exceptions=True,
        )

    def kill_all(self) -> None:
        for backend in self._backends.values():
            backend.kill_now()
