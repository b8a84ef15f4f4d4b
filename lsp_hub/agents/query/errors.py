"""How a query ends when it cannot answer: one line on stderr and an exit code (EXIT_* below)."""

from __future__ import annotations

EXIT_ANSWER, EXIT_EMPTY, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3


class QueryError(Exception):
    """Ends the query with one line on stderr and an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class HubFailed(QueryError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_FAILED)


class HubTimeout(HubFailed):
    """No answer within the timeout (the request was cancelled)."""


class HubLost(HubFailed):
    """The connection to the hub ended (a daemon stopped, a child hub died)."""
