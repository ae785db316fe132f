"""``macsql train``: fine-tune a causal LM on an export, SQL-Llama's recipe with a LoRA adapter.

TRL's SFTTrainer with a PEFT LoRA adapter, on a file of any layout the export writes
(``prompt-completion``, ``chat``, ``openai``, ``sharegpt``, ``alpaca``; see
`macsql.evals.sft_lines`) or TRL's standard prompt/completion strings: every message but the
last is the prompt, the last is the completion. The loss is on the completion only: TRL masks
the prompt of prompt-completion data, and this module checks, before the first step, that no
prompt token of any sample carries loss (it stops with an error otherwise). Earlier assistant
turns are prompt.

One chat template for training and serving: the base model's own when it has one, else the
Alpaca-style template of `chat_template` (CodeLlama-7b-hf, the paper's base model, has none). It
is written beside the adapter with the tokenizer, so vLLM and llama.cpp serve the same layout.

Samples longer than ``max_length`` tokens (template included) are dropped and counted, never
cut: a cut sample would teach a reply without its end. Needs the ``train`` extra.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from macsql.evals.chat_template import ALPACA_CHAT_TEMPLATE
from macsql.evals.sft_lines import LineLayoutError, line_messages

SUMMARY_FILE = "macsql-train.json"
TEMPLATE_FILE = "chat_template.jinja"
MASK_CHECK_LIMIT = 256
"""Samples whose masking is checked token by token before training (the first ones)."""


class TrainError(ValueError):
    """The data, the options or the model cannot be trained on."""


@dataclass
class TrainOptions:
    data: str
    out: str
    base_model: str
    validation: str | None = None
    chat_template: str = "auto"
    """``auto`` (the model's own, else ``alpaca``), ``alpaca``, ``model``, or a .jinja file."""
    epochs: float = 1.0
    max_steps: int = -1
    learning_rate: float = 2e-4
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int = 4096
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    target_modules: str = "all-linear"
    limit: int | None = None
    seed: int = 0
    bf16: bool | None = None
    """None: on when a CUDA GPU with bf16 is there."""
    gradient_checkpointing: bool | None = None
    """None: on with a GPU."""


@dataclass
class TrainResult:
    out: Path
    samples: int
    too_long: int
    validation_samples: int
    loss_per_step: list[float]
    eval_loss: float | None
    masked_prompt_tokens: int
    trained_tokens: int
    chat_template_source: str
    summary_path: Path
    extra: dict[str, Any] = field(default_factory=dict)


def _split(line: Any, where: str) -> dict[str, Any]:
    """A line of any layout as TRL's prompt/completion example: every message but the last is
    the prompt, the last (an assistant's) the completion."""
    try:
        messages = line_messages(line)
    except LineLayoutError as exc:
        raise TrainError(f"{where}: {exc}") from None
    if len(messages) < 2 or messages[-1]["role"] != "assistant":
        raise TrainError(f"{where}: the last message must be the assistant's reply, after a prompt")
    return {"prompt": messages[:-1], "completion": messages[-1:]}


def read_examples(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    if not path.is_file():
        raise TrainError(f"no such file: {path}")
    examples: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            if limit is not None and len(examples) >= limit:
                break
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise TrainError(f"{path}:{number}: not JSON ({exc})") from None
            examples.append(_split(line, f"{path}:{number}"))
    if not examples:
        raise TrainError(f"{path} holds no samples")
    return examples


def _template(tokenizer: Any, choice: str) -> tuple[str, str]:
    """(template, where it came from)."""
    own = getattr(tokenizer, "chat_template", None)
    if choice == "auto":
        return (own, "the base model's") if own else (ALPACA_CHAT_TEMPLATE, "alpaca")
    if choice == "alpaca":
        return ALPACA_CHAT_TEMPLATE, "alpaca"
    if choice == "model":
        if not own:
            raise TrainError("--chat-template model: the base model has no chat template")
        return own, "the base model's"
    path = Path(choice).expanduser()
    if not path.is_file():
        raise TrainError(f"--chat-template: no such file {path} (or auto, alpaca, model)")
    return path.read_text(encoding="utf-8"), str(path)


def _ids(encoded: Any) -> list[int]:
    """Token ids from apply_chat_template(tokenize=True), a list or a mapping."""
    if isinstance(encoded, dict) or hasattr(encoded, "keys"):
        encoded = encoded["input_ids"]
    return list(encoded)


def check_completion_mask(
    prepared: Any, examples: Sequence[dict[str, Any]], tokenizer: Any, limit: int
) -> tuple[int, int]:
    """(prompt tokens, completion tokens) over the first `limit` prepared examples, after
    checking that every prompt token is masked (label -100) and every completion token is
    trained; raises TrainError otherwise."""
    masked = trained = 0
    for i in range(min(limit, len(prepared))):
        row = prepared[i]
        ids, labels = list(row["input_ids"]), list(row["labels"])
        prompt = _ids(
            tokenizer.apply_chat_template(
                examples[i]["prompt"], add_generation_prompt=True, tokenize=True
            )
        )
        n = len(prompt)
        if ids[:n] != prompt:
            raise TrainError(
                f"sample {i}: the prompt tokenised alone is not where the training sequence "
                "starts; the chat template renders the prompt differently with its completion"
            )
        if any(label != -100 for label in labels[:n]):
            raise TrainError(f"sample {i}: prompt tokens carry loss")
        if n >= len(ids) or labels[n:] != ids[n:]:
            raise TrainError(f"sample {i}: the completion is not trained whole")
        masked += n
        trained += len(ids) - n
    return masked, trained


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _drop_long(dataset: Any, max_length: int) -> tuple[Any, list[int]]:
    """(the rows of at most `max_length` tokens, their positions)."""
    keep = [i for i, n in enumerate(len(ids) for ids in dataset["input_ids"]) if n <= max_length]
    return dataset.select(keep), keep


def train(options: TrainOptions) -> TrainResult:
    """Fine-tune, save the adapter, the tokenizer and the template, and the run's summary."""
    if options.max_length < 16:
        raise TrainError(f"--max-length must be at least 16, not {options.max_length}")
    data = Path(options.data).expanduser()
    examples = read_examples(data, options.limit)
    val_path = Path(options.validation).expanduser() if options.validation else None
    val_examples = read_examples(val_path, options.limit) if val_path else []
    try:
        import datasets
        import torch
        import transformers
        from peft import LoraConfig
        from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:
        raise TrainError(
            f"`macsql train` needs the train extra: pip install torch, then "
            f'pip install "macsql[train]" ({exc})'
        ) from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(options.base_model)
    except (OSError, ValueError) as exc:
        raise TrainError(f"cannot load the tokenizer of {options.base_model!r}: {exc}") from None
    template, template_source = _template(tokenizer, options.chat_template)
    tokenizer.chat_template = template
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.unk_token or tokenizer.eos_token

    gpu = torch.cuda.is_available()
    bf16 = options.bf16 if options.bf16 is not None else gpu and torch.cuda.is_bf16_supported()
    checkpointing = options.gradient_checkpointing
    if checkpointing is None:
        checkpointing = gpu
    try:
        model = AutoModelForCausalLM.from_pretrained(
            options.base_model, dtype=torch.bfloat16 if bf16 else torch.float32
        )
    except (OSError, ValueError) as exc:
        raise TrainError(f"cannot load the model {options.base_model!r}: {exc}") from None

    losses: list[float] = []

    class LossLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    out = Path(options.out).expanduser()
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    config = SFTConfig(
        output_dir=str(out),
        completion_only_loss=True,
        max_length=None,  # long samples are dropped below, never cut
        per_device_train_batch_size=options.batch_size,
        per_device_eval_batch_size=options.batch_size,
        gradient_accumulation_steps=options.grad_accum,
        learning_rate=options.learning_rate,
        num_train_epochs=options.epochs,
        max_steps=options.max_steps,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        bf16=bf16,
        seed=options.seed,
        disable_tqdm=True,
        dataloader_pin_memory=gpu,
        **_checkpointing(SFTConfig, checkpointing),
    )
    lora = LoraConfig(
        r=options.lora_r,
        lora_alpha=options.lora_alpha,
        lora_dropout=options.lora_dropout,
        target_modules=options.target_modules,
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=datasets.Dataset.from_list(examples),
        eval_dataset=datasets.Dataset.from_list(val_examples) if val_examples else None,
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[LossLog()],
    )
    trainer.train_dataset, kept = _drop_long(trainer.train_dataset, options.max_length)
    if not kept:
        raise TrainError(f"every sample is longer than --max-length {options.max_length}")
    kept_examples = [examples[i] for i in kept]
    masked, trained = check_completion_mask(
        trainer.train_dataset, kept_examples, tokenizer, MASK_CHECK_LIMIT
    )
    val_kept = 0
    if trainer.eval_dataset is not None:
        trainer.eval_dataset, val_rows = _drop_long(trainer.eval_dataset, options.max_length)
        val_kept = len(val_rows)

    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    eval_loss = None
    if trainer.eval_dataset is not None and val_kept:
        eval_loss = float(trainer.evaluate()["eval_loss"])

    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    (out / TEMPLATE_FILE).write_text(template, encoding="utf-8")
    result = TrainResult(
        out=out,
        samples=len(kept),
        too_long=len(examples) - len(kept),
        validation_samples=val_kept,
        loss_per_step=losses,
        eval_loss=eval_loss,
        masked_prompt_tokens=masked,
        trained_tokens=trained,
        chat_template_source=template_source,
        summary_path=out / SUMMARY_FILE,
    )
    summary = {
        "options": asdict(options),
        "data_sha256": _sha256(data),
        "validation_sha256": _sha256(val_path) if val_path else None,
        "samples": result.samples,
        "too_long": result.too_long,
        "validation_samples": val_kept,
        "loss_per_step": losses,
        "eval_loss": eval_loss,
        "mask_check": {
            "samples_checked": min(MASK_CHECK_LIMIT, len(kept)),
            "prompt_tokens_masked": masked,
            "completion_tokens_trained": trained,
            "prompt_tokens_with_loss": 0,
        },
        "chat_template": {
            "source": template_source,
            "sha256": hashlib.sha256(template.encode()).hexdigest(),
            "file": TEMPLATE_FILE,
        },
        "bf16": bf16,
        "device": "cuda" if gpu else "cpu",
        "train_wall_s": round(wall, 2),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": _version("trl"),
            "peft": _version("peft"),
            "datasets": datasets.__version__,
        },
    }
    result.summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return result


def _checkpointing(config: Any, on: bool) -> dict[str, bool]:
    """transformers 5 renamed gradient checkpointing to activation checkpointing."""
    names = {f.name for f in dataclasses.fields(config)}
    key = (
        "activation_checkpointing"
        if "activation_checkpointing" in names
        else "gradient_checkpointing"
    )
    return {key: on}


def _version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
