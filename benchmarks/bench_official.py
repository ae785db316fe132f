"""Benchmark: macsql's per-question overhead side by side with the official MAC-SQL code.

Run: python benchmarks/bench_official.py --official DIR --official-python PATH
     [--rounds 3] [--limit 100]

`DIR` is a checkout of github.com/wbbeyourself/MAC-SQL (its run.py and core/); `PATH` is the
interpreter of a virtualenv with what that code imports (openai==0.28.*, tqdm, pandas,
tiktoken). The checkout is not modified: each run works on a copy with the patch in `PATCH`
applied (listed there, with why), which points the code at the local server and sets its
sleeps to 0.

One scripted OpenAI-compatible server, in its own process, answers both sides at once (no
delay). It tells the agents apart by the `X-Macsql-Agent` header (macsql) or, for the official
code, which sends no header, by the prompt's shape; it answers with the question's gold SQL
(the Selector with a "keep_all" map of the tables), except that the first Decomposer answer
is a failing SQL for every other question of the dev file, so that the Refiner runs on both
sides. It counts the calls per side and agent (the official code's start-up "Hello world!"
check is counted apart, as `ping`).

Each round runs, in alternating order, the official `run.py` and `macsql eval --concurrency 1`
on the first `--limit` Spider dev questions and on the first question alone, each in a fresh
process (macsql with a fresh, empty cache folder, as the official code keeps nothing between
runs). Wall and CPU (the process and its children, not the server) are per question; "net"
figures subtract the 1-question run of the same side and round and divide by `limit - 1`, so
that what is paid once per run (interpreter start, imports, loading, scoring set-up) drops
out. Both sides' predictions are scored with `macsql score`.

With `--floor`, a third side runs in each round: `floor_graph.py`, the same graph shape built on
LangGraph and langchain-openai with almost no code of its own (see its docstring), in a fresh
process like the others. Its figures are a lower bound for any program on those libraries that
runs the same steps, so the ratio floor/official tells how much of macsql's ratio the libraries
alone account for.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval_concurrency import SPIDER, _responder

SIDES = ("official", "macsql")
FLOOR = "floor"

# The edits made to a copy of the official checkout before it runs: (files, pattern, replacement,
# why). Each must match at least once, so that a checkout they no longer fit is noticed.
PATCH: list[tuple[tuple[str, ...], str, str, str]] = [
    (
        ("run.py",),
        r"^from tools import \*$",
        "from core.utils import *",
        "run.py imports a `tools` module the repository does not have; core/utils.py defines "
        "every name run.py takes from it",
    ),
    (
        ("run.py", "core/agents.py", "core/llm.py"),
        r"time\.sleep\([^()]*\)",
        "time.sleep(0)",
        "sleeps set to 0 (0.2 s per schema of tables.json, 3 s per database loaded, 2 s + 3 s "
        "at start, 20 s after a failed call)",
    ),
    (
        ("core/api_config.py",),
        r'^openai\.api_type = "azure"$',
        'openai.api_type = "open_ai"',
        "an OpenAI-style server (…/engines/<model>/chat/completions) instead of Azure's "
        "deployment URLs; the base URL and key come from OPENAI_API_BASE / OPENAI_API_KEY, "
        "which core/api_config.py reads",
    ),
]


# --- the model server (child process) --------------------------------------------------------


def _official_agent(prompt: str) -> str:
    """Which official agent wrote this prompt: its Refiner shows the old SQL, its Selector ends
    asking for the answer, its Decomposer asks to decompose the question."""
    if "【old SQL】" in prompt:
        return "refiner"
    if prompt.rstrip().endswith("【Answer】"):
        return "selector"
    if "【Question】" in prompt:
        return "decomposer"
    return "ping"


def _official_question(prompt: str, agent: str) -> str:
    marker = "【Query】" if agent == "refiner" else "【Question】"
    line = prompt.rsplit(marker, 1)[-1].strip().splitlines()[0]
    return line.removeprefix("-- ").strip()


def _official_schema(prompt: str) -> str:
    """The schema of the question asked, not of the prompt's worked example."""
    return prompt.rsplit("【Schema】", 1)[-1].split("【Foreign keys】", 1)[0]


def responders(dev_json: Path) -> tuple[dict[str, Callable[[str], str]], Counter[tuple[str, str]]]:
    """The server's replies, keyed as `ScriptedOpenAIServer` looks them up: by the agent header
    for macsql, and under "" (no header) for the official code. Both sides get the same
    answers: an official prompt is re-asked of the macsql side's replies in the shape they read
    (the question after `[Question]`, the schema between `<schema>` tags). The counter counts
    the calls by (side, agent)."""
    macsql = _responder(dev_json, wrong_half=True)
    calls: Counter[tuple[str, str]] = Counter()

    def counted(agent: str, reply: Callable[[str], str]) -> Callable[[str], str]:
        def answer(prompt: str) -> str:
            calls["macsql", agent] += 1
            return reply(prompt)

        return answer

    def official(prompt: str) -> str:
        agent = _official_agent(prompt)
        calls["official", agent] += 1
        if agent == "ping":
            return "Hello!"
        question = _official_question(prompt, agent)
        schema = _official_schema(prompt) if agent == "selector" else ""
        return macsql[agent](f"Your task.\n<schema>\n{schema}\n</schema>\n[Question] {question}\n")

    by_agent = {agent: counted(agent, reply) for agent, reply in macsql.items()}
    return {**by_agent, "": official}, calls


def serve() -> None:
    """Serve until stdin closes; each line read on stdin is answered with the counts so far."""
    from macsql.testing.scripted import ScriptedOpenAIServer

    replies, calls = responders(SPIDER / "dev.json")
    with ScriptedOpenAIServer(replies) as server:
        print(server.base_url, flush=True)
        for _ in sys.stdin:
            counts = [[side, agent, n] for (side, agent), n in sorted(calls.items())]
            print(json.dumps(counts), flush=True)


class Server:
    """The scripted server in a child process: its CPU is not the measured processes'."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.process.stdout.readline().strip()  # type: ignore[union-attr]

    def counts(self) -> Counter[tuple[str, str]]:
        self.process.stdin.write("counts\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        return Counter({(side, agent): n for side, agent, n in json.loads(line)})

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait(timeout=30)


# --- the two sides ---------------------------------------------------------------------------


def patched_copy(checkout: Path, into: Path) -> Path:
    """A copy of the official checkout's code with `PATCH` applied and Spider where its
    README puts it (data/spider)."""
    work = into / "official-patched"
    shutil.copytree(checkout, work, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    for files, pattern, replacement, why in PATCH:
        for name in files:
            path = work / name
            text, n = re.subn(pattern, replacement, path.read_text(encoding="utf-8"), flags=re.M)
            if n == 0:
                raise SystemExit(f"patch does not fit {name}: {pattern!r} ({why})")
            path.write_text(text, encoding="utf-8")
    (work / "data").mkdir(exist_ok=True)
    (work / "data" / "spider").symlink_to(SPIDER)
    return work


def _children_cpu() -> float:
    """CPU seconds of the waited-for children; the server is still running, so not among them."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, float]:
    """Run to the end; wall and CPU seconds. Output goes to `log` (the official code prints a
    lot, as it would to a terminal or a file)."""
    cpu, started = _children_cpu(), time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed (exit {done.returncode}); see {log}")
    return wall, cpu


def _score(predictions: Path, python: str) -> float:
    argv = [python, "-m", "macsql.cli.main", "score", "--dataset", "spider"]
    argv += ["--data-dir", str(SPIDER), "--predictions", str(predictions), "--partial", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode not in (0, 4):
        raise SystemExit(f"macsql score failed on {predictions}:\n{done.stderr}")
    return float(json.loads(done.stdout)["summary"]["ex"])


def run_official(
    work: Path, python: str, questions: Path, out: Path, base_url: str
) -> tuple[float, float, Path]:
    # Without PYTHONPATH: the official `core` package must not meet this project's `core`.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"OPENAI_API_BASE": base_url, "OPENAI_API_KEY": "sk-bench"}
    argv = [python, "run.py", "--dataset_name", "spider", "--dataset_mode", "dev"]
    argv += ["--input_file", str(questions), "--db_path", "data/spider/database"]
    argv += ["--tables_json_path", "data/spider/tables.json"]
    argv += ["--output_file", str(out / "output.jsonl"), "--log_file", str(out / "log.txt")]
    wall, cpu = _timed(argv, work, env, out / "stdout.txt")
    return wall, cpu, out / "pred_dev.sql"


def run_macsql(
    limit: int, out: Path, base_url: str, pythonpath: Path | None = None
) -> tuple[float, float, Path]:
    """`macsql eval --concurrency 1` on the first `limit` questions in a fresh process, with a
    fresh cache folder in `out`; `pythonpath` picks the checkout whose code runs."""
    env = {**os.environ, "MACSQL_CACHE_DIR": str(out / "cache")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    argv = [sys.executable, "-m", "macsql.cli.main", "eval", "--dataset", "spider"]
    argv += ["--data-dir", str(SPIDER), "--limit", str(limit), "--concurrency", "1"]
    argv += ["--model", "openai:scripted", "--base-url", base_url, "--api-key", "sk-bench"]
    argv += ["--out", str(out / "run"), "--no-progress"]
    wall, cpu = _timed(argv, out, env, out / "stdout.txt")
    return wall, cpu, out / "run" / "pred.sql"


def run_floor(questions: Path, out: Path, base_url: str) -> tuple[float, float, Path]:
    """`floor_graph.py` on the questions file in a fresh process."""
    argv = [sys.executable, str(Path(__file__).resolve().parent / "floor_graph.py")]
    argv += ["--questions", str(questions), "--base-url", base_url]
    argv += ["--database-dir", str(SPIDER / "database"), "--out", str(out / "run")]
    wall, cpu = _timed(argv, out, dict(os.environ), out / "stdout.txt")
    return wall, cpu, out / "run" / "pred.sql"


# --- the benchmark ---------------------------------------------------------------------------


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def one_run(
    side: str, limit: int, args: argparse.Namespace, work: Path, server: Server, tmp: Path
) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix=f"{side}-{limit}-", dir=tmp))
    before = server.counts()
    questions = tmp / f"dev_first_{limit}.json"
    if not questions.exists():
        dev = json.loads((SPIDER / "dev.json").read_text(encoding="utf-8"))
        questions.write_text(json.dumps(dev[:limit]), encoding="utf-8")
    if side == "official":
        wall, cpu, predictions = run_official(
            work, args.official_python, questions, out, server.base_url
        )
    elif side == FLOOR:
        wall, cpu, predictions = run_floor(questions, out, server.base_url)
    else:
        wall, cpu, predictions = run_macsql(limit, out, server.base_url)
    calls = server.counts() - before
    # The floor names its agents in the header, as macsql does: the server counts it there.
    counted_as = "macsql" if side == FLOOR else side
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "calls": {agent: n for (s, agent), n in sorted(calls.items()) if s == counted_as},
        "ex": _score(predictions, sys.executable),
        "predictions": sum(1 for _ in predictions.open(encoding="utf-8")),
    }


def _per_q(run: dict[str, Any], limit: int) -> tuple[float, float]:
    return 1000 * run["wall_s"] / limit, 1000 * run["cpu_s"] / limit


def _net(full: dict[str, Any], one: dict[str, Any], limit: int) -> tuple[float, float]:
    n = limit - 1
    return 1000 * (full["wall_s"] - one["wall_s"]) / n, 1000 * (full["cpu_s"] - one["cpu_s"]) / n


def _agent_calls(run: dict[str, Any]) -> int:
    return sum(n for agent, n in run["calls"].items() if agent != "ping")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, help="a checkout of the official MAC-SQL code")
    parser.add_argument("--official-python", help="the interpreter of a venv with its needs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=100, help="the first N Spider dev questions")
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders")
    parser.add_argument(
        "--floor", action="store_true", help="also run floor_graph.py, the libraries' floor"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if not args.official or not args.official_python:
        parser.error("--official and --official-python are required")
    tmp = Path(tempfile.mkdtemp(prefix="macsql-bench-official-"))
    work = patched_copy(args.official.resolve(), tmp)
    print(f"official code: {args.official} (patched copy in {work}); Spider: {SPIDER}")
    for files, pattern, replacement, why in PATCH:
        print(f"  patch {', '.join(files)}: s/{pattern}/{replacement}/ ({why})")
    sides = (*SIDES, FLOOR) if args.floor else SIDES
    server = Server()
    rows: list[dict[Any, Any]] = []
    try:
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            load_before = _load()
            row: dict[Any, Any] = {}
            for side in order:
                row[side, 1] = one_run(side, 1, args, work, server, tmp)
                row[side, args.limit] = one_run(side, args.limit, args, work, server, tmp)
            row["load"] = (load_before, _load())
            rows.append(row)
            _print_round(r + 1, order, row, args.limit, sides)
    finally:
        server.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    _print_summary(rows, args.limit, sides)


def _print_round(
    number: int, order: tuple[str, ...], row: dict[Any, Any], limit: int, sides: tuple[str, ...]
) -> None:
    print(
        f"\nround {number} (order: {' then '.join(order)}; load average before {row['load'][0]}"
        f", after {row['load'][1]})"
    )
    for side in sides:
        full, one = row[side, limit], row[side, 1]
        wall, cpu = _per_q(full, limit)
        net_wall, net_cpu = _net(full, one, limit)
        print(
            f"  {side:8} {limit} q: wall {full['wall_s']:.2f} s = {wall:.1f} ms/q, "
            f"CPU {full['cpu_s']:.2f} s = {cpu:.1f} ms/q | 1 q: wall {one['wall_s']:.2f} s, "
            f"CPU {one['cpu_s']:.2f} s | net of 1 q: wall {net_wall:.1f} ms/q, "
            f"CPU {net_cpu:.1f} ms/q | calls/q {_agent_calls(full) / limit:.2f} "
            f"{full['calls']} | EX {full['ex']:.1f} ({full['predictions']} predictions)"
        )
    for side in sides[1:]:
        ratios = _ratios(row, limit, side)
        print(f"  ratio {side}/official: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))


def _ratios(row: dict[Any, Any], limit: int, side: str = "macsql") -> dict[str, float]:
    o_full, m_full = row["official", limit], row[side, limit]
    o_wall, o_cpu = _per_q(o_full, limit)
    m_wall, m_cpu = _per_q(m_full, limit)
    o_nwall, o_ncpu = _net(o_full, row["official", 1], limit)
    m_nwall, m_ncpu = _net(m_full, row[side, 1], limit)
    return {
        "wall": m_wall / o_wall,
        "CPU": m_cpu / o_cpu,
        "net wall": m_nwall / o_nwall,
        "net CPU": m_ncpu / o_ncpu,
    }


def _print_summary(rows: list[dict[Any, Any]], limit: int, sides: tuple[str, ...]) -> None:
    print(f"\nmedians over {len(rows)} rounds (per question, first {limit} Spider dev questions)")
    print("| | wall ms/q | CPU ms/q | net wall ms/q | net CPU ms/q | calls/q | EX |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for side in sides:
        per = [_per_q(r[side, limit], limit) for r in rows]
        net = [_net(r[side, limit], r[side, 1], limit) for r in rows]
        calls = sorted({round(_agent_calls(r[side, limit]) / limit, 2) for r in rows})
        ex = sorted({r[side, limit]["ex"] for r in rows})
        print(
            f"| {side} | {statistics.median(w for w, _ in per):.1f} "
            f"| {statistics.median(c for _, c in per):.1f} "
            f"| {statistics.median(w for w, _ in net):.1f} "
            f"| {statistics.median(c for _, c in net):.1f} "
            f"| {', '.join(f'{c:.2f}' for c in calls)} | {', '.join(f'{e:.1f}' for e in ex)} |"
        )
    for side in sides[1:]:
        ratios = [_ratios(r, limit, side) for r in rows]
        print(
            f"median ratio {side}/official (per round: "
            + "; ".join(", ".join(f"{v:.2f}" for v in r.values()) for r in ratios)
            + ")"
        )
        for key in ratios[0]:
            values = [r[key] for r in ratios]
            print(
                f"  {key}: {statistics.median(values):.2f}x (rounds: "
                f"{', '.join(f'{v:.2f}' for v in values)})"
            )


if __name__ == "__main__":
    main()
