"""The short commands build pydantic validators on first use (`macsql.cli.startup`)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

from macsql.cli import main as cli_main

# Counts, after importing what `ask` imports, the langchain/langsmith pydantic models whose
# validator is built; then instantiates deferred ones from many threads at once.
_COUNT = r"""
import json, sys, threading
if sys.argv[1] == "defer":
    from macsql.cli.startup import defer_pydantic_validators
    assert defer_pydantic_validators()
import langchain_openai, langgraph.graph, pydantic
from langchain_core.messages import AIMessage

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

ours = {m for m in subclasses(pydantic.BaseModel)
        if m.__module__.split(".")[0] in ("langchain_core", "langsmith", "langchain_openai")}
built = sum(bool(m.__pydantic_complete__) for m in ours)
barrier, made, errors = threading.Barrier(16), [], []
def make():
    barrier.wait()
    try:
        made.append(AIMessage(content="x", usage_metadata={
            "input_tokens": 1, "output_tokens": 2, "total_tokens": 3}))
        made.append(langchain_openai.ChatOpenAI(model="m", api_key="k", base_url="http://x/v1"))
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=make) for _ in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"models": len(ours), "built": built, "made": len(made), "errors": errors}))
"""


def _count(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _COUNT, mode], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_deferred_validators_are_not_built_at_import_and_work_from_many_threads() -> None:
    plain, deferred = _count("plain"), _count("defer")
    assert plain["models"] == deferred["models"]
    assert isinstance(plain["built"], int) and isinstance(deferred["built"], int)
    assert plain["built"] > 50  # what importing costs without deferral
    assert deferred["built"] * 5 < plain["built"]
    assert deferred["errors"] == [] and deferred["made"] == 32


@pytest.mark.parametrize(
    ("command", "deferred"), [("ask", True), ("chat", True), ("link", True), ("eval", False)]
)
def test_only_the_short_commands_defer_validators(
    monkeypatch: pytest.MonkeyPatch, command: str, deferred: bool
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(cli_main, "defer_pydantic_validators", lambda: calls.append("defer"))
    monkeypatch.setattr(cli_main, "main", lambda: 0)
    monkeypatch.setattr(sys, "argv", ["macsql", command, "--help"])
    try:
        assert cli_main.run() == 0
    finally:
        gc.unfreeze()  # run() freezes the heap for the interpreter's exit
    assert calls == (["defer"] if deferred else [])
