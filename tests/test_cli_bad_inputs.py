"""Bad input at the command line: a clear one-line error and exit 2, never a traceback, and
never a run that quietly does something else than asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import spider_eval_args, spider_sample

from macsql.cli.main import main


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
