"""Bad input at the command line: a clear one-line error and exit 2, never a traceback, and
never a run that quietly does something else than asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import concert_db, spider_eval_args, spider_sample

from macsql.cli.main import main
from macsql.testing.scripted import ScriptedOpenAIServer


def sparc_sample(root: Path) -> Path:
    """One SParC interaction; its database need not exist to test the predictions file."""
    (root / "database").mkdir(parents=True)
    turn = {"utterance": "How many singers?", "query": "SELECT count(*) FROM singer"}
    record = {"database_id": "concert_singer", "interaction": [turn], "final": turn}
    (root / "dev.json").write_text(json.dumps([record]))
    return root


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--limit", "-3", "argument --limit: must be at least 1, not -3"),
        ("--limit", "0", "argument --limit: must be at least 1, not 0"),
        ("--timeout", "0", "argument --timeout: must be more than 0, not 0"),
        ("--item-timeout", "-1", "argument --item-timeout: must be at least 0, not -1"),
        ("--ves-iterations", "-1", "argument --ves-iterations: must be at least 0, not -1"),
    ],
)
def test_eval_refuses_a_number_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, expected: str
) -> None:
    # Unchecked, --limit -3 dropped the last three questions, --limit 0 ran every one and
    # --timeout 0 skipped every one as a gold error, each with exit 0.
    with pytest.raises(SystemExit) as exit_info:
        main(spider_eval_args(tmp_path, "--gold", option, value, data_dir=spider_sample()))
    assert exit_info.value.code == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


def test_score_refuses_a_timeout_that_is_not_positive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["score", "--dataset", "spider", "--data-dir", str(spider_sample())]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--predictions", str(tmp_path / "pred.sql"), "--timeout", "-1"])
    assert exit_info.value.code == 2
    assert "argument --timeout: must be more than 0, not -1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p.mkdir(), "cannot read {path}: Is a directory"),
        (
            lambda p: p.write_bytes(b"SELECT \xff FROM singer\n"),
            "{path} is not UTF-8 text (byte 0xff at offset 7)",
        ),
    ],
    ids=["folder", "not-utf8"],
)
@pytest.mark.parametrize("dataset", ["spider", "sparc"])
def test_score_names_a_predictions_file_it_cannot_read(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], object],
    expected: str,
    dataset: str,
) -> None:
    predictions = tmp_path / "pred.sql"
    make(predictions)
    data = spider_sample() if dataset == "spider" else sparc_sample(tmp_path / "sparc")
    code = main(
        ["score", "--dataset", dataset, "--data-dir", str(data), "--predictions", str(predictions)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert expected.format(path=predictions) in err and "Traceback" not in err


def test_eval_refuses_an_out_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pred.sql"
    out.write_text("SELECT 1\n")
    code = main(spider_eval_args(out, "--gold", data_dir=spider_sample()))
    assert code == 2
    assert f"cannot use {out} as the run folder: it is a file" in capsys.readouterr().err
    assert out.read_text() == "SELECT 1\n"


@pytest.mark.parametrize("position", ["question", "evidence"])
def test_an_argument_with_undecodable_bytes_is_refused_before_any_model_call(
    capsys: pytest.CaptureFixture[str], position: str
) -> None:
    # What Python makes of `macsql ask $'How many singers\xff?'` in a UTF-8 locale: the byte
    # kept as a lone surrogate. It used to reach the model call and fail there, exit 1, as
    # "model call failed (UnicodeEncodeError)".
    odd = "How many singers\udcff?"
    with ScriptedOpenAIServer(lambda _prompt: "```sql\nSELECT count(*) FROM singer\n```") as server:
        question, evidence = (odd, "") if position == "question" else ("How many singers?", odd)
        model = ["--base-url", server.base_url, "--api-key", "k", "--model", "openai:scripted"]
        code = main(["ask", question, "--evidence", evidence, "--db", str(concert_db()), *model])
    err = capsys.readouterr().err
    assert code == 2
    assert "the argument 'How many singers\\xff?' holds bytes that are not utf-8 text" in err
    assert server.requests == 0


def test_a_database_path_that_is_a_folder_is_called_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ask", "How many singers?", "--db", str(tmp_path), "--base-url", "http://x/v1"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{tmp_path} is a folder, not a database file" in err and "not found" not in err


@pytest.mark.parametrize(
    ("stdin_errors", "expected"),
    [
        (
            "surrogateescape",
            "the line 'How many singers\\xff?' holds bytes that are not utf-8 text",
        ),
        ("strict", "the line holds bytes that are not utf-8 text"),  # was a traceback
    ],
)
def test_chat_refuses_a_typed_line_with_undecodable_bytes_and_goes_on(
    tmp_path: Path, stdin_errors: str, expected: str
) -> None:
    env = {**os.environ, "PYTHONIOENCODING": f"utf-8:{stdin_errors}"}
    with ScriptedOpenAIServer(lambda _prompt: "```sql\nSELECT count(*) FROM singer\n```") as server:
        model = ["--model", "openai:scripted", "--base-url", server.base_url, "--api-key", "k"]
        state = ["--state-url", str(tmp_path / "chat.sqlite"), "--no-answer"]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "macsql.cli.main",
                "chat",
                "--db",
                str(concert_db()),
                *model,
                *state,
            ],
            input=b"How many singers\xff?\nHow many singers?\n",
            capture_output=True,
            timeout=240,
            env=env,
        )
    out = done.stdout.decode()
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert expected in out
    assert "UnicodeEncodeError" not in out
    if stdin_errors == "surrogateescape":  # a strict decoder drops the rest of its chunk
        assert "SELECT count(*) FROM singer" in out  # the next line is answered
