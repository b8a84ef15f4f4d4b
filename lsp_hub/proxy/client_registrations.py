"""What a client hears of the servers of its workspace through dynamic registration: the commands they offer, the
files they watch, and the per-language features they serve (`feature_registrations.py`), kept current as servers
start and stop. A session that joins a workspace whose servers already run hears of them as if they had just
started."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from lsp_hub.proxy.client_tokens import quietly
from lsp_hub.proxy.feature_registrations import FEATURES

if TYPE_CHECKING:
    from lsp_hub.proxy.backends import Backend
    from lsp_hub.proxy.session import Session

_command_registrations = itertools.count()  # registration ids: unique for every client of the hub


def advertise_commands(session: Session, uid: int, commands: list[str]) -> None:
    """Tell a client that can hear about new commands those a server (backend `uid`) offers."""
    if not commands or not session.client_supports("workspace", "executeCommand", "dynamicRegistration"):
        return
    registration = {
        "id": f"lsp-hub/commands/{uid}/{next(_command_registrations)}",
        "method": "workspace/executeCommand",
        "registerOptions": {"commands": commands},
    }
    session.spawn(quietly([session.request("client/registerCapability", {"registrations": [registration]})],
                          "a command registration"))


def hear_of_running_servers(session: Session) -> None:
    """The servers that already run, their commands and their watched files, told to a session that just joined."""
    for backend in session.workspace.pool.running():
        session.backend_running(backend)
    for uid, commands in session.workspace.forwarder.commands_by_owner().items():
        advertise_commands(session, uid, [c for c in commands if c not in session.commands])
    registrations = session.workspace.forwarder.client_registrations()
    if registrations and session.client_supports("workspace", "didChangeWatchedFiles", "dynamicRegistration"):
        session.spawn(quietly([session.request("client/registerCapability", {"registrations": registrations})],
                              "the servers' watched-file registrations"))


def update_feature_registrations(session: Session, changed: Backend) -> None:
    """The languages `changed` serves: register their features with what their running servers offer."""
    if not session.feature_registrations.dynamic or session.state != "initialized":
        return
    running = session.workspace.pool.running()
    for language in session.workspace.config.languages.values():
        if changed.spec.name not in language.servers:
            continue
        serving = [b for name in language.servers for b in running if b.spec.name == name and b.capabilities]
        session.feature_registrations.update(language, {
            feature.method: [b.capabilities.get(feature.provider) for b in serving if b.supports(feature.method)]
            for feature in FEATURES})
