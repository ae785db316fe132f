"""The README stays true: its graphs are the code's, its test command is the one CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from macsql.graph.registry import get_pipeline, pipeline_names

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", pipeline_names())
def test_readme_shows_each_pipelines_graph_as_generated(name: str) -> None:
    mermaid = get_pipeline(name).get_graph().draw_mermaid().strip()
    assert mermaid in README, f"README's Mermaid drawing of {name!r} is out of date"


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    assert len(commands) >= 2
    test_command = commands[1].strip()
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_readme_first_command_asks_the_demo_database() -> None:
    first = re.findall(r"```bash\n(.*?)\n```", README, re.S)[0]
    assert "pip install -e ." in first and "macsql ask" in first and "--db demo" in first
