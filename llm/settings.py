"""What the llm layer needs to reach a model: a small, hashable settings object.

The graphs' `Context` holds one model string per agent plus the connection settings; the nodes
turn it into a `ModelSettings` for the agent that calls (`macsql.llm.agent_calls`), so this
layer knows nothing of graphs or agents' configuration.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """One chat model and how to reach it."""

    model: str
    """'provider:name' for langchain's init_chat_model, or a name given to register_chat_model."""
    base_url: str | None = None
    """An OpenAI-compatible server; None means OPENAI_BASE_URL or the provider's default."""
    api_key: str | None = None
    """None means the provider's environment variable (OPENAI_API_KEY)."""
    temperature: float = 0.0
    timeout: float = 60.0
    """Seconds before one request is abandoned."""
    max_retries: int = 2
    """Retries, with backoff, on rate limits, timeouts and server errors."""
    max_tokens: int | None = None
    """The most tokens one reply may have (the server's default when None)."""
