"""The documentation site: its reference pages are generated from the code, so they list every
setting, command and output key; and the pages tell how things are, not how they came to be."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import fields
from pathlib import Path

from macsql.cli.main import build_parser
from macsql.core.context import Context
from macsql.core.results import Result

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_spec = importlib.util.spec_from_file_location(
    "reference_pages", DOCS / "hooks" / "reference_pages.py"
)
assert _spec and _spec.loader
reference_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_pages)
PAGES = reference_pages.render_pages()


def test_the_settings_page_lists_every_context_field_with_its_default() -> None:
    page = PAGES["reference/settings.md"]
    for field in fields(Context):
        assert f"| `{field.name}` |" in page, field.name
    assert "| `max_try_times` | int | `3` |" in page


def test_the_cli_page_has_every_command_and_option() -> None:
    page = PAGES["reference/cli.md"]
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        if name != "load-postgres":
            assert f"## macsql {name}" in page, name
    ask = build_parser("ask")._subparsers._group_actions[0].choices["ask"]  # type: ignore[union-attr]
    for action in ask._actions:
        for option in action.option_strings:
            assert option in page, option
    load = page[page.index("## macsql load") :]
    assert "MySQL" in load and "duckdb:///FILE.duckdb" in load
    assert "| 3 |" in page and "| 4 |" in page  # the exit codes of paused and partial


def test_the_ask_json_page_lists_every_key() -> None:
    page = PAGES["reference/ask-json.md"]
    for key in Result.model_fields:
        assert f"| `{key}` |" in page, key


def _pages() -> dict[str, str]:
    texts = {str(p.relative_to(DOCS)): p.read_text() for p in DOCS.rglob("*.md")}
    return texts | PAGES | {"README.md": (ROOT / "README.md").read_text()}


def test_the_pages_hold_no_development_history() -> None:
    history = re.compile(
        r"\bissue \d+|before this version|previous version|the version before|design card",
        re.IGNORECASE,
    )
    for name, text in _pages().items():
        found = history.search(text)
        assert found is None, f"{name}: {found.group(0) if found else ''}"


def test_the_stale_statements_are_gone() -> None:
    for name, text in _pages().items():
        assert "rest of the run" not in text, name
        assert "the model client's own retries" not in text, name
    development = (DOCS / "development.md").read_text()
    assert "max_retries=0" in development
    reply_format = next(f for f in fields(Context) if f.name == "reply_format")
    assert "the next run asks for structured output again" in reply_format.metadata["description"]
