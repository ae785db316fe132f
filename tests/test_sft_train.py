"""The recipe's last steps: multi-turn samples, `macsql train` on a CPU, the student served back.

A scripted teacher (`macsql.testing.scripted_teacher`) over the first 12 Spider train items:
item 5's first Decomposer reply is cut off at the token limit and the retry answers, so the
export holds a two-turn sample whose first assistant turn must never be trained. Then a tiny
randomly initialised causal LM, built here with no download, is fine-tuned for a few steps on
the export; the loss must fall and no prompt token may carry loss.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import SPIDER, spider_eval_args

from macsql.cli.main import main
from macsql.testing.scripted import ScriptedOpenAIServer
from macsql.testing.scripted_teacher import SpiderTrainTeacher, schedule

N = 12
CUT_OFF = 5

pytestmark = pytest.mark.skipif(
    not (SPIDER / "train_spider.json").exists(), reason="the Spider data is not in shared/data"
)


def _train_extra() -> None:
    """The `train` extra's libraries: required under CI, else the test skips."""
    for name in ("torch", "transformers", "trl", "peft", "datasets", "tokenizers"):
        if os.environ.get("CI") == "true":
            __import__(name)
        else:
            pytest.importorskip(name)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 12 items' run, exported in every layout; the folder of the files."""
    root = tmp_path_factory.mktemp("small")
    teacher = SpiderTrainTeacher(SPIDER)
    with ScriptedOpenAIServer(teacher) as server:
        args = spider_eval_args(
            root / "run", "--split", "train", "--limit", str(N), "--traces",
            "--model", "openai:scripted", "--base-url", server.base_url, "--api-key", "k",
        )  # fmt: skip
        assert main(args) == 0
    assert teacher.unknown == []
    out = root / "data" / "sft.jsonl"
    assert main(["export-sft", str(root / "run"), "--out", str(out), "--format", "all"]) == 0
    return out.parent


def test_the_schedule_has_a_cut_off_item() -> None:
    assert schedule(CUT_OFF) == "cut_off" and schedule(0) == "gold"


def test_a_cut_off_reply_is_never_a_target(export: Path) -> None:
    stats = json.loads((export / "sft.stats.json").read_text())
    assert stats["dropped"]["cut_off"]["count"] == 1 and stats["multi_turn"] == 1
    [line] = [
        x for x in _lines(export / "sft.prompt-completion.jsonl") if x["metadata"]["item"] == 5
    ]
    # The cut-off reply and the retry request are prompt; the completion is the answer.
    assert [m["role"] for m in line["prompt"]] == ["user", "assistant", "user"]
    assert line["prompt"][1]["content"].endswith("```sql\nSELECT")
    assert "stopped at the length limit" in line["prompt"][2]["content"]
    assert line["completion"][0]["content"].startswith("```sql\nSELECT")
    for layout in ("chat", "openai"):
        [chat] = [x for x in _lines(export / f"sft.{layout}.jsonl") if len(x["messages"]) == 4]
        assert [m.get("weight") for m in chat["messages"]] == [None, 0, None, None]
    [alpaca] = [x for x in _lines(export / "sft.alpaca.jsonl") if x.get("history")]
    assert alpaca["history"][0][1].endswith("```sql\nSELECT")
    # No cut-off text is a target in any layout.
    targets = [
        x["completion"][0]["content"] for x in _lines(export / "sft.prompt-completion.jsonl")
    ]
    assert not any(t.rstrip().endswith("SELECT") for t in targets)


@pytest.mark.slow
def test_macsql_train_on_a_cpu_masks_the_prompt_and_the_loss_falls(
    export: Path, tmp_path: Path
) -> None:
    _train_extra()
    from transformers import AutoTokenizer

    from macsql.evals.chat_template import ALPACA_CHAT_TEMPLATE
    from macsql.evals.sft_train import TrainError, check_completion_mask
    from macsql.testing.tiny_causal_lm import build_tiny_causal_lm

    data = export / "sft.prompt-completion.jsonl"
    model = build_tiny_causal_lm(tmp_path / "tiny", [data], vocab_size=1024, lines_per_file=20)
    assert AutoTokenizer.from_pretrained(model).chat_template is None  # as CodeLlama-7b-hf
    # --max-tokens with the student's own tokenizer: samples over the limit dropped and counted.
    tokenizer = AutoTokenizer.from_pretrained(model)
    lengths = [
        sum(len(tokenizer.encode(m["content"], add_special_tokens=False)) for m in messages)
        for messages in (x["prompt"] + x["completion"] for x in _lines(data))
    ]
    limit = sorted(lengths)[len(lengths) // 2]
    short = tmp_path / "short" / "sft.jsonl"
    options = ["--tokenizer", f"hf:{model}", "--max-tokens", str(limit)]
    assert main(["export-sft", str(export.parent / "run"), "--out", str(short), *options]) == 0
    stats = json.loads((tmp_path / "short" / "sft.stats.json").read_text())
    assert stats["tokenizer"] == f"counted with `hf:{model}`"
    assert stats["dropped"]["too_long"]["count"] == sum(n > limit for n in lengths) > 0
    adapter = tmp_path / "adapter"
    # Two short samples (the Refiner's), the same batch each step: the loss must fall.
    refiner = [x for x in _lines(data) if x["metadata"]["agent"] == "refiner"][:2]
    small = tmp_path / "two.jsonl"
    small.write_text("".join(json.dumps(x) + "\n" for x in refiner))
    code = main(
        ["train", str(small), "--base-model", str(model), "--out", str(adapter),
         "--max-steps", "5", "--batch-size", "2", "--learning-rate", "1e-2", "--lora-r", "8"]
    )  # fmt: skip
    assert code == 0
    summary = json.loads((adapter / "macsql-train.json").read_text())
    losses = summary["loss_per_step"]
    assert len(losses) == 5 and losses[-1] < losses[0]
    assert summary["mask_check"]["prompt_tokens_with_loss"] == 0
    assert summary["chat_template"]["source"] == "alpaca"
    assert (adapter / "adapter_config.json").is_file()
    assert (adapter / "adapter_model.safetensors").is_file()

    # One template for training and serving: the one beside the adapter is the training one,
    # and the served tokenizer renders a prompt to the tokens training masked.
    assert (adapter / "chat_template.jinja").read_text() == ALPACA_CHAT_TEMPLATE
    served = AutoTokenizer.from_pretrained(adapter)
    assert served.chat_template == ALPACA_CHAT_TEMPLATE
    sample = refiner[0]
    prompt = served.apply_chat_template(
        sample["prompt"], add_generation_prompt=True, tokenize=False
    )
    whole = served.apply_chat_template([*sample["prompt"], *sample["completion"]], tokenize=False)
    assert whole == prompt + sample["completion"][0]["content"] + served.eos_token
    assert prompt.endswith("### Response:\n") and prompt.startswith(served.bos_token)

    # The mask, checked independently of the command: labels decode to the reply and its EOS,
    # everything before them is -100.
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    tokenizer.chat_template = ALPACA_CHAT_TEMPLATE
    examples = [{"prompt": x["prompt"], "completion": x["completion"]} for x in refiner]
    trainer = SFTTrainer(
        model=str(model),
        args=SFTConfig(output_dir=str(tmp_path / "check"), max_length=None, report_to="none",
                       completion_only_loss=True, bf16=False),
        train_dataset=Dataset.from_list(examples),
        processing_class=tokenizer,
    )  # fmt: skip
    for row, example in zip(trainer.train_dataset, examples, strict=True):
        ids, labels = row["input_ids"], row["labels"]
        first = next(i for i, label in enumerate(labels) if label != -100)
        assert all(label == -100 for label in labels[:first])
        assert tokenizer.decode(ids[first:]) == example["completion"][0]["content"] + "</s>"
        rendered = tokenizer.apply_chat_template(
            example["prompt"], add_generation_prompt=True, tokenize=False
        )
        assert tokenizer.decode(ids[:first]) == rendered
    masked, trained = check_completion_mask(trainer.train_dataset, examples, tokenizer, 10)
    assert masked > 10 * trained > 0
    # The check fails on data that trains the prompt (TRL's default for `messages` data).
    leaky = trainer.train_dataset.map(lambda r: {"labels": r["input_ids"]})
    with pytest.raises(TrainError, match="prompt tokens carry loss"):
        check_completion_mask(leaky, examples, tokenizer, 10)


def test_train_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no prompt here"}\n')
    for data in (tmp_path / "missing.jsonl", bad):
        code = main(["train", str(data), "--base-model", "x", "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("macsql: error:") and "Traceback" not in err
    assert "bad.jsonl:1: no prompt/completion, messages, conversations (ShareGPT)" in err


def test_the_student_is_served_back_per_agent(tmp_path: Path) -> None:
    """`--set decomposer_model=openai:sql-llama`: the Decomposer's requests name the student,
    the other agents' the base model, on the one server (vLLM serves both)."""
    teacher = SpiderTrainTeacher(SPIDER)
    with ScriptedOpenAIServer(teacher) as server:
        args = spider_eval_args(
            tmp_path / "run", "--split", "train", "--limit", "3",
            "--model", "openai:codellama/CodeLlama-7b-hf", "--base-url", server.base_url,
            "--api-key", "k", "--set", "decomposer_model=openai:sql-llama",
        )  # fmt: skip
        assert main(args) == 0
        bodies = list(server.bodies)
    by_agent = {
        ("decomposer" if "You are the Decomposer" in b["messages"][0]["content"] else "other"): b[
            "model"
        ]
        for b in bodies
    }
    assert by_agent == {"decomposer": "sql-llama", "other": "codellama/CodeLlama-7b-hf"}
