"""Where macsql keeps caches: $MACSQL_CACHE_DIR, else $XDG_CACHE_HOME/macsql, else ~/.cache."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    explicit = os.environ.get("MACSQL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "macsql"
