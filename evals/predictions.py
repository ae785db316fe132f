"""The official prediction file formats.

- BIRD ``predict_dev.json``: a JSON object ``{"0": "SQL\\t----- bird -----\\tdb_id", ...}``, keyed
  by the position in the question file. The official scorer reads the values in file order.
- Spider ``pred.sql``: one SQL per line, in dataset order. The official scorer treats an empty
  line as the end of a session, so an item with no prediction gets a placeholder that fails to
  execute instead of an empty line.
- SParC / CoSQL ``pred.txt``: the same lines, with one empty line after each interaction (the
  layout of the official ``dev_gold.txt``, which test-suite-sql-eval reads session by session).

SQL is written on one line: line breaks and tabs become spaces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from macsql.database.atomic_files import write_text_atomically

BIRD_SEPARATOR = "\t----- bird -----\t"
NO_PREDICTION = "error: no prediction"
"""The line written for an item with no SQL; it scores 0 (it does not execute)."""

_LINE_BREAKS = re.compile(r"\s*[\r\n\t\f\v]+\s*")


class PredictionsFormatError(ValueError):
    """A predictions file that is not in the official format."""


def one_line(sql: str | None) -> str:
    """`sql` on one line: each run of line breaks or tabs (and the spaces around) is one space.

    `--` comments are dropped first: on one line, a comment would swallow the rest of the query.
    """
    return _LINE_BREAKS.sub(" ", _without_line_comments(sql or "")).strip()


def _without_line_comments(sql: str) -> str:
    """`sql` with every `-- ...` comment removed up to its line break; quoted text is kept."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char in "'\"`":  # a literal or quoted name runs to its closing quote ('' is a quote)
            end = i + 1
            while end < n:
                if sql[end] == char:
                    if end + 1 < n and sql[end + 1] == char:
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1])
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end
        elif sql.startswith("/*", i):  # a block comment may hold "--"; it stays as written
            end = sql.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out.append(sql[i:end])
            i = end
        else:
            out.append(char)
            i += 1
    return "".join(out)


def prediction_line(sql: str | None) -> str:
    """The text written for one prediction: one line, or the placeholder when there is none."""
    return one_line(sql) or NO_PREDICTION


def write_spider_predictions(path: str | Path, sqls: Iterable[str | None]) -> Path:
    path = Path(path)
    text = "".join(prediction_line(sql) + "\n" for sql in sqls)
    write_text_atomically(path, text)
    return path


def _read_text(path: str | Path) -> str:
    """The file's text, or a `PredictionsFormatError` naming it: a folder, a file that may not be
    read, or bytes that are not UTF-8 are a wrong --predictions, not a crash."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise  # callers say "no such file" their own way
    except OSError as exc:
        raise PredictionsFormatError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise PredictionsFormatError(
            f"{path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start:,}): a predictions file holds SQL, one query per line"
        ) from None


def read_spider_predictions(path: str | Path) -> list[str]:
    """One SQL per line (the text before a tab, as the official scorer reads it).

    Empty lines at the end are ignored; an empty line in the middle is an empty prediction.
    """
    lines = _read_text(path).splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return [line.strip().split("\t")[0] for line in lines]


def write_bird_predictions(
    path: str | Path, predictions: Mapping[int, tuple[str | None, str]]
) -> Path:
    """`predictions` maps the item index to (SQL, db_id); keys are written in index order."""
    path = Path(path)
    payload = {
        str(index): prediction_line(sql) + BIRD_SEPARATOR + db_id
        for index, (sql, db_id) in sorted(predictions.items())
    }
    write_text_atomically(path, json.dumps(payload, indent=4, ensure_ascii=False) + "\n")
    return path


def read_bird_predictions(path: str | Path) -> dict[int, str]:
    """Index -> SQL. A value without the separator is the SQL itself; a non-string is empty.

    Keys that are not integers take their position in the file, which is how the official
    scorer pairs predictions with gold.
    """
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise PredictionsFormatError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PredictionsFormatError(f"{path}: expected a JSON object of index -> SQL")
    keys = list(data)
    numeric = all(str(k).strip().isdigit() for k in keys)
    out: dict[int, str] = {}
    for position, key in enumerate(keys):
        value = data[key]
        if isinstance(value, str):
            sql = value.split(BIRD_SEPARATOR)[0] if BIRD_SEPARATOR in value else value
            sql = sql.strip()
        else:
            sql = ""
        out[int(key) if numeric else position] = sql
    return out


def write_interaction_predictions(
    path: str | Path, interactions: Iterable[Iterable[str | None]]
) -> Path:
    """One SQL per line per turn, an empty line after each interaction."""
    path = Path(path)
    text = "".join(
        "".join(prediction_line(sql) + "\n" for sql in turns) + "\n" for turns in interactions
    )
    write_text_atomically(path, text)
    return path


def read_interaction_predictions(path: str | Path) -> list[list[str]]:
    """Sessions of SQL lines, as the official evaluator reads them: an empty line ends a
    session (two in a row make an empty one), the text before a tab is the SQL, and a last
    session with no empty line after it counts too. Empty lines at the very end are ignored."""
    sessions: list[list[str]] = []
    current: list[str] = []
    for line in _read_text(path).splitlines():
        if not line.strip():
            sessions.append(current)
            current = []
        else:
            current.append(line.strip().split("\t")[0])
    if current:
        sessions.append(current)
    while sessions and not sessions[-1]:
        sessions.pop()
    return sessions
