"""A shared bearer token, checked in the engine's own auth mechanism (`langgraph_sdk.Auth`).

`macsql serve --auth token` loads this handler; every request but the health probes must then
carry `Authorization: Bearer $MACSQL_SERVER_TOKEN`. It is the least a server off loopback needs;
per-user identities (OAuth, JWT) go in a handler of your own, passed as `--auth FILE.py:auth`.

Aegra calls the handler with the request's headers as its one argument; LangGraph's own server
passes them by the parameter's name, `headers`, as bytes. Both work.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping

from langgraph_sdk import Auth

TOKEN_ENV = "MACSQL_SERVER_TOKEN"

auth = Auth()


def _authorization(headers: Mapping[str, str] | Mapping[bytes, bytes]) -> str:
    for key, value in headers.items():
        name = key.decode() if isinstance(key, bytes) else key
        if name.lower() == "authorization":
            return value.decode() if isinstance(value, bytes) else value
    return ""


def token_matches(authorization: str, expected: str) -> bool:
    """Whether `authorization` is `Bearer <expected>`, compared in constant time."""
    scheme, _, token = authorization.strip().partition(" ")
    if not expected or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode(), expected.encode())


@auth.authenticate
async def authenticate(headers: Mapping[str, str] | Mapping[bytes, bytes]) -> dict[str, str]:
    if not token_matches(_authorization(headers), os.environ.get(TOKEN_ENV, "").strip()):
        raise Auth.exceptions.HTTPException(status_code=401, detail="a valid bearer token needed")
    return {"identity": "macsql-token", "display_name": "token holder"}
