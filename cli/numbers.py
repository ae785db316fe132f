"""Numeric command-line options in range. Every numeric option of every subcommand is typed by
`number_in`, so that a value out of range is exit 2 at parse time, naming the option, as for a
word that is not a number. Unchecked, such values ran as something else than asked
(`eval --limit -3` dropped the last three questions, `--concurrency 0` ran one at a time)."""

from __future__ import annotations

import argparse
import math


class NumberInRange:
    """An argparse type: `kind` within [minimum, maximum] (ends excluded where said), finite.
    Its bounds are attributes, so that tests can walk every parser's numeric options."""

    def __init__(
        self,
        kind: type[int] | type[float],
        minimum: float,
        maximum: float | None = None,
        *,
        above: bool = False,
        below: bool = False,
        also: tuple[int | float, ...] = (),
    ) -> None:
        self.kind = kind
        self.minimum, self.maximum = minimum, maximum
        self.above, self.below = above, below
        self.also = also  # values allowed outside the range (-1 for "no limit")
        # argparse names the type in its "invalid int value" message
        self.__name__ = kind.__name__

    def describe(self) -> str:
        low = f"more than {self.minimum:g}" if self.above else f"at least {self.minimum:g}"
        if self.maximum is None:
            bound = low
        else:
            high = f"less than {self.maximum:g}" if self.below else f"at most {self.maximum:g}"
            bound = f"{low} and {high}"
        return " or ".join([*(f"{v:g}" for v in self.also), bound])

    def __call__(self, text: str) -> int | float:
        value = self.kind(text)
        if value in self.also:
            return value
        too_low = value < self.minimum or (self.above and value == self.minimum)
        too_high = self.maximum is not None and (
            value > self.maximum or (self.below and value == self.maximum)
        )
        if not math.isfinite(value) or too_low or too_high:
            raise argparse.ArgumentTypeError(f"must be {self.describe()}, not {text}")
        return value


# The name the parsers use: `type=number_in(int, 1)`.
number_in = NumberInRange
