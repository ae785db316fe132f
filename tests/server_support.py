"""The rule for a missing server engine; the servers themselves are `macsql.testing.servers`.

Under CI=true a missing engine fails the tests, elsewhere it skips them (`pg_support`).
"""

from __future__ import annotations

from pg_support import skip_or_fail_in_ci


def require_engine() -> None:
    """Aegra and the SDK are the `serve` extra (in `dev` too)."""
    try:
        import aegra_api  # noqa: F401
        import langgraph_sdk  # noqa: F401
    except ImportError as exc:
        skip_or_fail_in_ci(f"the server engine is not installed (pip install -e '.[dev]'): {exc}")
