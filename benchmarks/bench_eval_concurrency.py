"""Benchmark: the eval runner's concurrency against a slow model.

Run: python benchmarks/bench_eval_concurrency.py [--concurrency 32] [--delay 0.2] [--limit N]
     [--repeat N]

A scripted OpenAI-compatible server answers every chat call after `--delay` seconds (200 ms):
the Selector with a valid "keep_all" selection, the Decomposer with the item's gold SQL. It
runs in its own process, as a real model server would, so its work does not compete for this
process's GIL. The MAC-SQL pipeline then runs over the Spider dev items that have a database
(972) through `macsql.evals.runner`, over real HTTP with the real OpenAI client.

`--concurrency` caps the model requests in flight; the server counts the most it served at once
(`server_peak_in_flight`), so the figure cannot come from exceeding the cap. The ideal wall time
is model calls × delay / concurrency; the target is within 1.25× of it.
On a shared machine one run's time can move by a quarter; `--repeat N` runs N times, each in a
fresh process, and reports every run and their median.
Before the timed run the schemas are built once per database and the pipeline and OpenAI
client modules are imported (``--cold`` times all of that too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPIDER = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data")) / "spider"
TARGET = 1.25


# --- the model server (child process) --------------------------------------------------------


def _responder(dev_json: Path, wrong_half: bool = False):  # type: ignore[no-untyped-def]
    """Replies by agent: the Selector keeps every table, the Decomposer (and the Refiner, should
    a gold query fail) writes the gold SQL of the question in the prompt. With `wrong_half`,
    the Decomposer's SQL fails to run for every other question of the file (an unknown column
    over the gold query), so that the Refiner runs for those, as it would for a real model."""
    gold: dict[str, str] = {}
    wrong: set[str] = set()
    for position, rec in enumerate(json.loads(dev_json.read_text(encoding="utf-8"))):
        question = rec["question"].strip()
        if question not in gold and wrong_half and position % 2 == 0:
            wrong.add(question)
        gold.setdefault(question, rec["query"])

    def task_of(prompt: str) -> tuple[str, str]:
        task = prompt.rsplit("Your task.", 1)[-1]
        return task, task.rsplit("[Question]", 1)[-1].splitlines()[0].strip()

    def select(prompt: str) -> str:
        task, _ = task_of(prompt)
        schema = task.split("<schema>", 1)[-1].split("</schema>", 1)[0]
        tables = re.findall(r"^# Table: (.+)$", schema, flags=re.MULTILINE)
        return "```json\n" + json.dumps(dict.fromkeys(tables, "keep_all")) + "\n```"

    def solve(prompt: str) -> str:
        _, question = task_of(prompt)
        sql = gold.get(question, "SELECT 1")
        return f"Sub question 1: {question}\nSQL\n```sql\n{sql}\n```\nQuestion Solved."

    def decompose(prompt: str) -> str:
        _, question = task_of(prompt)
        if question not in wrong:
            return solve(prompt)
        sql = f"SELECT no_such_column FROM ({gold[question].strip().rstrip(';')})"
        return f"Sub question 1: {question}\nSQL\n```sql\n{sql}\n```\nQuestion Solved."

    return {"selector": select, "decomposer": decompose, "refiner": solve}


def serve(delay: float, wrong_half: bool = False) -> None:
    from macsql.testing.scripted import ScriptedOpenAIServer

    responder = _responder(SPIDER / "dev.json", wrong_half)
    with ScriptedOpenAIServer(responder, delay=delay) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the parent closes our stdin
        stats = {
            "requests": server.requests,
            "peak_in_flight": server.peak_in_flight,
            "cpu_s": time.process_time(),
        }
        print(json.dumps(stats), flush=True)


def start_server(delay: float, wrong_half: bool = False) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a child process (its CPU is not this process's); its base URL."""
    argv = [sys.executable, __file__, "--serve", "--delay", str(delay)]
    server = subprocess.Popen(
        argv + (["--wrong-half"] if wrong_half else []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return server, server.stdout.readline().strip()  # type: ignore[union-attr]


def stop_server(server: subprocess.Popen[str]) -> dict[str, Any]:
    """Stop the server; its counts: requests, peak_in_flight, cpu_s."""
    server.stdin.close()  # type: ignore[union-attr]
    tail = server.stdout.read()  # type: ignore[union-attr]
    server.wait(timeout=30)
    return json.loads(tail.strip().splitlines()[-1]) if tail.strip() else {}


# --- the benchmark ---------------------------------------------------------------------------


def _warm_up(pipeline: str) -> float:
    """Build every dev database's schema and value index once and import the pipeline and the
    OpenAI client: the one-time costs a long-lived process pays before its first item."""
    import langchain_openai  # noqa: F401  (imported lazily by the first model call)

    from macsql.database.connection import resolve_database
    from macsql.database.schema import load_schema
    from macsql.database.value_index import open_value_index
    from macsql.graph.registry import resolve_pipeline

    started = time.perf_counter()
    resolve_pipeline(pipeline)
    dev_dbs = {r["db_id"] for r in json.loads((SPIDER / "dev.json").read_text())}
    for folder in sorted((SPIDER / "database").iterdir()):
        db = folder / f"{folder.name}.sqlite"
        if db.is_file() and folder.name in dev_dbs:
            ref = resolve_database(str(db))
            open_value_index(ref, load_schema(ref))
    return time.perf_counter() - started


def _assignment(text: str) -> tuple[str, object]:
    """`--set FIELD=VALUE`, a Context override; true/false and whole numbers are typed."""
    name, _, raw = text.partition("=")
    value: object = {"true": True, "false": False}.get(raw.lower(), raw)
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    return name.strip(), value


def _eval_cpu() -> float:
    """CPU seconds of this process plus its finished children (the eval worker processes;
    the model server is still running, so it is not among them)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run(args: argparse.Namespace) -> dict[str, float]:
    os.environ.setdefault("MACSQL_CACHE_DIR", tempfile.mkdtemp(prefix="macsql-bench-cache-"))
    from macsql.evals.options import EvalOptions
    from macsql.evals.runner import run_eval

    server, base_url = start_server(args.delay)
    try:
        warm = 0.0 if args.cold else _warm_up(args.pipeline)
        out = tempfile.mkdtemp(prefix="macsql-bench-eval-")
        options = EvalOptions(
            dataset="spider",
            data_dir=str(SPIDER),
            pipeline=args.pipeline,
            limit=args.limit,
            concurrency=args.concurrency,
            out=out,
            progress=False,
            model="openai:scripted",
            base_url=base_url,
            api_key="sk-bench",
            ves_iterations=0,
            processes=args.processes,
            context_overrides=dict(_assignment(a) for a in args.set),
        )
        last_record = [0.0]

        def stamp(_record: dict) -> None:
            last_record[0] = time.perf_counter()

        started, cpu_started = time.perf_counter(), _eval_cpu()
        result = asyncio.run(run_eval(options, on_record=stamp))
        wall = time.perf_counter() - started
        cpu = _eval_cpu() - cpu_started
    finally:
        stats = stop_server(server)
    summary = result.summary
    calls = sum(int(u["calls"]) for u in summary["tokens_per_agent"].values())
    items = summary["n_scored"]
    ideal = calls * args.delay / args.concurrency
    return {
        "items": items,
        "skipped": summary["n_skipped"],
        "ex": summary["ex"],
        "model_calls": calls,
        "server_requests": stats.get("requests", 0),
        "server_peak_in_flight": stats.get("peak_in_flight", 0),
        "server_cpu_s": round(stats.get("cpu_s", 0.0), 2),
        "calls_per_item": round(calls / items, 3) if items else 0.0,
        "calls_by_agent": {a: int(u["calls"]) for a, u in summary["tokens_per_agent"].items()},
        "concurrency": args.concurrency,
        "processes": args.processes,
        "delay_s": args.delay,
        "wall_s": round(wall, 2),
        "ideal_s": round(ideal, 2),
        "ratio_to_ideal": round(wall / ideal, 3) if ideal else 0.0,
        "until_last_item_s": round(last_record[0] - started, 2),
        "eval_cpu_s": round(cpu, 2),
        "cpu_ms_per_item": round(1000 * cpu / items, 2) if items else 0.0,
        "warm_up_s": round(warm, 2),
        "failed": summary["n_failed"],
    }


def _verdict(figures: dict[str, Any]) -> str:
    ok = figures["ratio_to_ideal"] <= TARGET
    return (
        f"wall {figures['wall_s']}s vs ideal {figures['ideal_s']}s: "
        f"{figures['ratio_to_ideal']}x ({'within' if ok else 'over'} the {TARGET}x target)"
    )


def _single_run_argv(args: argparse.Namespace) -> list[str]:
    argv = ["--concurrency", str(args.concurrency), "--processes", str(args.processes)]
    argv += ["--delay", str(args.delay), "--pipeline", args.pipeline]
    if args.limit is not None:
        argv += ["--limit", str(args.limit)]
    for assignment in args.set:
        argv += ["--set", assignment]
    return argv + (["--cold"] if args.cold else [])


def _repeated(argv: list[str], times: int) -> dict[str, Any]:
    """Run this benchmark `times` times, each in a fresh process (no cache or warm state
    carried over), and summarise them by the median wall time."""
    runs = []
    for i in range(times):
        done = subprocess.run(
            [sys.executable, __file__, *argv, "--json-only"], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"run {i + 1} failed (exit {done.returncode}):\n{done.stderr}")
        figures = json.loads(done.stdout)
        runs.append(figures)
        print(f"run {i + 1}/{times}: {_verdict(figures)}", flush=True)
    return {
        "runs": times,
        "wall_s": sorted(r["wall_s"] for r in runs),
        "ideal_s": runs[0]["ideal_s"],
        "median_wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
        "median_ratio_to_ideal": round(statistics.median(r["ratio_to_ideal"] for r in runs), 3),
        "within_target": sum(1 for r in runs if r["ratio_to_ideal"] <= TARGET),
        "cpu_ms_per_item": sorted(r["cpu_ms_per_item"] for r in runs),
        "ex": sorted({r["ex"] for r in runs}),
        "failed": sum(r["failed"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--processes", type=int, default=os.cpu_count() or 1, help="eval processes (cores)"
    )
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--pipeline", default="macsql")
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="a Context override"
    )
    parser.add_argument(
        "--cold", action="store_true", help="no warm-up: time schema building and imports too"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs, each in a fresh process; reports the median"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--wrong-half", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.delay, args.wrong_half)
        return
    if args.repeat > 1:
        summary = _repeated(_single_run_argv(args), args.repeat)
        print(json.dumps(summary, indent=2))
        print(
            f"median wall {summary['median_wall_s']}s vs ideal {summary['ideal_s']}s: "
            f"{summary['median_ratio_to_ideal']}x; {summary['within_target']} of "
            f"{summary['runs']} runs within the {TARGET}x target"
        )
        return
    figures = run(args)
    if args.json_only:
        print(json.dumps(figures))
        return
    print(json.dumps(figures, indent=2))
    print(_verdict(figures))


if __name__ == "__main__":
    main()
