"""The command line's small promises: `--set` names the setting it thinks was meant and lists
them all with `--set help`; `score` does not pass off a partial predictions file as a score."""

from __future__ import annotations

import random
import string
from dataclasses import fields
from pathlib import Path

import pytest
from rapidfuzz.distance import Levenshtein
from test_eval_scoring import GOLD, tiny_spider  # noqa: F401  (a fixture)

from macsql.cli.common import UsageError, parse_context_fields
from macsql.cli.exit_codes import EXIT_OK, EXIT_PARTIAL
from macsql.cli.main import main
from macsql.core.context import Context
from macsql.core.settings_reference import closest_setting as closest_field

FIELDS = sorted(f.name for f in fields(Context))


def test_a_misspelt_setting_gets_a_did_you_mean(capsys: pytest.CaptureFixture) -> None:
    code = main(["ask", "q", "--db", "demo", "--set", "max_try_time=3"])
    err = capsys.readouterr().err
    assert code == 2
    assert "did you mean 'max_try_times'?" in err
    assert "--set help" in err
    assert len(err.strip().splitlines()) == 1


def _typo(name: str, rng: random.Random) -> str:
    """One random edit: a letter dropped, doubled, replaced or two swapped."""
    i = rng.randrange(len(name) - 1)
    kind = rng.choice(["drop", "double", "replace", "swap"])
    if kind == "drop":
        return name[:i] + name[i + 1 :]
    if kind == "double":
        return name[:i] + name[i] + name[i:]
    if kind == "replace":
        return name[:i] + rng.choice(string.ascii_lowercase) + name[i + 1 :]
    return name[:i] + name[i + 1] + name[i] + name[i + 2 :]


def test_the_suggestion_is_always_a_nearest_field_for_generated_typos() -> None:
    rng = random.Random(27)
    for _ in range(400):
        name = rng.choice(FIELDS)
        typo = _typo(name, rng)
        if typo in FIELDS:
            continue
        guess = closest_field(typo)
        assert guess is not None, typo
        nearest = min(Levenshtein.distance(typo, f) for f in FIELDS)
        assert Levenshtein.distance(typo, guess) == nearest, (typo, guess)
        with pytest.raises(UsageError, match="did you mean"):
            parse_context_fields([f"{typo}=1"])


def test_nonsense_gets_no_suggestion() -> None:
    assert closest_field("zzzzqqqq") is None
    with pytest.raises(UsageError) as info:
        parse_context_fields(["zzzzqqqq=1"])
    assert "did you mean" not in str(info.value)


def test_set_help_lists_every_setting_with_its_default(capsys: pytest.CaptureFixture) -> None:
    code = main(["ask", "q", "--db", "demo", "--set", "help"])
    out = capsys.readouterr().out
    assert code == 0
    for name in FIELDS:
        assert f"  {name} (" in out, name
    assert "max_try_times (int; default 3)" in out


def _write_spider_predictions(path: Path, count: int) -> Path:
    path.write_text("".join(f"{sql}\tshop\n" for _db, _q, sql in GOLD[:count]))
    return path


def test_score_refuses_a_partial_file_unless_told(
    tiny_spider: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    predictions = _write_spider_predictions(tmp_path / "pred.sql", 2)
    args = ["score", "--dataset", "spider", "--data-dir", str(tiny_spider)]
    args += ["--predictions", str(predictions)]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == EXIT_PARTIAL
    assert "2 predictions for 6 questions" in err and "--partial" in err
    assert "not in the predictions file: 4 questions" in out

    assert main([*args, "--partial"]) == EXIT_OK
    assert "warning" not in capsys.readouterr().err


def test_score_of_a_whole_file_is_quiet(
    tiny_spider: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    predictions = _write_spider_predictions(tmp_path / "pred.sql", len(GOLD))
    args = ["score", "--dataset", "spider", "--data-dir", str(tiny_spider)]
    code = main([*args, "--predictions", str(predictions)])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert "not in the predictions file" not in out
