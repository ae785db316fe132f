"""Benchmark: how long `macsql ask` takes before its first model request.

Run: python benchmarks/bench_first_contact.py [--repeat 5]

A scripted OpenAI-compatible server on 127.0.0.1 answers at once, so every figure is macsql's
own time. The demo database's schema cache is warmed first (the usual case: a user asks about
the same database again). Each repeat runs in fresh processes and reports:

- `python -c pass`: the interpreter alone, the floor of any command;
- the CPU seconds of importing only the libraries an `ask` needs before its first request
  (LangGraph, langchain-openai with the OpenAI client, rich; SQLAlchemy and sqlglot wait until
  the model's SQL comes back): the floor of `ask` itself;
- in one process, step by step: importing the CLI, building the parser, importing and building
  the pipeline's graph, resolving and opening the database, loading its (cached) schema, and
  building the model client;
- end to end: from starting `python -m macsql.cli.main ask ...` to the server receiving the
  first chat request (time to first model request), and to the command's exit; and the CPU
  seconds the `ask` process had used when its first request arrived (read from /proc), a
  figure that other programs on the machine hardly move.

The medians over the repeats are printed last; the target is under 1 s to the first request.
Wall times move with the machine's load (another program on the same cores doubles them), so
the CPU seconds of the step-by-step process and of `ask` are printed too, with the load
average at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How many books are there?"
REPLY = "```sql\nSELECT count(*) FROM book\n```"

_STEPS = r"""
import json, sys, time
t0 = time.perf_counter()
marks = {}
def mark(name):
    marks[name] = round((time.perf_counter() - t0) * 1000, 1)
import macsql.cli.main as cli
mark("import CLI")
parser = cli.build_parser("ask")
mark("build parser")
from macsql.graph.registry import get_pipeline
graph = get_pipeline("macsql")
mark("import + build graph")
from macsql.cli.common import resolve_db_argument
db = resolve_db_argument("demo")
mark("resolve + open database")
from macsql.database.connection import resolve_database
from macsql.database.schema import load_schema
load_schema(resolve_database(db))
mark("load schema (warm cache)")
from macsql.llm.models import get_chat_model
from macsql.llm.settings import ModelSettings
get_chat_model(ModelSettings(model="openai:m", base_url=sys.argv[1], api_key="k"))
mark("build model client")
marks["steps: CPU s"] = round(time.process_time(), 2)
print(json.dumps({"modules": len(sys.modules), **marks}))
"""


def _interpreter_ms() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - started) * 1000


# Imported as `ask` imports them (collector paused, pydantic validators deferred), the heap
# frozen before exit as `ask` does.
FLOOR = (
    "import gc; gc.disable(); from macsql.cli.startup import defer_pydantic_validators;"
    " defer_pydantic_validators(); import langgraph.graph, langchain_openai, rich;"
    " gc.freeze()"
)


def _floor_cpu() -> float:
    """CPU seconds of importing only the libraries every `ask` needs before its first request:
    no command can go below it without dropping one of them."""
    cpu = _children_cpu()
    subprocess.run([sys.executable, "-c", FLOOR], check=True)
    return _children_cpu() - cpu


def _steps(base_url: str, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _STEPS, base_url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _end_to_end(env: dict[str, str]) -> tuple[float, float, float, float]:
    from macsql.testing.scripted import ScriptedOpenAIServer

    first: list[float] = []
    first_cpu: list[float] = []
    pid: list[int] = []
    lock = threading.Lock()

    def respond(_prompt: str) -> str:
        with lock:
            if not first:
                first.append(time.perf_counter())
                first_cpu.append(_process_cpu(pid[0]))
        return REPLY

    with ScriptedOpenAIServer(respond) as server:
        args = [sys.executable, "-m", "macsql.cli.main", "ask", QUESTION, "--db", "demo"]
        args += ["--model", "openai:m", "--base-url", server.base_url, "--api-key", "k"]
        cpu = _children_cpu()
        started = time.perf_counter()
        process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL)
        pid.append(process.pid)
        if process.wait() != 0:
            raise SystemExit(f"ask failed with exit {process.returncode}")
        ended = time.perf_counter()
        cpu = _children_cpu() - cpu
    return (first[0] - started) * 1000, (ended - started) * 1000, cpu, first_cpu[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "MACSQL_CACHE_DIR": cache}
        # As on a user's machine, Python caches the bytecode of macsql's own modules after the
        # first run (an environment with PYTHONDONTWRITEBYTECODE set compiles them every time).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        _end_to_end(env)  # writes the demo database, its schema cache and the bytecode
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        rows: list[dict[str, float]] = []
        for i in range(args.repeat):
            row = {"python -c pass": round(_interpreter_ms(), 1)}
            row["libraries alone: CPU s"] = round(_floor_cpu(), 2)
            row.update(_steps("http://127.0.0.1:9/v1", env))
            first, total, cpu, first_cpu = _end_to_end(env)
            row["ask: first model request"] = round(first, 1)
            row["ask: CPU s at first request"] = round(first_cpu, 3)
            row["ask: exit"] = round(total, 1)
            row["ask: CPU s"] = round(cpu, 2)
            rows.append(row)
            print(f"run {i + 1}: " + json.dumps(row))
    print(f"\nmedians over {len(rows)} runs (ms; the step lines are cumulative in one process):")
    for key in rows[0]:
        digits = 3 if "CPU" in key else 1
        print(f"  {key:<30} {statistics.median(r[key] for r in rows):9.{digits}f}")


if __name__ == "__main__":
    main()
