"""Benchmark: what a run costs, in model calls and prompt tokens per question, per pipeline.

Run: python benchmarks/bench_run_cost.py [--limit 40] [--pipelines macsql,sqlfix,r3,macsql+sqlfix]

Each pipeline runs `macsql eval` over `--limit` Spider dev items spread over the file, with the
real OpenAI client against a local scripted server that plays every agent plausibly: writers
answer with the gold SQL, reviewers pass it, R^3's persona call names three reviewers. The
figures are the eval's own usage totals (`summary.json`, `tokens_total`) per item that ran.

Tokens are counted the way the scripted server counts them: a token per 4 characters of the
prompt (real tokenizers give roughly that on English and SQL). Input tokens are our real prompts
(schema, question, evidence, history); output tokens are the scripted replies, which are far
shorter than a real model's reasoning, so only the input figure and the call count carry over.
Every SQL is right the first time here, so the runs take the cheapest path their pipeline has.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPIDER = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data")) / "spider"


def spread_sample(limit: int, folder: Path) -> list[dict[str, Any]]:
    """`limit` dev items spread evenly over the file (dev is sorted by database, so the first
    items would all ask about two small databases), written as a Spider folder in `folder`
    whose databases and tables are the real ones, linked."""
    dev = json.loads((SPIDER / "dev.json").read_text())
    runnable = [i for i in dev if (SPIDER / "database" / i["db_id"]).is_dir()]
    step = max(1, len(runnable) // limit)
    items = runnable[::step][:limit]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dev.json").write_text(json.dumps(items))
    for name in ("tables.json", "database"):
        (folder / name).symlink_to(SPIDER / name)
    return items


class Replies:
    """A plausible reply for each agent's prompt, from the gold SQL of the question in it."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.gold = {item["question"]: item["query"] for item in items}

    def _gold_sql(self, prompt: str) -> str:
        line = prompt.rsplit("[Question] ", 1)[-1].splitlines()[0]
        return self.gold[max((q for q in self.gold if q in line), key=len)]

    def __call__(self, prompt: str) -> str:
        if "You are the Selector" in prompt:
            return "{}"
        if "Choose 3 reviewers" in prompt:
            return json.dumps({"reviewers": ["SQL engineer", "domain analyst", "QA engineer"]})
        if "that a colleague wrote for a user's question" in prompt:
            return "The query answers the question."
        if "You are a database administrator" in prompt:
            return 'Each clause checked.\n{"verdict": "pass", "reason": "it answers the question"}'
        return f"Plan.\n```sql\n{self._gold_sql(prompt)}\n```\nQuestion Solved."


def run(pipeline: str, data: Path, limit: int, base_url: str, out: Path) -> dict[str, Any]:
    from macsql.cli.main import main

    code = main(
        ["eval", "--dataset", "spider", "--data-dir", str(data), "--pipeline", pipeline,
         "--limit", str(limit), "--out", str(out), "--no-progress", "--processes", "1",
         "--model", "openai:scripted", "--base-url", base_url, "--api-key", "k"]
    )  # fmt: skip
    if code != 0:
        raise SystemExit(f"{pipeline}: eval exited {code}")
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--pipelines", default="macsql,sqlfix,r3,macsql+sqlfix")
    args = parser.parse_args()
    from macsql.testing.scripted import ScriptedOpenAIServer

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "spider"
        items = spread_sample(args.limit, data)
        databases = len({i["db_id"] for i in items})
        with ScriptedOpenAIServer(Replies(items)) as server:
            for pipeline in args.pipelines.split(","):
                out = Path(tmp) / pipeline.replace("+", "_")
                summary = run(pipeline, data, args.limit, server.base_url, out)
                n = summary["n_scored"]
                total = summary["tokens_total"]
                calls, tokens_in = total["calls"] / n, total["input_tokens"] / n
                rows.append(
                    (pipeline, n, summary["ex"], calls, tokens_in, total["output_tokens"] / n)
                )
    print(
        f"\nSpider dev, {len(items)} items spread over {databases} databases, scripted model "
        "(tokens = characters / 4)"
    )
    header = ("items", "EX", "calls/q", "input tok/q", "output tok/q")
    print(f"{'pipeline':<15}" + "".join(f"{h:>14}" for h in header))
    for name, n, ex, calls, tokens_in, tokens_out in rows:
        print(f"{name:<15}{n:>14}{ex:>14.1f}{calls:>14.2f}{tokens_in:>14.0f}{tokens_out:>14.0f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
