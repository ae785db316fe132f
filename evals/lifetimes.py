"""Worker processes die with their parent, and one run directory has one writer.

A worker forked by `eval --processes N` must not outlive its parent: after a `kill -9` of the
parent it would go on sending paid model requests whose results nobody reads. On Linux the
kernel kills it (`PR_SET_PDEATHSIG`); elsewhere, and as a second layer, a thread checks every
second that the parent is still the one that started it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import IO

from macsql.evals.results import RunDirectoryError

_PR_SET_PDEATHSIG = 1
_PARENT_POLL = 1.0


def die_with_parent(parent_pid: int) -> None:
    """Make this process end when `parent_pid` (its parent) ends."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the polling thread below still holds
    if os.getppid() != parent_pid:  # the parent died before the signal was set up
        os._exit(1)
    threading.Thread(
        target=_watch_parent, args=(parent_pid,), daemon=True, name="macsql-parent-watch"
    ).start()


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(_PARENT_POLL)
        if os.getppid() != parent_pid:
            os._exit(1)


LOCK_FILE = ".macsql-eval.lock"


class RunDirectoryBusy(RunDirectoryError):
    """Another eval is writing to the same run directory."""


def lock_run_directory(out: Path) -> IO[str]:
    """An exclusive lock on `out`, held while the returned file stays open; refuses at once
    (never waits) when another process holds it. The lock file is opened without following a
    symbolic link (one planted there would have its target truncated) and must be a regular
    file."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # --out names a file, or a folder that may not be made
        why = "it is a file" if exc.errno == errno.EEXIST else exc.strerror
        raise RunDirectoryError(
            f"cannot use {out} as the run folder: {why}; give this run another --out"
        ) from None
    path = out / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RunDirectoryError(
                f"{path} is a symbolic link; macsql does not follow it (it would write where "
                "the link points). Remove it, or give this run another --out"
            ) from None
        raise RunDirectoryError(f"cannot create the lock file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunDirectoryError(f"{path} is not a regular file; remove it, or use another --out")
    handle = os.fdopen(fd, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise RunDirectoryBusy(
            f"another macsql eval (pid {holder}) is writing to {out}; wait for it to end, "
            "or give this run another --out"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle
