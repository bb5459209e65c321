"""maj@k per problem from harness logs with several sampled answers each, as score sets.

A problem's maj@k is 1 when the most frequent of its first ``k`` answers is correct (see
:func:`evalab.stats.sampled.majority_at_k`), so each model gives one 0/1 score per problem:
a :class:`~evalab.items.table.ScoreSet` whose metric ends in ``,maj@K`` (lm-evaluation-harness
names a filter's metric so), aligned across models and compared like any per-item score.

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
from evalab.errors import InputError
from evalab.io import data_suffix
from evalab.items.harness import check_inspect, inspect_archive, inspect_value, is_inspect_log
from evalab.items.readers import Columns, csv_records, jsonl_records, plain_row, read_text
from evalab.items.table import Records, Row, ScoreSet, collect, numeric
from evalab.stats.sampled import majority_at_k

__all__ = ["majority_k", "read_majorities"]

_MAJ = re.compile(r",maj@(?P<k>[0-9]+)$")


def majority_k(metric: str) -> int | None:
    """The ``K`` of a metric named ``...,maj@K`` (None for any other metric)."""
    m = _MAJ.search(metric)
    return None if m is None else int(m["k"])


@dataclass(frozen=True)
class _Sampled:
    """One model's answers: per problem (first appearance order), ``(order, answer, correct)``
    of each sample, and the line (or sample number) of its first record."""

    model: str
    metric: str
    path: str
    unit: str
    problems: dict[str, list[tuple[float, str, bool]]]
    lines: dict[str, int]
    version: str | None = None


def read_majorities(
    paths: Sequence[str], cols: Columns, answer: str, ks: Sequence[int]
) -> list[ScoreSet]:
    """Score sets of each file and each ``k``: every problem's maj@k (0 or 1).

    For lm-evaluation-harness, the ``maj@K`` filters of the run (those of ``ks`` when given,
    else all of them); for answers, each k of ``ks`` (by default the fewest samples of any
    problem in any of the answer files, so that every model votes over as many).
    """
    read: list[list[ScoreSet] | _Sampled] = []  # in the order given: the first is the baseline
    for path in paths:
        p = Path(path)
        if p.is_dir() or p.name.startswith("samples_"):
            read.append(_lm_eval_votes(path, cols, ks))
        elif data_suffix(p) in (".json", ".eval"):
            read.append(_inspect_answers(p, cols))
        else:
            read.append(_plain_answers(p, cols, answer))
    sampled = [r for r in read if isinstance(r, _Sampled)]
    if sampled and not ks:
        ks = [min(len(a) for s in sampled for a in s.problems.values())]
    return [v for r in read for v in (r if isinstance(r, list) else [_votes(r, k) for k in ks])]


def _votes(s: _Sampled, k: int) -> ScoreSet:
    ids = list(s.problems)
    ordered = [sorted(s.problems[i], key=lambda a: a[0]) for i in ids]
    try:
        values = majority_at_k(
            [[a for _, a, _ in samples] for samples in ordered],
            [[ok for _, _, ok in samples] for samples in ordered],
            k,
        )
    except InputError as exc:
        raise InputError(f"{s.path}: {exc}") from None
    rows = (
        Row(i, s.lines[i], {f"{s.metric},maj@{k}": v})
        for i, v in zip(ids, values.tolist(), strict=True)
    )
    return collect(rows, model=s.model, path=s.path, unit=s.unit, version=s.version)[0]


def _lm_eval_votes(path: str, cols: Columns, ks: Sequence[int]) -> list[ScoreSet]:
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
                "votes are read as the harness scored them: give -k of one of those"
            )
        votes = [s for s in votes if majority_k(s.metric) in ks]
    metrics = list(dict.fromkeys(s.metric.rpartition(",")[0] for s in votes))
    if len(metrics) > 1:
        raise InputError(
            f"{path}: the votes are scored by several metrics ({', '.join(metrics)}): pick one "
            "with --score-column"
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
            f"{path}: the log has scorers {', '.join(scorers) or 'none'}: pick one with "
            "--score-column"
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


def _inspect_answers(path: Path, cols: Columns) -> _Sampled:
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
    return _Sampled(
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


def _plain_answers(path: Path, cols: Columns, answer: str) -> _Sampled:
    score = cols.scores[0] if cols.scores else "score"
    problems: dict[str, list[tuple[float, str, bool]]] = {}
    lines: dict[str, int] = {}
    for line, item, sample, correct, text in _plain_rows(
        path, replace(cols, scores=(score,), answer=answer)
    ):
        where = f"{path}: line {line}"
        if isinstance(text, (dict, list)) or text is None:
            raise InputError(f"{where}: answer {text!r} is not a text or a number")
        order = float(line) if sample is None else numeric(sample, f"{where}: sample")
        problems.setdefault(item, []).append((order, str(text), _correct(correct, where)))
        lines.setdefault(item, line)
    return _Sampled(str(path), score, str(path), "line", problems, lines)
