"""Approving SQL from the command line (`--set approve_sql=true`): `ask` shows the waiting SQL,
asks on a terminal, or stops with its thread id and resumes with `--thread ID --approve`,
`--edit SQL` or `--reject`; `chat` takes the next line as the decision, not as a question."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import concert_db

from macsql.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_PAUSED, EXIT_USAGE
from macsql.cli.main import main
from macsql.testing.scripted import ScriptedOpenAIServer

CONCERT = str(concert_db())
QUESTION = "How many singers are there?"
RIGHT = "SELECT count(*) FROM singer"
WRONG = "SELECT count(*) FROM singers"
FIXED = "SELECT count(*) FROM singer WHERE 1 = 1"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def state(tmp_path: Path) -> str:
    return str(tmp_path / "ask.sqlite")


def _replies(prompt: str) -> str:
    """The Decomposer writes a wrong table name; the Refiner fixes it."""
    if "Refiner" in prompt.split("\n", 1)[0]:
        return f"```sql\n{FIXED}\n```"
    return f"```sql\n{WRONG}\n```"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(_replies) as running:
        yield running


def _model(server: ScriptedOpenAIServer) -> list[str]:
    return ["--model", "openai:scripted", "--base-url", server.base_url, "--api-key", "k"]


def _ask(state: str) -> list[str]:
    return ["ask", QUESTION, "--db", CONCERT, "--set", "approve_sql=true", "--state-url", state]


def _paused_json(capsys: pytest.CaptureFixture, code: int) -> dict:
    assert code == EXIT_PAUSED
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "paused" and out["thread"]
    return out


def test_a_paused_ask_prints_the_sql_and_how_to_resume(
    server: ScriptedOpenAIServer,
    state: str,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code = main([*_ask(state), *_model(server)])
    out = capsys.readouterr().out
    assert code == EXIT_PAUSED
    assert "SQL waiting for approval (attempt 1):" in out
    assert WRONG in out
    assert "status: paused, thread " in out
    assert "macsql ask --thread " in out and "--approve" in out


def test_resume_with_edit_then_approve_across_several_pauses(
    server: ScriptedOpenAIServer,
    state: str,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    first = _paused_json(capsys, main([*_ask(state), "--json", *_model(server)]))
    assert first["pending"] == [{"sql": WRONG, "attempt": 1, "hint": first["pending"][0]["hint"]}]
    assert first["rows"] == [] and first["sql"] == ""
    thread = first["thread"]
    requests = server.requests

    # Approving the wrong SQL: it fails, the Refiner writes another, which waits in turn. The
    # model, its server and the settings come from the thread; only the key is given again.
    resume = ["ask", "--thread", thread, "--state-url", state, "--api-key", "k", "--json"]
    second = _paused_json(capsys, main([*resume, "--approve"]))
    assert second["pending"][0]["sql"] == FIXED and second["pending"][0]["attempt"] == 2
    assert server.requests == requests + 1  # the Refiner only

    # An edit runs instead of the waiting SQL.
    code = main([*resume, "--edit", RIGHT])
    done = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK
    assert done["status"] == "ok" and done["sql"] == RIGHT and done["rows"] == [[6]]
    assert done["pending"] == [] and done["attempts"] == 2

    # The thread has nothing waiting any more.
    assert main([*resume, "--approve"]) == EXIT_USAGE
    assert "no SQL waiting" in capsys.readouterr().err


def test_reject_stops_the_run(
    server: ScriptedOpenAIServer,
    state: str,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    thread = _paused_json(capsys, main([*_ask(state), "--json", *_model(server)]))["thread"]
    code = main(["ask", "--thread", thread, "--state-url", state, "--api-key", "k", "--reject"])
    out = capsys.readouterr().out
    assert code == EXIT_FAILED
    assert "rejected" in out


def test_on_a_terminal_each_pause_is_asked(
    server: ScriptedOpenAIServer,
    state: str,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter(["x", "a", "e", RIGHT])  # a typo, approve the wrong SQL, edit the fix
    monkeypatch.setattr("sys.stdin", _Terminal(""))
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(answers))
    code = main([*_ask(state), "--json", *_model(server)])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == EXIT_OK
    assert out["sql"] == RIGHT and out["rows"] == [[6]]
    assert captured.err.count("SQL waiting for approval") == 2
    assert "please answer a, e or r" in captured.err


def test_leaving_the_prompt_keeps_the_run_paused(
    server: ScriptedOpenAIServer,
    state: str,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def leave(_prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("sys.stdin", _Terminal(""))
    monkeypatch.setattr("builtins.input", leave)
    out = _paused_json(capsys, main([*_ask(state), "--json", *_model(server)]))
    assert out["pending"][0]["sql"] == WRONG


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "--thread", "nope", "--approve"], "no paused ask on thread 'nope'"),
        (["ask", QUESTION, "--db", CONCERT, "--approve"], "go with --thread"),
        (["ask", "q", "--thread", "t", "--approve"], "takes no question"),
        (["ask", QUESTION], "--db is required"),
    ],
)
def test_approval_usage_errors_are_one_line(
    args: list[str], message: str, state: str, capsys: pytest.CaptureFixture
) -> None:
    assert main([*args, "--state-url", state]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_chat_takes_the_next_line_as_the_decision(
    server: ScriptedOpenAIServer,
    state: str,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = iter([QUESTION, "e", RIGHT, "/quit"])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(lines))
    chat = ["chat", "--db", CONCERT, "--no-answer", "--set", "approve_sql=true"]
    code = main([*chat, "--state-url", state, *_model(server)])
    out = capsys.readouterr().out
    assert code == 0
    assert f"SQL waiting for approval (attempt 1):\n{WRONG}" in out
    assert f"SQL: {RIGHT}" in out
    assert "│ 6 " in out  # the edited SQL's result
    assert server.requests == 1  # the edit was not taken as a new question
