"""Approving SQL on a terminal (`approve_sql`): show each waiting SQL, ask approve / edit /
reject. What waits, and how a run is resumed, is `macsql.graph.approvals`, which the Python
API shares."""

from __future__ import annotations

from collections.abc import Callable

from macsql.graph.approvals import Decision, Waiting


class LeaveWaiting(Exception):
    """The person left the prompt (end of input, Ctrl-C): the run stays paused."""


_CHOICES = {"a": "approve", "approve": "approve", "y": "approve", "yes": "approve"}
_CHOICES |= {"e": "edit", "edit": "edit", "r": "reject", "reject": "reject"}
_CHOICES |= {"n": "reject", "no": "reject"}


def prompt_decision(
    waiting: Waiting, read: Callable[[str], str], say: Callable[[str], None]
) -> Decision:
    """Show the waiting SQL and ask: approve, edit or reject. `read` is `input`, or a reader
    of the next line of a script; end of input or Ctrl-C raises `LeaveWaiting`."""
    attempt = f" (attempt {waiting.attempt})" if waiting.attempt else ""
    say(f"SQL waiting for approval{attempt}:\n{waiting.sql}")
    while True:
        try:
            answer = read("[a]pprove, [e]dit or [r]eject? ").strip().lower()
            choice = _CHOICES.get(answer)
            if choice == "approve":
                return True
            if choice == "reject":
                return False
            if choice == "edit":
                edited = read("SQL to run instead (one line; empty keeps it): ").strip()
                return edited or True
        except (EOFError, KeyboardInterrupt) as exc:
            raise LeaveWaiting from exc
        say("please answer a, e or r")
