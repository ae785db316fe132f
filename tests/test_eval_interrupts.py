"""Evals and inputs (issue 26): one Ctrl-C ends an eval within 5 s with its files whole and says
how to resume; `--resume` retries items whose model call failed and the exit code says whether
any item is still unpredicted; the run directory's lock follows no symbolic link; a few inputs
that gave tracebacks or riddles are one clear line."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db, spider_eval_args, spider_sample
from test_pipelines_eval import SpiderResponder

from macsql.cli.main import main
from macsql.database import connection
from macsql.database.connection import check_database, resolve_database
from macsql.database.connection_errors import DatabaseUnavailableError
from macsql.evals.lifetimes import LOCK_FILE
from macsql.testing.scripted import ScriptedOpenAIServer

SAMPLE = spider_sample()
DEV = json.loads((SAMPLE / "dev.json").read_text())


def _lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSON-lines file, each parsed (a torn line fails the test)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    assert not text or text.endswith("\n"), "the file ends in the middle of a line"
    return [json.loads(line) for line in text.splitlines()]


def _eval_command(out: Path, base_url: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "macsql.cli.main",
        *spider_eval_args(out, *extra, data_dir=SAMPLE),
        "--model",
        "openai:scripted",
        "--base-url",
        base_url,
        "--api-key",
        "k",
    ]


@pytest.mark.slow
def test_one_ctrl_c_ends_an_eval_within_5_s_with_its_files_whole(tmp_path: Path) -> None:
    out = tmp_path / "interrupted"
    responder = SpiderResponder("macsql", DEV)
    with ScriptedOpenAIServer(responder.by_agent(), delay=0.4) as server:
        command = _eval_command(
            out, server.base_url, "--traces", "--concurrency", "4", "--limit", "20"
        )
        command[command.index("--processes") + 1] = "2"  # the case that hung: a worker process
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        results = out / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(_lines(results) if results.exists() else []) < 2:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        started = time.monotonic()
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail("one Ctrl-C did not end the eval within 5 s")
        assert time.monotonic() - started < 5
        message = err.decode()
        assert proc.returncode == 130, message
        assert "--resume" in message and "items are in" in message, message
        done = _lines(results)
        assert 2 <= len(done) < 20
        _lines(out / "traces.jsonl")  # whole lines only
        resumed = subprocess.run(
            [*command, "--resume"], capture_output=True, text=True, timeout=180
        )
    assert resumed.returncode == 0, resumed.stderr
    indexes = [record["index"] for record in _lines(results)]
    assert sorted(indexes) == list(range(20))


def test_resume_retries_items_whose_model_call_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "flaky"
    responder = SpiderResponder("macsql", DEV)
    options = ("--limit", "8", "--concurrency", "1", "--stop-after-failures", "3")
    options += ("--set", "model_max_retries=0")
    with ScriptedOpenAIServer(lambda _prompt: 500) as down:
        args = [*spider_eval_args(out, *options, data_dir=SAMPLE), "--model", "openai:scripted"]
        first = main([*args, "--base-url", down.base_url, "--api-key", "k"])
    assert first == 1  # stopped early: nothing is predicted
    failed = _lines(out / "results.jsonl")
    assert failed and all(not r["prediction"] for r in failed)
    capsys.readouterr()
    with ScriptedOpenAIServer(responder.by_agent()) as up:
        second = main([*args, "--base-url", up.base_url, "--api-key", "k", "--resume"])
    records = _lines(out / "results.jsonl")
    assert second == 0, capsys.readouterr().err
    assert sorted(r["index"] for r in records) == list(range(8))  # each item once
    assert all(r["prediction"] for r in records), [r["error"] for r in records]


def test_the_exit_code_says_items_are_still_unpredicted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "partly"
    responder = SpiderResponder("macsql", DEV)
    flaky_question = DEV[1]["question"]
    agents = responder.by_agent()

    def decomposer(prompt: str) -> Any:
        return 500 if flaky_question in prompt else agents["decomposer"](prompt)

    script = {**agents, "decomposer": decomposer}
    args = [*spider_eval_args(out, "--limit", "4", "--concurrency", "1", data_dir=SAMPLE)]
    with ScriptedOpenAIServer(script) as server:
        code = main(
            [*args, "--model", "openai:scripted", "--base-url", server.base_url, "--api-key", "k"]
        )
    err = capsys.readouterr().err
    assert code == 1, err
    assert "1 items have no prediction yet" in err and "--resume" in err


def test_a_planted_lock_symlink_is_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    (out / LOCK_FILE).symlink_to(victim)
    code = main(spider_eval_args(out, "--gold", "--limit", "2", data_dir=SAMPLE))
    err = capsys.readouterr().err.strip()
    assert code == 2 and "symbolic link" in err and len(err.splitlines()) == 1, err
    assert victim.read_text() == "keep me"


# --- inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("db", "expected"),
    [
        ("x" * 5000, "File name too long"),
        (f"duckdb:///{concert_db()}", "is a SQLite database, not a DuckDB one"),
    ],
)
def test_bad_database_arguments_are_one_line(
    db: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ask", "How many singers?", "--db", db])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and expected in err, err


def test_a_read_only_wal_database_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "wal.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()

    def unable(_path: Path) -> None:
        raise sqlite3.OperationalError("unable to open database file")

    # The folder as a reader without write access sees it (the tests may run as root).
    monkeypatch.setattr(connection, "_check_sqlite_file", unable)
    monkeypatch.setattr(connection.os, "access", lambda *_a, **_k: False)
    with pytest.raises(DatabaseUnavailableError, match="is in WAL mode and its folder"):
        check_database(resolve_database(str(path)))
