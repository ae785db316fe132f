"""What a server client reports: a run that failed there, or no server to run it on, and how
many runs an item took.

Kept free of the SDK's imports, so that the eval runner can tell these apart cheaply.
"""

from __future__ import annotations


class ServerRunError(RuntimeError):
    """The server ran the run and it ended in error (the graph raised): the item's failure,
    recorded like an in-process one."""


class NoServerAnswers(RuntimeError):
    """No server took the run, or every server that took it was lost before it finished, as
    many times as the client retries: the item gets no record, so that `--resume` runs it."""


SERVER_RUNS_KEY = "server_runs"
"""In a server pipeline's output and an item's record: the runs the item took (more than 1 when
a server was lost under it)."""
