"""The command's exit codes and its configuration error, importable without the heavy modules
(`macsql.cli.main` imports those only once the garbage collector is paused)."""

from __future__ import annotations

import sys
from collections.abc import Iterable

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAUSED = 3
"""`ask`: the run waits for a person to approve its SQL (`approve_sql`); the SQL and the thread
to resume are printed."""
EXIT_PARTIAL = 4
"""`score`: fewer predictions than questions (and no `--partial`); the figures cover only the
predicted questions."""
EXIT_INTERRUPTED = 130  # what a shell reports for a program ended by SIGINT (Ctrl-C)
EXIT_BROKEN_PIPE = 141  # what a shell reports for a program ended by SIGPIPE


class UsageError(ValueError):
    """Bad arguments or configuration: exit 2 with a one-line message."""


def undecodable(texts: Iterable[str], what: str = "the argument") -> str | None:
    """The message for the first text (an argument, a typed line) that holds bytes the locale
    could not decode, or None.

    Python keeps such bytes as lone surrogates; they pass argparse and `input()` and fail much
    later, where the text is encoded: a question at the model call ("model call failed
    (UnicodeEncodeError)"), a database path at the schema read."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            if len(shown) > 80:
                shown = f"{shown[:60]}... ({len(shown):,} characters)"
            return (
                f"{what} '{shown}' holds bytes that are not {sys.getfilesystemencoding()} "
                "text: type it in the terminal's encoding"
            )
    return None
