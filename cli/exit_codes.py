"""The command's exit codes and its configuration error, importable without the heavy modules
(`macsql.cli.main` imports those only once the garbage collector is paused)."""

from __future__ import annotations

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
