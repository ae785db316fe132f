"""The ``train`` subcommand: fine-tune a causal LM on an export (the ``train`` extra)."""

from __future__ import annotations

import argparse
import sys

from macsql.cli.numbers import number_in
from macsql.evals.sft_train import TrainError, TrainOptions, train


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", metavar="FILE", help="an export's prompt-completion (or chat) file")
    parser.add_argument("--base-model", required=True, help="a model name or a local folder")
    parser.add_argument("--out", required=True, metavar="DIR", help="the adapter's folder")
    parser.add_argument("--validation", default=None, metavar="FILE", help="the .val file")
    parser.add_argument(
        "--chat-template",
        default="auto",
        metavar="auto|alpaca|model|FILE",
        help="auto: the base model's own, else the Alpaca-style one (default)",
    )
    parser.add_argument("--epochs", type=number_in(float, 0, above=True), default=1.0)
    parser.add_argument(
        "--max-steps",
        type=number_in(int, 1, also=(-1,)),
        default=-1,
        help="stop after N steps (-1: as many as --epochs make)",
    )
    parser.add_argument("--learning-rate", type=number_in(float, 0, above=True), default=2e-4)
    parser.add_argument("--batch-size", type=number_in(int, 1), default=1)
    parser.add_argument("--grad-accum", type=number_in(int, 1), default=1)
    parser.add_argument(
        "--max-length",
        type=number_in(int, 16),
        default=4096,
        help="drop (never cut) samples longer than this many tokens, template included",
    )
    parser.add_argument("--lora-r", type=number_in(int, 1), default=16)
    parser.add_argument("--lora-alpha", type=number_in(int, 1), default=32)
    parser.add_argument("--lora-dropout", type=number_in(float, 0, 1, below=True), default=0.05)
    parser.add_argument("--target-modules", default="all-linear")
    parser.add_argument(
        "--limit", type=number_in(int, 1), default=None, help="only the first N samples"
    )
    parser.add_argument("--seed", type=number_in(int, 0), default=0)
    parser.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="default: on with a bf16 GPU",
    )
    parser.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="default: on with a GPU",
    )
    parser.add_argument("--served-name", default="sql-llama", help="the name the serving hints use")


def train_main(args: argparse.Namespace) -> int:
    options = TrainOptions(
        data=args.data,
        out=args.out,
        base_model=args.base_model,
        validation=args.validation,
        chat_template=args.chat_template,
        epochs=args.epochs,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        max_length=args.max_length,
        lora_r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        target_modules=args.target_modules,
        limit=args.limit,
        seed=args.seed,
        bf16=args.bf16,
        gradient_checkpointing=args.gradient_checkpointing,
    )
    try:
        result = train(options)
    except (TrainError, OSError) as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return 2
    losses = result.loss_per_step
    print(
        f"trained on {result.samples} samples ({result.too_long} longer than "
        f"{options.max_length} tokens dropped), {len(losses)} steps; loss "
        + (f"{losses[0]:.4f} -> {losses[-1]:.4f}" if losses else "not logged")
    )
    if result.eval_loss is not None:
        print(f"validation loss {result.eval_loss:.4f} on {result.validation_samples} samples")
    print(
        f"completion-only loss checked: {result.masked_prompt_tokens} prompt tokens masked, "
        f"{result.trained_tokens} completion tokens trained"
    )
    print(
        f"chat template: {result.chat_template_source}, written to {result.out}/chat_template.jinja"
    )
    name, out = args.served_name, result.out
    print(
        "serve it (vLLM):\n"
        f"  vllm serve {options.base_model} --enable-lora --lora-modules {name}={out} "
        f"--chat-template {out}/chat_template.jinja\n"
        "then point an agent at it:\n"
        "  macsql eval ... --base-url http://127.0.0.1:8000/v1 "
        f"--model openai:{options.base_model} --set decomposer_model=openai:{name}"
    )
    return 0
