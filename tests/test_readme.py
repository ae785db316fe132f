"""The README stays true: at most 300 lines, and every command in it is run, here or by CI.

Each line of a ```bash block is split at `&&`; every part must be one of the forms below, and
each form is run: `macsql ...` against a scripted OpenAI-compatible server (the key in the
first command is a placeholder), the Python block likewise, `mkdocs build --strict` into a
temporary folder. The install and test commands are what `.ci/run` runs, and `langgraph dev`
is what tests/test_langgraph_server.py starts. A README command of any other form fails here
until it has a runner.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from conftest import data_dir

from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.testing.scripted import ScriptedOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CI = (ROOT / ".ci" / "run").read_text()
BASH = re.findall(r"```bash\n(.*?)\n```", README, re.S)
PYTHON = re.findall(r"```python\n(.*?)\n```", README, re.S)
PIPELINES_PAGE = (ROOT / "docs" / "guides" / "pipelines.md").read_text()

# The parts CI itself runs, in .ci/run (a fresh virtual environment, the install, the tests).
RUN_BY_CI = {
    "python3 -m venv .venv": "python3 -m venv",
    ". .venv/bin/activate": '/bin/activate"',
    "pip install -e .": 'pip install --quiet -e ".[dev',
    'pip install -e ".[dev]"': 'pip install -e ".[dev]"',
    "python -m pytest -q": "python -m pytest -q",
}
SQL = {
    "Which author sold the most books?": "SELECT a.name, sum(s.quantity) AS sold FROM sale s "
    "JOIN book b ON b.book_id = s.book_id JOIN author a ON a.author_id = b.author_id "
    "GROUP BY a.name ORDER BY sold DESC LIMIT 1",
    "How many books are there in each genre?": "SELECT genre, count(*) FROM book GROUP BY genre",
    "Which customers joined in 2024?": "SELECT name FROM customer WHERE joined LIKE '2024%'",
    "Which city has the most customers?": "SELECT city, count(*) AS n FROM customers "
    "GROUP BY city ORDER BY n DESC LIMIT 1",
}


def commands() -> list[str]:
    return [line.strip() for block in BASH for line in block.splitlines() if line.strip()]


def parts() -> list[str]:
    return [part.strip() for command in commands() for part in command.split("&&")]


def test_the_readme_is_a_front_door_of_at_most_300_lines() -> None:
    assert len(README.splitlines()) <= 300
    for history in ("issue ", "before this version", "previous version", "design card"):
        assert history not in README.lower(), history


def test_ci_runs_the_readme_test_command() -> None:
    assert len(BASH) >= 2
    test_command = BASH[1].strip()
    assert "pytest" in test_command
    assert test_command in CI


def test_readme_first_command_asks_the_demo_database() -> None:
    first = BASH[0]
    assert "pip install -e ." in first and "macsql ask" in first and "--db demo" in first


@pytest.mark.parametrize("name", pipeline_names())
def test_the_docs_show_each_pipelines_graph_as_generated(name: str) -> None:
    mermaid = get_pipeline(name).get_graph().draw_mermaid().strip()
    assert mermaid in PIPELINES_PAGE, f"docs/guides/pipelines.md's drawing of {name!r} is stale"


def test_every_command_part_has_a_runner() -> None:
    for part in parts():
        known = (
            part in RUN_BY_CI
            or _macsql_words(part) is not None
            or part.startswith("LANGGRAPH_CLI_NO_ANALYTICS=1 langgraph dev")
            or part == "mkdocs build --strict"
        )
        assert known, f"no test runs this README command: {part!r}"


def test_the_install_and_test_parts_are_what_ci_runs() -> None:
    for part in parts():
        if part in RUN_BY_CI:
            assert RUN_BY_CI[part] in CI, part


def test_studio_is_started_as_the_readme_says() -> None:
    (studio,) = [p for p in parts() if "langgraph dev" in p]
    server_test = (ROOT / "tests" / "test_langgraph_server.py").read_text()
    assert '"dev"' in server_test and '"--no-browser"' in server_test
    assert "LANGGRAPH_CLI_NO_ANALYTICS" in CI and studio.endswith("langgraph dev --no-browser")


def _macsql_words(part: str) -> list[str] | None:
    words = shlex.split(part)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words = words[1:]  # the placeholder key: the scripted server needs none
    return words[1:] if words[:1] == ["macsql"] else None


def _decomposer(prompt: str) -> str:
    asked = next((q for q in SQL if q in prompt), None)
    return f"```sql\n{SQL[asked] if asked else 'SELECT 1'}\n```"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    scripts = {
        "decomposer": _decomposer,
        "refiner": _decomposer,
        "selector": lambda _prompt: "{}",
        "reviewer": lambda _prompt: '{"verdict": "pass", "reason": "it answers the question"}',
        "answer": lambda _prompt: "Several customers joined in 2024.",
        "contextualizer": lambda _prompt: "Question: same\nBuilds on the previous SQL: no",
    }
    with ScriptedOpenAIServer(scripts) as running:
        yield running


def _env(server: ScriptedOpenAIServer, tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "k",
        "MACSQL_CACHE_DIR": str(tmp / "cache"),
        "NO_MKDOCS_2_WARNING": "1",
    }


def _prepare(tmp: Path) -> None:
    pd.DataFrame({"name": ["Ann", "Bob", "Cy"], "city": ["Oslo", "Oslo", "Rome"]}).to_csv(
        tmp / "customers.csv", index=False
    )
    import sqlite3

    from conftest import concert_db

    with sqlite3.connect(tmp / "shop.sqlite") as target, sqlite3.connect(concert_db()) as source:
        source.backup(target)


@pytest.mark.slow
@pytest.mark.needs_data("spider")
def test_every_macsql_command_of_the_readme_runs(
    server: ScriptedOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """In order, as a reader would type them; `../shared/data` is the tests' data folder, and
    the thread id of the approval example is the one the run before it printed. `eval` runs
    in its own process (it forks its workers); the others in this one."""
    from macsql.cli.main import main

    _prepare(tmp_path)
    env = _env(server, tmp_path)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MACSQL_CACHE_DIR"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(tmp_path)
    thread = None
    ran = 0
    for part in parts():
        words = _macsql_words(part)
        if words is None:
            continue
        words = [w.replace("../shared/data", str(data_dir())) for w in words]
        if "--thread" in words:
            assert thread, "the README resumes a thread before one was printed"
            words[words.index("--thread") + 1] = thread
        if words[:1] == ["score"]:
            words = _with_predictions(words, tmp_path)
        monkeypatch.setattr("sys.stdin", io.StringIO("How many books are there?\n/quit\n"))
        if words[:1] == ["eval"]:
            done = subprocess.run(
                [sys.executable, "-m", "macsql.cli.main", *words],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            code, out, err = done.returncode, done.stdout, done.stderr
        else:
            code = main(words)
            out, err = capsys.readouterr()
        expected = 3 if "approve_sql=true" in words else 0
        assert code == expected, f"{part}\n{out[-800:]}\n{err[-800:]}"
        assert "Traceback" not in err, part
        if expected == 3:
            found = re.search(r"--thread (\w+) --approve", out)
            assert found, out
            thread = found.group(1)
        ran += 1
    assert ran >= 10


def _with_predictions(words: list[str], tmp: Path) -> list[str]:
    """`score` reads the eval's predictions, which the README's eval command wrote."""
    given = Path(words[words.index("--predictions") + 1])
    assert (tmp / given).is_file(), f"the README's eval did not write {given}"
    return words


def test_the_python_block_runs(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    (code,) = PYTHON
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(server, tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok SELECT a.name")


@pytest.mark.slow
def test_the_docs_build_strictly(tmp_path: Path) -> None:
    (build,) = [p for p in parts() if p.startswith("mkdocs")]
    done = subprocess.run(
        [*shlex.split(build), "-d", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "settings" / "index.html").is_file()
