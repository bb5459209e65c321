"""Sampled answers per problem (for maj@k) from harness logs and tables, and lm-eval's votes.

A problem's maj@k is 1 when the most frequent of its first ``k`` answers is correct (counted
by :func:`evalab.stats.sampled.majority_scores`), so each model gives one 0/1 score per
problem: a :class:`~evalab.items.table.ScoreSet` whose metric ends in ``,maj@K``
(lm-evaluation-harness names a filter's metric so), aligned across models and compared like
any per-item score. Read here: :class:`SampledAnswers` (:func:`read_answers`) and the votes
an lm-eval run scored itself (:func:`lm_eval_votes`).

* **lm-evaluation-harness**: a task with ``repeats`` and a majority-vote filter named
  ``maj@K`` (``gsm8k_cot_self_consistency``: regex, ``majority_vote``, ``take_first``, after
  ``take_first_k`` for ``maj@8``) writes one record per document for that filter, its
  ``filtered_resps`` the voted answer and its metric (``exact_match``) whether the vote is
  right: that is the problem's maj@K as the harness scored it, read as it stands. The raw
  ``resps`` (every repeat's whole text) carry no per-repeat verdict, so no other ``k`` is
  computed from them.
* **inspect-ai** (several epochs): each epoch's score of a sample holds the scorer's
  extracted ``answer`` and its ``value`` (``C``/``I`` or 1/0); the epochs in order are the
  samples of the problem.
* **JSON Lines / CSV / TSV**: one record per sample with the problem id, the answer
  (``--answer-column``) and whether it is correct (the 0/1 score column); the samples of a
  problem in file order, or in the order of ``--sample-column`` (numbers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalab import numbers
from evalab.errors import InputError, Setting
from evalab.io import data_suffix
from evalab.items.harness import check_inspect, inspect_archive, inspect_value, is_inspect_log
from evalab.items.readers import Columns, csv_records, jsonl_records, plain_row, read_text
from evalab.items.table import Records, Row, ScoreSet, collect, numeric

__all__ = [
    "SampledAnswers",
    "is_lm_eval_run",
    "lm_eval_votes",
    "majority_k",
    "read_answers",
]

_MAJ = re.compile(r",maj@(?P<k>[0-9]+)$")
#: the setting that picks a score column (the CLI: ``--score-column``)
SCORE_COLUMN = Setting("Columns.scores")


def majority_k(metric: str) -> int | None:
    """The ``K`` of a metric named ``...,maj@K`` (None for any other metric)."""
    m = _MAJ.search(metric)
    return None if m is None else int(m["k"])


@dataclass(frozen=True)
class SampledAnswers:
    """One model's sampled answers: per problem (first appearance order), ``(order, answer,
    correct)`` of each sample, and the line (or sample number) of its first record."""

    model: str
    metric: str
    path: str
    unit: str
    problems: dict[str, list[tuple[float, str, bool]]]
    lines: dict[str, int]
    version: str | None = None

    @property
    def fewest(self) -> int:
        """The fewest samples of a problem."""
        return min(len(a) for a in self.problems.values())

    def in_order(self) -> tuple[list[list[str]], list[list[bool]]]:
        """Each problem's answers and marks, in the samples' order."""
        ordered = [sorted(samples, key=lambda a: a[0]) for samples in self.problems.values()]
        return (
            [[a for _, a, _ in samples] for samples in ordered],
            [[ok for _, _, ok in samples] for samples in ordered],
        )

    def problem_scores(self, k: int, values: Sequence[float]) -> ScoreSet:
        """Per-problem maj@k ``values`` (in problem order) as the score set ``METRIC,maj@k``."""
        rows = (
            Row(i, self.lines[i], {f"{self.metric},maj@{k}": v})
            for i, v in zip(self.problems, values, strict=True)
        )
        model, path = self.model, self.path
        return collect(rows, model=model, path=path, unit=self.unit, version=self.version)[0]


def is_lm_eval_run(path: str) -> bool:
    """An lm-evaluation-harness samples file or folder (else a log or table of answers)."""
    p = Path(path)
    return p.is_dir() or p.name.startswith("samples_")


def read_answers(path: str, cols: Columns, answer: str) -> SampledAnswers:
    """The answers of an inspect-ai log or of a CSV/TSV/JSONL table (column ``answer``)."""
    p = Path(path)
    if data_suffix(p) in (".json", ".eval"):
        return _inspect_answers(p, cols)
    return _plain_answers(p, cols, answer)


def lm_eval_votes(path: str, cols: Columns, ks: Sequence[int]) -> list[ScoreSet]:
    """The maj@K of every problem as an lm-evaluation-harness run scored its ``maj@K``
    filters (those of ``ks`` when given, else all of them)."""
    from evalab.items import read_scores

    sets = read_scores(path, cols)
    votes = [s for s in sets if majority_k(s.metric) is not None]
    if not votes:
        have = ", ".join(dict.fromkeys(s.metric for s in sets))
        raise InputError(
            f"{path}: no majority-vote filter (a metric named METRIC,maj@K, as lm-eval's "
            f"gsm8k_cot_self_consistency writes); the run has {have}"
        )
    if ks:
        missing = [k for k in ks if all(majority_k(s.metric) != k for s in votes)]
        if missing:
            have = ", ".join(dict.fromkeys(f"maj@{majority_k(s.metric)}" for s in votes))
            raise InputError(
                f"{path}: no maj@{missing[0]} filter in the run (it has {have}); lm-eval's "
                "votes are read as the harness scored them: give ",
                Setting("ks"),
                " of one of those",
            )
        votes = [s for s in votes if majority_k(s.metric) in ks]
    metrics = list(dict.fromkeys(s.metric.rpartition(",")[0] for s in votes))
    if len(metrics) > 1:
        raise InputError(
            f"{path}: the votes are scored by several metrics ({', '.join(metrics)}): pick one "
            "with ",
            SCORE_COLUMN,
        )
    for s in votes:
        if not s.binary:
            raise InputError(f"{s.path}: {s.metric} has scores other than 0 and 1")
        if len(s.values) != len(s.ids):
            raise InputError(f"{s.path}: {s.metric}: a document has several records")
    return votes


def _correct(value: Any, where: str) -> bool:
    number = numeric(value, where)
    if number not in (0.0, 1.0):
        raise InputError(
            f"{where}: score {value!r}: maj@k needs each answer marked correct (1) or not (0)"
        )
    return number == 1.0


def _scorer(sample: dict[str, Any], cols: Columns, path: Path) -> str:
    scorers = [str(name) for name in sample.get("scores") or {}]
    if cols.scores:
        name = cols.scores[0].partition(":")[2] or cols.scores[0]
        if name not in scorers:
            raise InputError(
                f"{path}: no scorer {name!r} (the log has {', '.join(scorers) or 'none'})"
            )
        return name
    if len(scorers) != 1:
        raise InputError(
            f"{path}: the log has scorers {', '.join(scorers) or 'none'}: pick one with ",
            SCORE_COLUMN,
        )
    return scorers[0]


def _inspect_log(path: Path) -> dict[str, Any]:
    if data_suffix(path) == ".eval":
        data = inspect_archive(path)
    else:
        try:
            data = numbers.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if not is_inspect_log(data):
            raise InputError(f"{path}: not an inspect-ai log (no version, eval and samples)")
    check_inspect(path, data)
    return data


def _inspect_answers(path: Path, cols: Columns) -> SampledAnswers:
    data = _inspect_log(path)
    samples = [s for s in data.get("samples") or [] if isinstance(s, dict)]
    if not samples:
        raise InputError(f"{path}: the log has no samples")
    scorer = _scorer(samples[0], cols, path)
    spec = data.get("eval") or {}
    problems: dict[str, list[tuple[float, str, bool]]] = {}
    lines: dict[str, int] = {}
    for k, sample in enumerate(samples, start=1):
        where = f"{path}: sample {k}"
        score = (sample.get("scores") or {}).get(scorer)
        if "id" not in sample or not isinstance(score, dict):
            raise InputError(f"{where}: no id, or no {scorer} score")
        answer = score.get("answer")
        if not isinstance(answer, str):
            raise InputError(
                f"{where}: the {scorer} score records no answer (maj@k votes on the answers "
                "a scorer extracts, such as match or choice)"
            )
        item = str(sample["id"])
        epoch = numeric(sample.get("epoch", 1), f"{where}: epoch")
        ok = _correct(inspect_value(score.get("value")), f"{where}: {scorer}")
        problems.setdefault(item, []).append((epoch, answer, ok))
        lines.setdefault(item, k)
    model = spec.get("model")
    version = spec.get("task_version")
    return SampledAnswers(
        model if isinstance(model, str) and model else str(path),
        f"{spec.get('task', 'task')}:{scorer}",
        str(path),
        "sample",
        problems,
        lines,
        None if version is None else str(version),
    )


def _plain_rows(path: Path, cols: Columns) -> Iterator[tuple[int, str, str | None, Any, Any]]:
    """``(line, problem, sample, correct, answer)`` of each record of a CSV/TSV/JSONL file."""
    score, answer = cols.scores[0], str(cols.answer)
    if data_suffix(path) in (".csv", ".tsv"):
        rec: Records = csv_records(path, cols)
    else:
        rec = Records()
        for line, record in jsonl_records(read_text(path), path):
            rec.add(plain_row(record, line, f"{path}: line {line}", cols))
    if not rec.items:
        raise InputError(f"{path}: no records")
    yield from zip(
        rec.lines, rec.items, rec.samples, rec.scores[score][1], rec.scores[answer][1], strict=True
    )


def _sample_number(sample: str, where: str) -> float:
    try:
        return numeric(sample, where)
    except InputError:
        raise InputError(
            f"{where}: sample {sample!r} is not a number (",
            Setting("Columns.sample"),
            " numbers a problem's samples in the order they were drawn)",
        ) from None


def _plain_answers(path: Path, cols: Columns, answer: str) -> SampledAnswers:
    score = cols.scores[0] if cols.scores else "score"
    problems: dict[str, list[tuple[float, str, bool]]] = {}
    lines: dict[str, int] = {}
    for line, item, sample, correct, text in _plain_rows(
        path, replace(cols, scores=(score,), answer=answer)
    ):
        where = f"{path}: line {line}"
        if isinstance(text, (dict, list)) or text is None:
            raise InputError(f"{where}: answer {text!r} is not a text or a number")
        order = float(line) if sample is None else _sample_number(sample, where)
        problems.setdefault(item, []).append((order, str(text), _correct(correct, where)))
        lines.setdefault(item, line)
    return SampledAnswers(str(path), score, str(path), "line", problems, lines)
