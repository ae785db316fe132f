"""Serving the graphs from a self-hosted server, and running them there.

- `engine`: `macsql serve` — Aegra (a LangGraph-SDK-compatible server on PostgreSQL) with the
  four pipelines registered, its database prepared once, N worker processes;
- `asgi`: the ASGI app each worker runs (Aegra's, with a thread pool sized for graph nodes);
- `token_auth`: a bearer-token check in the engine's own auth mechanism, for non-loopback use;
- `client`: runs on one or more such servers through the LangGraph SDK, with lost runs retried
  (what `macsql eval --server` and `macsql chat --server` use);
- `errors`: what a client reports when a run fails or no server takes it.
"""
