"""Chat models for the agents: resolution from `Context`, one cached client per setting.

A model is named by a `provider:name` string for langchain's `init_chat_model`, so any provider
langchain knows works. `provider` `openai` with a `base_url` reaches any OpenAI-compatible server
(vLLM, Ollama, llama.cpp). Names registered with `register_chat_model` (scripted models in tests,
or a model object a host already built) take precedence.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from langchain_core.language_models import BaseChatModel

from macsql.llm.deadlines import deadline_http_client, shared_tls_context
from macsql.llm.settings import ModelSettings

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


class ModelConfigError(ValueError):
    """The model cannot be set up (no API key, unknown provider, ...)."""


_registered: dict[str, BaseChatModel] = {}
_clients: dict[tuple[object, ...], BaseChatModel] = {}
_lock = threading.Lock()
_build_lock = threading.Lock()


def register_chat_model(name: str, model: BaseChatModel) -> None:
    """Make `name` resolve to an existing model object (Context fields hold strings)."""
    with _lock:
        _registered[name] = model


def unregister_chat_model(name: str) -> None:
    with _lock:
        _registered.pop(name, None)


@contextmanager
def registered_chat_model(name: str, model: BaseChatModel) -> Iterator[str]:
    """Register a model for the duration of a block; yields its name."""
    register_chat_model(name, model)
    try:
        yield name
    finally:
        unregister_chat_model(name)


def is_registered(name: str) -> bool:
    """True when `name` is a model object given to register_chat_model (it retries, or not,
    as its owner built it; `call_model` adds no retries of its own)."""
    with _lock:
        return name in _registered


def _split(model: str) -> tuple[str, str]:
    provider, sep, name = model.partition(":")
    if not sep:
        return "openai", model
    return provider, name


def _base_url(settings: ModelSettings, provider: str) -> str | None:
    if settings.base_url:
        return settings.base_url
    return os.environ.get("OPENAI_BASE_URL") if provider == "openai" else None


def endpoint_of(settings: ModelSettings) -> str:
    """Where requests for `settings` go, for error messages: the server URL, or the provider."""
    provider, _name = _split(settings.model)
    url = _base_url(settings, provider)
    if url:
        return url
    return OPENAI_DEFAULT_URL if provider == "openai" else f"{provider}'s default endpoint"


def get_chat_model(settings: ModelSettings) -> BaseChatModel:
    """The chat model `settings` name, built once and reused."""
    spec = settings.model
    with _lock:
        if spec in _registered:
            return _registered[spec]
    provider, name = _split(spec)
    base_url = _base_url(settings, provider)
    api_key = settings.api_key
    if provider == "openai" and not (api_key or os.environ.get("OPENAI_API_KEY")):
        if not base_url:
            # Context fields first: Studio and Python callers have no flags; the CLI maps
            # each field to its flag (--model, --base-url, --api-key).
            raise ModelConfigError(
                "no model configured: set OPENAI_API_KEY, or set the Context field base_url "
                "to a local OpenAI-compatible server (and api_key if it needs one), or model "
                "to another provider ('anthropic:...')"
            )
        api_key = "not-needed"  # local servers usually ignore the key, but the client wants one
    key = (
        provider,
        name,
        base_url,
        api_key,
        settings.temperature,
        settings.timeout,
        settings.max_retries,
        settings.max_tokens,
    )
    with _build_lock:  # concurrent first calls share one client instead of building many
        client = _clients.get(key)
        if client is None:
            client = _build_client(settings, provider, name, base_url, api_key)
            _clients[key] = client
        return client


def _build_client(
    settings: ModelSettings, provider: str, name: str, base_url: str | None, api_key: str | None
) -> BaseChatModel:
    kwargs: dict[str, object] = {
        "temperature": settings.temperature,
        "timeout": settings.timeout,
        # call_model retries itself, within the call's total deadline (llm/deadlines.py).
        "max_retries": 0,
    }
    if base_url:
        kwargs["base_url"] = base_url
    if api_key:
        kwargs["api_key"] = api_key
    if provider == "openai":
        # call_model owns the deadline; this client honours it (llm/deadlines.py).
        kwargs["http_client"] = deadline_http_client(settings.timeout)
        # Given, rather than langchain-openai's default, so that it shares the TLS context.
        kwargs["http_async_client"] = httpx.AsyncClient(
            verify=shared_tls_context(),
            timeout=settings.timeout,
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
            follow_redirects=True,
        )
    if settings.max_tokens:
        kwargs["max_tokens"] = settings.max_tokens
    try:
        client = _construct(provider, name, kwargs)
    except Exception as exc:  # unknown provider, missing integration package, bad kwargs
        raise ModelConfigError(f"cannot set up model {settings.model!r}: {exc}") from exc
    return client


def _construct(provider: str, name: str, kwargs: dict[str, object]) -> BaseChatModel:
    """The client, importing only what it needs: `init_chat_model` (the `langchain` package)
    for any provider, or for OpenAI and compatible servers the class it would pick anyway,
    which spares the first request of every `ask` the import of `langchain.chat_models`."""
    if provider == "openai":
        # Our ChatOpenAI keeps the reasoning of OpenAI-compatible reasoning servers.
        from macsql.llm.openai_client import ReasoningChatOpenAI

        return ReasoningChatOpenAI(model=name, stream_usage=True, **kwargs)  # type: ignore[arg-type]
    from langchain.chat_models import init_chat_model

    client: BaseChatModel = init_chat_model(name, model_provider=provider, **kwargs)  # type: ignore[call-overload]
    return client


def _forget_clients_in_child() -> None:
    """A forked process builds its own clients: their HTTP connections are the parent's."""
    global _lock, _build_lock
    _lock, _build_lock = threading.Lock(), threading.Lock()
    _clients.clear()
    # langchain-openai also keeps one default httpx client per (base_url, timeout) for the
    # whole process, which a rebuilt ChatOpenAI would pick up again with the parent's pooled
    # connections. Its caches are private, so they are cleared only where they exist.
    utils = sys.modules.get("langchain_openai.chat_models._client_utils")
    for name in ("_cached_sync_httpx_client", "_cached_async_httpx_client"):
        cache_clear = getattr(getattr(utils, name, None), "cache_clear", None)
        if cache_clear is not None:
            cache_clear()


os.register_at_fork(after_in_child=_forget_clients_in_child)
