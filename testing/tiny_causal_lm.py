"""A tiny randomly initialised causal LM, built locally, to run `macsql train` on a CPU.

No download: a byte-level BPE tokenizer is trained (``tokenizers``) on the export's own text,
and a two-layer Llama with that vocabulary is initialised at random (``transformers``). Like
CodeLlama-7b-hf, it has no chat template, so `macsql train` gives it the Alpaca-style one. It
learns nothing useful; it shows that the recipe runs, that the loss falls and that the prompt
is masked.

    python -m macsql.testing.tiny_causal_lm OUT_DIR EXPORT.jsonl [...]

Needs the ``train`` extra.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")


def _texts(corpus: Iterable[Path], limit: int) -> Iterator[str]:
    """The message contents of up to `limit` lines of each export file (any layout)."""
    for path in corpus:
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f):
                if n >= limit:
                    break
                yield from _strings(json.loads(line))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != "metadata":
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def build_tiny_causal_lm(
    out: Path,
    corpus: Sequence[Path],
    *,
    vocab_size: int = 2048,
    hidden_size: int = 64,
    layers: int = 2,
    max_positions: int = 8192,
    lines_per_file: int = 400,
    seed: int = 0,
) -> Path:
    """Write a tokenizer and a random model to `out`; returns `out`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_texts(corpus, lines_per_file), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=max_positions,
    )
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("corpus", type=Path, nargs="+", help="export files to train the BPE on")
    args = parser.parse_args(argv)
    print(build_tiny_causal_lm(args.out, args.corpus))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
