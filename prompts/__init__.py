"""Prompt templates, one text file per agent and variant, filled with `$name` placeholders.

`$`-placeholders (string.Template) leave the braces of JSON and SQL in the prompts alone.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def load_prompt(name: str) -> Template:
    """The template `prompts/<name>.txt`."""
    return Template(resources.files(__package__).joinpath(f"{name}.txt").read_text("utf-8"))


def render_prompt(name: str, **values: object) -> str:
    """Fill a template; a missing value is an error, not a silent `$name` left in the text."""
    return load_prompt(name).substitute({k: "" if v is None else str(v) for k, v in values.items()})


def prompt_names() -> list[str]:
    return sorted(
        p.name[:-4] for p in resources.files(__package__).iterdir() if p.name.endswith(".txt")
    )
