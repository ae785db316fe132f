"""Keeping evaluation questions out of fine-tuning data.

A model tuned on prompts that quote Spider dev or BIRD dev questions has seen the test; its
scores there mean nothing. Two checks, both refusals:

- the run's items must come from a training split (Spider ``train_spider.json``, BIRD train,
  SParC ``train.json``, CoSQL ``cosql_train.json``);
- no prompt may quote a question of an evaluation set. Quotes are found on word tokens, so
  punctuation, case and line breaks do not hide them. A question that the training file itself
  also holds (Spider train repeats a few short dev questions about other databases, such as
  "How many flights do we have?") is training data too, and is not counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TRAINING_SPLITS = frozenset({"train", "train_others"})
"""Splits whose questions may become fine-tuning data (Spider train_spider.json and
train_others.json, BIRD train)."""

_EVALUATION_FILES = {
    "spider": ("dev.json", "test.json"),
    "bird": ("dev.json", "test.json", "mini_dev_sqlite.json", "mini_dev_mysql.json",
             "mini_dev_postgresql.json"),
    "sparc": ("dev.json",),
    "cosql": ("cosql_dev.json",),
}  # fmt: skip
_KEY_WORDS = 3
_MIN_WORDS = 3  # shorter "questions" are not quotes anyone could recognise
_WORD = re.compile(r"\w+")


class EvaluationDataError(ValueError):
    """The data would put evaluation questions into a training set."""


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def evaluation_files(dataset: str, data_dir: Path) -> list[Path]:
    """The evaluation question files that sit in a dataset's folder."""
    return [
        data_dir / name
        for name in _EVALUATION_FILES.get(dataset, ())
        if (data_dir / name).is_file()
    ]


def questions_of(path: Path) -> list[str]:
    """The questions of a Spider or BIRD question file, or the utterances of a SParC or CoSQL
    one (every turn's, and the interaction's final question)."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvaluationDataError(f"cannot read the evaluation set {path}: {exc}") from None
    if not isinstance(records, list):
        raise EvaluationDataError(f"{path} is not a question file (a JSON list)")
    questions = [str(r["question"]) for r in records if isinstance(r, dict) and r.get("question")]
    for record in records:
        if isinstance(record, dict) and isinstance(record.get("interaction"), list):
            turns = [*record["interaction"], record.get("final") or {}]
            questions += [
                str(t["utterance"]) for t in turns if isinstance(t, dict) and t.get("utterance")
            ]
    return questions


@dataclass(frozen=True)
class Quote:
    question: str
    source: str


class QuoteFinder:
    """Finds evaluation questions quoted in a text, in time linear in the text's words."""

    def __init__(self, sources: Mapping[str, Sequence[str]], allowed: Iterable[str] = ()) -> None:
        allowed_words = {tuple(words(q)) for q in allowed}
        self._by_key: dict[tuple[str, ...], list[tuple[tuple[str, ...], Quote]]] = {}
        for source, questions in sources.items():
            for question in questions:
                tokens = tuple(words(question))
                if len(tokens) < _MIN_WORDS or tokens in allowed_words:
                    continue
                self._by_key.setdefault(tokens[:_KEY_WORDS], []).append(
                    (tokens, Quote(question, source))
                )
        self.sources = list(sources)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_key.values())

    def find(self, text: str) -> Quote | None:
        tokens = words(text)
        for i in range(len(tokens) - _KEY_WORDS + 1):
            for question, quote in self._by_key.get(tuple(tokens[i : i + _KEY_WORDS]), ()):
                if tuple(tokens[i : i + len(question)]) == question:
                    return quote
        return None


def check_training_split(dataset: str, split: str) -> None:
    if split not in TRAINING_SPLITS:
        raise EvaluationDataError(
            f"the run is over {dataset} {split}, an evaluation set; fine-tuning data must come "
            "from training data: run the teacher with --split train (Spider train_spider.json, "
            "BIRD train)"
        )
