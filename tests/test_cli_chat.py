"""`macsql chat` driven through stdin, in real processes, against the scripted model server."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conversation_script import ASKED, CONCERT, REWRITER, SQL, STANDALONE, respond

from macsql.testing.scripted import ScriptedOpenAIServer


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(respond) as running:
        yield running


def _command(server: ScriptedOpenAIServer, state: Path | str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "macsql.cli.main",
        "chat",
        "--db",
        CONCERT,
        "--model",
        "openai:scripted",
        "--base-url",
        server.base_url,
        "--api-key",
        "test-key",
        "--dataset-style",
        "spider",
        "--state-url",
        str(state),
        *extra,
    ]


def _chat(server: ScriptedOpenAIServer, state: Path | str, lines: list[str], *extra: str) -> str:
    done = subprocess.run(
        _command(server, state, *extra),
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


@pytest.mark.needs_data("spider")
def test_chat_answers_follow_ups_and_its_commands(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    out = _chat(
        server, tmp_path / "chat.sqlite", [ASKED[0], ASKED[1], "/sql", "/rows", "/reset", "/sql"]
    )
    youngest = STANDALONE[ASKED[1]][0]
    assert f"(understood as: {youngest})" in out
    assert "The youngest singer from France is Tribal King." in out  # the answer in words
    after_sql = out.split("you> ")[3]  # what /sql printed
    assert SQL[youngest] in after_sql
    assert "Tribal King" in out.split("you> ")[4]  # /rows: the last rows
    assert "new thread" in out.split("you> ")[5]
    assert "(no SQL yet)" in out.split("you> ")[6]  # the new thread has no history


@pytest.mark.needs_data("spider")
def test_a_thread_resumes_in_a_new_process(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    state = tmp_path / "chat.sqlite"
    _chat(server, state, [ASKED[0]], "--thread", "resumed", "--no-answer")
    assert server.requests == 1
    out = _chat(server, state, ["/sql", ASKED[1]], "--thread", "resumed", "--no-answer")
    assert SQL[ASKED[0]] in out.split("you> ")[1]  # the first process's SQL, read back
    assert f"(understood as: {STANDALONE[ASKED[1]][0]})" in out
    (rewrite,) = [p for p in server.prompts if p.startswith(REWRITER)]
    assert ASKED[0] in rewrite and SQL[ASKED[0]] in rewrite


@pytest.mark.needs_data("spider")
def test_ctrl_c_and_end_of_input_exit_cleanly(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    assert "thread" in _chat(server, tmp_path / "eof.sqlite", [])
    chat = subprocess.Popen(
        _command(server, tmp_path / "sigint.sqlite"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert chat.stdout is not None
    first = chat.stdout.readline()  # the banner: the loop is waiting for input
    assert "thread" in first
    time.sleep(0.2)
    chat.send_signal(signal.SIGINT)
    _, err = chat.communicate(timeout=60)
    assert chat.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.needs_data("spider")
def test_threads_are_listed_and_forgotten(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    state = tmp_path / "chat.sqlite"
    lines = [ASKED[0], "/threads", "/forget", "/threads", ASKED[0]]
    out = _chat(server, state, lines, "--thread", "kept", "--no-answer")
    listed, forgot, after = out.split("you> ")[2:5]
    assert "kept (this one) · 1 turn(s)" in listed and ASKED[0] in listed
    assert "forgot thread kept" in forgot and "new thread" in forgot
    assert "(no saved threads)" in after
    (again,) = re.findall(r"new thread (\w+)", forgot)

    def chat_flags(*flags: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "macsql.cli.main", "chat", "--state-url", str(state)]
        return subprocess.run([*command, *flags], capture_output=True, text=True, timeout=120)

    listing = chat_flags("--threads")  # no database, no model needed
    assert listing.returncode == 0 and again in listing.stdout and "kept" not in listing.stdout
    forgot = chat_flags("--forget", again)
    assert forgot.returncode == 0 and f"forgot thread {again}" in forgot.stdout
    assert "(no saved threads)" in chat_flags("--threads").stdout
