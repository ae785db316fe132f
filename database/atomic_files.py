"""Files replaced whole or not at all, so that a reader, or a kill mid-write, never leaves half a
file where a complete one was expected (caches, prediction files, a run's bookkeeping)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write to; when the block ends without an error it
    replaces `path` in one step, otherwise it is deleted. The name is unique per process and
    thread, so concurrent writers of one file never write into each other's temporary file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone after a replace; a failed write's leftover otherwise


def write_text_atomically(path: Path, text: str) -> None:
    """`path.write_text(text)` (UTF-8), all or nothing."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
