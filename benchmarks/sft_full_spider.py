"""The SQL-Llama recipe end to end over the whole of Spider train, with a scripted teacher.

Four steps; run them all or one at a time:

1. ``teacher``: `macsql eval --split train --traces` over train_spider.json (7,000 items) with
   the scripted teacher of `macsql.testing.scripted_teacher` behind a local OpenAI-compatible
   server (no model, no network);
2. ``export``: `macsql export-sft --format all --split-by-db 0.1 --max-tokens 5000` in a child
   process that prints its own wall time, CPU time (user + system) and peak resident memory
   (ru_maxrss);
3. ``check``: every exported file loads with `datasets`, and no line is about a Spider dev
   database or asks a dev question (from its metadata);
4. ``train``: a tiny randomly initialised causal LM built locally
   (`macsql.testing.tiny_causal_lm`), then `macsql train` for a few CPU steps on the
   prompt-completion export, printing the loss per step.

    python benchmarks/sft_full_spider.py --root /tmp/sft-full [--steps teacher,export,check,train]
        [--limit N] [--data-dir ../shared/data/spider] [--train-steps 6]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _spider_dir(given: str | None) -> Path:
    if given:
        return Path(given).expanduser().resolve()
    data = os.environ.get("MACSQL_DATA_DIR", "").strip()
    return (Path(data) if data else ROOT.parent / "shared" / "data") / "spider"


def teacher(root: Path, spider: Path, limit: int | None) -> int:
    from macsql.cli.main import main as macsql
    from macsql.testing.scripted import ScriptedOpenAIServer
    from macsql.testing.scripted_teacher import SpiderTrainTeacher

    responder = SpiderTrainTeacher(spider)
    args = ["eval", "--dataset", "spider", "--data-dir", str(spider), "--split", "train",
            "--traces", "--out", str(root / "teacher"), "--overwrite", "--no-progress",
            "--model", "openai:scripted", "--api-key", "k", "--processes", "2",
            "--concurrency", "8", "--ves-iterations", "0"]  # fmt: skip
    if limit:
        args += ["--limit", str(limit)]
    started = time.perf_counter()
    with ScriptedOpenAIServer(responder) as server:
        code = macsql([*args, "--base-url", server.base_url])
    wall = time.perf_counter() - started
    size = (root / "teacher" / "traces.jsonl").stat().st_size
    print(f"\nteacher run: exit {code}, {wall:.1f} s wall, traces.jsonl {size:,} bytes, "
          f"{len(responder.unknown)} prompts the teacher did not recognise")  # fmt: skip
    return code


# The child measures itself: its own peak RSS and CPU, whatever ran before in this process.
_MEASURED = (
    "import resource, sys, time\n"
    "from macsql.cli.main import main\n"
    "t0 = time.perf_counter()\n"
    "code = main(sys.argv[1:])\n"
    "wall = time.perf_counter() - t0\n"
    "r = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print(f'\\nexport: exit {code}, {wall:.2f} s wall, {r.ru_utime + r.ru_stime:.2f} s CPU, '\n"
    "      f'peak RSS {r.ru_maxrss / 1024:.0f} MiB')\n"
    "sys.exit(code)\n"
)


def export(root: Path) -> int:
    args = ["export-sft", str(root / "teacher"), "--out", str(root / "sft" / "sft.jsonl"),
            "--format", "all", "--split-by-db", "0.1", "--max-tokens", "5000"]  # fmt: skip
    print("$ macsql " + " ".join(args))
    return subprocess.run([sys.executable, "-c", _MEASURED, *args], check=False).returncode


def check(root: Path, spider: Path) -> int:
    """Every file loads with `datasets`; no line is about a dev database or asks a dev question."""
    import datasets

    from macsql.evals.eval_sets import normalise_question

    datasets.disable_progress_bars()
    dev = json.loads((spider / "dev.json").read_text(encoding="utf-8"))
    dev_dbs = {r["db_id"] for r in dev}
    dev_questions = {normalise_question(r["question"]) for r in dev}
    questions = {
        i: normalise_question(r["question"])
        for i, r in enumerate(json.loads((spider / "train_spider.json").read_text()))
    }
    for path in sorted((root / "sft").glob("*.jsonl")):
        loaded = datasets.load_dataset(
            "json", data_files=str(path), split="train", cache_dir=str(root / "cache")
        )
        if "metadata" in loaded.column_names or "db_id" in loaded.column_names:
            metas = loaded["metadata"] if "metadata" in loaded.column_names else loaded.to_list()
            on_dev = sum(m["db_id"] in dev_dbs for m in metas)
            asked = sum(questions[m["item"]] in dev_questions for m in metas)
            print(f"{path.name}: {len(loaded):,} rows, {on_dev} on dev databases, "
                  f"{asked} asking a dev question")  # fmt: skip
        else:
            print(f"{path.name}: {len(loaded):,} rows")
    return 0


def train(root: Path, steps: int) -> int:
    from macsql.cli.main import main as macsql
    from macsql.testing.tiny_causal_lm import build_tiny_causal_lm

    data = root / "sft" / "sft.prompt-completion.jsonl"
    model_dir = root / "tiny-model"
    build_tiny_causal_lm(model_dir, corpus=[data])
    args = ["train", str(data), "--base-model", str(model_dir), "--out", str(root / "adapter"),
            "--max-steps", str(steps), "--batch-size", "2", "--learning-rate", "5e-3",
            "--max-length", "4096"]  # fmt: skip
    print("$ macsql " + " ".join(args))
    started = time.perf_counter()
    code = macsql(args)
    print(f"\ntrain: exit {code}, {time.perf_counter() - started:.1f} s wall")
    summary = root / "adapter" / "macsql-train.json"
    if code == 0 and summary.is_file():
        losses = json.loads(summary.read_text())["loss_per_step"]
        print("loss per step: " + ", ".join(f"{v:.3f}" for v in losses))
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="folder for the run, the export, the model")
    parser.add_argument("--steps", default="teacher,export,check,train")
    parser.add_argument("--limit", type=int, default=None, help="only the first N train items")
    parser.add_argument("--data-dir", default=None, help="Spider's folder")
    parser.add_argument("--train-steps", type=int, default=6)
    args = parser.parse_args()
    root = Path(args.root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    for step in args.steps.split(","):
        if step == "teacher":
            code = teacher(root, _spider_dir(args.data_dir), args.limit)
        elif step == "export":
            code = export(root)
        elif step == "check":
            code = check(root, _spider_dir(args.data_dir))
        elif step == "train":
            code = train(root, args.train_steps)
        else:
            parser.error(f"unknown step {step!r}")
        if code:
            return code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
