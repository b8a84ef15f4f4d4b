"""The wire: JSON-RPC framing and endpoints (`jsonrpc/`), peer checks, the daemon's socket and the clients that
reach it (`daemon_transport`, `daemon_client`, `client_framing`), the `--connect` bridge, a raw test client and the
log setup. Knows no session, no backend and no index."""
