"""Every numeric option of every subcommand has a range, checked at parse time: a value out of
it is exit 2 naming the option, never a run that does something else than asked."""

from __future__ import annotations

import argparse
import math
import random

import pytest

from macsql.cli.main import build_parser
from macsql.cli.numbers import NumberInRange, number_in


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, with all of its options added."""
    return {name: _choices(build_parser(name))[name] for name in _choices(build_parser())}


SUBCOMMANDS = _subcommands()
NUMERIC = [
    (command, action)
    for command, parser in SUBCOMMANDS.items()
    for action in parser._actions
    if isinstance(action.type, NumberInRange)
]


def test_every_numeric_option_declares_its_range() -> None:
    bare = [
        f"{command} {action.option_strings or action.dest}"
        for command, parser in SUBCOMMANDS.items()
        for action in parser._actions
        if action.type in (int, float)
    ]
    assert bare == []
    # The walk reaches the subcommands' own options, not only the shared ones.
    options = {(c, a.option_strings[0]) for c, a in NUMERIC}
    for expected in [("eval", "--concurrency"), ("serve", "--port"), ("train", "--lora-dropout")]:
        assert expected in options


def _outside(check: NumberInRange, rng: random.Random) -> list[str]:
    values = [check.minimum - 1, check.minimum - rng.randint(2, 10**6)]
    if check.above:
        values.append(check.minimum)
    if check.maximum is not None:
        values += [check.maximum + 1, check.maximum + rng.randint(2, 10**6)]
        if check.below:
            values.append(check.maximum)
    if check.kind is float:
        values += [math.nan, math.inf, -math.inf]
    return [str(check.kind(v)) for v in values if v not in check.also]


def _inside(check: NumberInRange, rng: random.Random) -> list[str]:
    low = check.minimum + (1 if check.above else 0)
    high = check.maximum - (1e-9 if check.below else 0) if check.maximum is not None else low + 1e6
    if check.kind is int:
        high = math.floor(high) if check.maximum is not None else int(high)
        return [
            str(v) for v in {int(low), int(high), rng.randint(int(low), int(high)), *check.also}
        ]
    return [repr(v) for v in {low, high, rng.uniform(low, high), *check.also}]


@pytest.mark.parametrize(
    ("command", "action"), NUMERIC, ids=[f"{c} {a.option_strings[0]}" for c, a in NUMERIC]
)
def test_a_value_out_of_range_stops_at_parse_time_naming_the_option(
    command: str, action: argparse.Action, capsys: pytest.CaptureFixture[str]
) -> None:
    check = action.type
    assert isinstance(check, NumberInRange)
    rng = random.Random(f"{command} {action.dest}")
    option = action.option_strings[0]
    parser = SUBCOMMANDS[command]
    for text in _outside(check, rng):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([f"{option}={text}"])  # '-inf' alone reads as an option
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {'/'.join(action.option_strings)}: must be " in err, (text, err)
        assert f"not {text}" in err
    for text in _inside(check, rng):
        assert check(text) == check.kind(text)


@pytest.mark.parametrize(
    ("check", "text", "message"),
    [
        (number_in(int, 1), "0", "must be at least 1, not 0"),
        (number_in(float, 0, above=True), "0", "must be more than 0, not 0"),
        (number_in(float, 0, 1, below=True), "1", "must be at least 0 and less than 1, not 1"),
        (number_in(int, 1, 65535), "65536", "must be at least 1 and at most 65535, not 65536"),
        (number_in(int, 1, also=(-1,)), "0", "must be -1 or at least 1, not 0"),
        (number_in(float, 0), "nan", "must be at least 0, not nan"),
    ],
)
def test_the_message_says_the_range(check: NumberInRange, text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        check(text)


def test_a_word_is_still_argparse_own_invalid_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        SUBCOMMANDS["eval"].parse_args(["--concurrency", "eight"])
    assert "argument --concurrency: invalid int value: 'eight'" in capsys.readouterr().err
