"""`macsql eval` refuses to start a run that could only fail every item."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import spider_eval_args, spider_sample

from macsql.cli.main import main


def test_eval_without_a_model_exits_2_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(spider_eval_args(tmp_path, "--limit", "2", data_dir=spider_sample()))
    err = capsys.readouterr().err
    assert code == 2
    assert "no model configured" in err and "Traceback" not in err
    assert not (tmp_path / "results.jsonl").exists()


def test_eval_rejects_an_unknown_context_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        spider_eval_args(tmp_path, "--gold", "--set", "no_such_field=1", data_dir=spider_sample())
    )
    assert code == 2
    assert "no_such_field" in capsys.readouterr().err
