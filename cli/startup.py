"""Process-wide settings of the `macsql` command, made before any library is imported.

Importing langchain-openai imports the OpenAI client's 1,100 pydantic response types, and
pydantic builds each one's validator as its class is created, although one `ask` validates a
handful of them. `defer_build` builds a model's validator on its first use instead (a
documented per-model pydantic setting); here it becomes the default for every model of this
process, which cuts about 80 ms of CPU before the first model request
(`benchmarks/bench_first_contact.py`). Only the short interactive commands do this, in their
own process, and only with a pydantic whose deferred build is thread-safe (it takes a lock): a
program that imports macsql as a library, and `eval`, keep pydantic's defaults.
"""

from __future__ import annotations


def defer_pydantic_validators() -> bool:
    """Make pydantic build validators on first use in this process; False when the installed
    pydantic keeps its defaults elsewhere (then nothing changes but the speed)."""
    try:
        import pydantic.main
        from pydantic._internal import _config
    except ImportError:
        return False
    if not hasattr(pydantic.main, "_rebuild_lock"):  # older: concurrent first uses could race
        return False
    defaults = getattr(_config, "config_defaults", None)
    if not isinstance(defaults, dict) or "defer_build" not in defaults:
        return False
    defaults["defer_build"] = True
    return True
