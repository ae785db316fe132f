"""`macsql eval` refuses to start a run that could only fail every item."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SPIDER

from macsql.cli.main import main


def test_eval_without_a_model_exits_2_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "eval",
            "--dataset",
            "spider",
            "--data-dir",
            str(SPIDER),
            "--limit",
            "2",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "no model configured" in err and "Traceback" not in err
    assert not (tmp_path / "results.jsonl").exists()


def test_eval_rejects_an_unknown_context_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "eval",
            "--dataset",
            "spider",
            "--data-dir",
            str(SPIDER),
            "--gold",
            "--set",
            "no_such_field=1",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 2
    assert "no_such_field" in capsys.readouterr().err
