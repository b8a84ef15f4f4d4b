"""The method table (`lsp_hub.proxy.methods`): what the hub advertises and what it can route are the same set, every
spec can be carried out, and a new forwarded method is one entry (run here against stand-in servers)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lsp_hub.proxy import runners
from lsp_hub.proxy.backends import State
from lsp_hub.proxy.capabilities import CAPABILITY_PATHS, hub_capabilities
from lsp_hub.proxy.feature_registrations import FeatureRegistrations
from lsp_hub.proxy.file_operations import FILE_OPERATIONS
from lsp_hub.proxy.index_stand_in import STAND_INS
from lsp_hub.proxy.methods import FORWARDED, METHODS, MethodSpec, Positions, spec_for
from lsp_hub.proxy.notifications import NOTIFICATIONS
from lsp_hub.proxy.semantic_tokens import HubLegend, hub_provider
from lsp_hub.proxy.strategies import Strategy, merge_locations

HUB_ONLY_KEYS = {"positionEncoding", "textDocumentSync", "workspace"}  # no request of their own


def advertised_providers() -> set[str]:
    """Every provider key the hub may advertise, in any client's initialize answer."""
    everything = hub_capabilities(["lspHub.status"], pull_diagnostics=True,
                                  per_language=FeatureRegistrations({}, lambda method, params: None)
                                  .static_capabilities(),
                                  semantic_tokens=hub_provider(HubLegend(growable=False)))
    return set(everything) - HUB_ONLY_KEYS


def test_every_provider_the_hub_advertises_has_a_spec_and_every_spec_is_advertised() -> None:
    routed = {spec.capability[0] for spec in METHODS.values() if spec.capability and spec.capability[0] != "workspace"}
    assert advertised_providers() == routed


def test_the_file_operations_the_hub_advertises_are_routed() -> None:
    advertised = hub_capabilities([])["workspace"]["fileOperations"]
    requests = {spec.capability[2] for spec in METHODS.values()
                if spec.capability and spec.capability[0] == "workspace"}
    notifications = {FILE_OPERATIONS[method] for method in NOTIFICATIONS if method in FILE_OPERATIONS}
    assert set(advertised) == requests | notifications and not requests & notifications


def test_every_spec_can_be_carried_out() -> None:
    for method, spec in METHODS.items():
        assert spec.strategy in runners.RUNNERS, method
        assert (spec.merge is not None) == (spec.strategy is Strategy.FAN_OUT), method
        assert spec.stand_in is None or spec.stand_in in STAND_INS, method
        assert spec.owner_of is None or METHODS[spec.owner_of].remembers_owner, method
        assert CAPABILITY_PATHS.get(method) == spec.capability, method
    assert set(STAND_INS) == {spec.stand_in for spec in METHODS.values() if spec.stand_in}
    assert spec_for("someServer/ownRequest") is FORWARDED


# ---------------------------------------------------------------------------------------------- a new method
class StandInPending:
    sent_while_loading = False

    def __init__(self, backend: StandInServer, method: str, params: Any, answer: Any) -> None:
        self.backend, self.method, self.params, self.cancelled = backend, method, params, False
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.future.set_result(answer)

    def cancel(self) -> None:
        self.cancelled = True


class StandInServer:
    """A running server that answers every request with its own answer and records what it was asked."""

    loading_project = False
    state = State.RUNNING

    def __init__(self, uid: int, answer: Any, offers: bool = True) -> None:
        self.uid, self.name, self.answer, self.offers = uid, f"server{uid}", answer, offers
        self.asked: list[tuple[str, Any]] = []

    def supports(self, method: str) -> bool:
        return self.offers

    def request(self, method: str, params: Any) -> StandInPending:
        self.asked.append((method, params))
        return StandInPending(self, method, params, self.answer)


class StandInWorkspace:
    def __init__(self, servers: list[StandInServer]) -> None:
        self.servers = servers
        self.features: list[str] = []

    def backends_for_uri(self, uri: str, feature: str) -> list[StandInServer]:
        self.features.append(feature)
        return self.servers


class StandInContext:
    def __init__(self, servers: list[StandInServer]) -> None:
        self.workspace = StandInWorkspace(servers)
        self.owners: dict[str, int] = {}
        self.stood_in: list[str] = []

    def stand_in(self, name: str, params: Any) -> Any:
        self.stood_in.append(name)
        return None


def location(line: int) -> dict[str, Any]:
    point = {"line": line, "character": 0}
    return {"uri": "file:///a.py", "range": {"start": point, "end": point}}


@pytest.mark.asyncio
async def test_a_new_fan_out_method_is_one_table_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    method = "example/sites"
    monkeypatch.setitem(METHODS, method, MethodSpec(
        Strategy.FAN_OUT, ("exampleProvider",), merge=lambda answers: merge_locations([a for _, a in answers]),
        feature="example", stand_in="sites"))
    servers = [StandInServer(1, [location(1), location(2)]), StandInServer(2, [location(2), location(3)]),
               StandInServer(3, [location(9)], offers=False)]
    context = StandInContext(servers)
    params = {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, "character": 0},
              "partialResultToken": "t"}
    answer = await runners.run(context, method, params)  # type: ignore[arg-type]
    assert answer == [location(1), location(2), location(3)]  # both offering servers, merged without duplicates
    assert [len(server.asked) for server in servers] == [1, 1, 0]  # the one not offering it is not asked
    assert "partialResultToken" not in servers[0].asked[0][1]
    assert context.workspace.features == ["example"]  # routed under its feature-filter name
    assert context.stood_in == []  # an answer: the index does not stand in


@pytest.mark.asyncio
async def test_a_new_first_answer_method_stands_in_when_no_server_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    method = "example/first"
    monkeypatch.setitem(METHODS, method, MethodSpec(Strategy.FIRST, ("exampleProvider",), stand_in="sites"))
    context = StandInContext([StandInServer(1, None, offers=False)])
    answer = await runners.run(context, method, {"textDocument": {"uri": "file:///a.py"}})  # type: ignore[arg-type]
    assert answer is None and context.stood_in == ["sites"]
    assert spec_for(method).positions is Positions.MAPPED
