"""Harness output files built from the harnesses' documented layouts, for the reader tests.

lm-evaluation-harness 0.4 (``--log_samples``): per model a folder with ``results_<date>.json``
and one ``samples_<task>_<date>.jsonl`` per task, one record per document and filter.
inspect-ai: a JSON log (format version 2) with ``eval``, ``status`` and ``samples``, or the
same as an ``.eval`` zip archive (``header.json`` and ``samples/<id>_epoch_<epoch>.json``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

DATE = "2024-06-01T12-00-00.000001"


def lm_eval_sample(
    doc_id: int, acc: float, *, passage: str = "p1", filt: str = "none", extra: dict | None = None
) -> dict:
    """One record of a samples file, with every key the harness writes."""
    record = {
        "doc_id": doc_id,
        "doc": {
            "question": f"q{doc_id}",
            "passage_id": passage,
            "choices": ["a", "b"],
            "answer": 0,
        },
        "target": 0,
        "arguments": {
            "gen_args_0": {"arg_0": f"q{doc_id}", "arg_1": " a"},
            "gen_args_1": {"arg_0": f"q{doc_id}", "arg_1": " b"},
        },
        "resps": [[["-1.5", "False"]], [["-2.5", "False"]]],
        "filtered_resps": [["-1.5", "False"], ["-2.5", "False"]],
        "filter": filt,
        "metrics": ["acc", "acc_norm"],
        "doc_hash": "d" * 64,
        "prompt_hash": "p" * 64,
        "target_hash": "t" * 64,
        "acc": acc,
        "acc_norm": acc,
    }
    record.update(extra or {})
    return record


def write_lm_eval_run(
    folder: Path,
    tasks: dict[str, Sequence[float]],
    *,
    version: str = "0.4.3",
    task_version: float = 1.0,
    passages: int = 1,
    model: str | None = None,
) -> Path:
    """A run folder: ``results_<date>.json`` and one samples file per task (the model
    ``pretrained=MODEL`` in its ``model_args``, the folder's name by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    for task, accs in tasks.items():
        lines = [
            json.dumps(lm_eval_sample(i, a, passage=f"p{i % passages}")) for i, a in enumerate(accs)
        ]
        (folder / f"samples_{task}_{DATE}.jsonl").write_text(
            "\n".join(lines) + "\n", encoding="utf-8"
        )
    results = {
        "results": {
            t: {"alias": t, "acc,none": sum(a) / len(a), "acc_stderr,none": 0.01}
            for t, a in tasks.items()
        },
        "group_subtasks": {t: [] for t in tasks},
        "configs": {t: {"task": t, "output_type": "multiple_choice"} for t in tasks},
        "versions": {t: task_version for t in tasks},
        "n-shot": {t: 0 for t in tasks},
        "higher_is_better": {t: {"acc": True, "acc_norm": True} for t in tasks},
        "n-samples": {t: {"original": len(a), "effective": len(a)} for t, a in tasks.items()},
        "config": {
            "model": "hf",
            "model_args": f"pretrained={model or folder.name},dtype=float16",
            "batch_size": 1,
        },
        "git_hash": "abc1234",
        "date": 1717243200.0,
        "lm_eval_version": version,
    }
    (folder / f"results_{DATE}.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


def inspect_log(
    path: Path,
    values: Sequence[object],
    *,
    epochs: int = 1,
    version: int = 2,
    status: str = "success",
    model: str = "openai/gpt-4o",
    answers: Sequence[str] | None = None,
) -> Path:
    """An inspect-ai JSON log with one ``match`` scorer; ``values`` (and the scorer's
    extracted ``answers``, ``A`` by default) per sample and epoch (epoch-major: every sample of
    epoch 1, then of epoch 2, ...)."""
    n = len(values) // epochs
    samples = [
        {
            "id": k % n + 1,
            "epoch": k // n + 1,
            "input": f"question {k % n + 1}",
            "target": "A",
            "messages": [],
            "output": {"model": model, "choices": []},
            "scores": {
                "match": {
                    "value": v,
                    "answer": "A" if answers is None else answers[k],
                    "explanation": "A" if answers is None else answers[k],
                }
            },
            "metadata": {"passage": f"p{(k % n) // 2}"},
        }
        for k, v in enumerate(values)
    ]
    log = {
        "version": version,
        "status": status,
        "eval": {
            "task": "reading",
            "task_version": 0,
            "model": model,
            "dataset": {"name": "reading"},
            "config": {"epochs": epochs},
            "created": "2024-06-01T12:00:00+00:00",
        },
        "plan": {"name": "plan", "steps": []},
        "results": {"total_samples": len(values), "completed_samples": len(values), "scores": []},
        "stats": {"started_at": "", "completed_at": "", "model_usage": {}},
        "samples": samples,
    }
    if path.suffix == ".eval":  # the archive: the header, then one file per sample and epoch
        import zipfile

        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(
                "_journal/start.json", json.dumps({"version": version, "eval": log["eval"]})
            )
            for sample in log.pop("samples"):
                archive.writestr(
                    f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample)
                )
            archive.writestr("header.json", json.dumps(log))
        return path
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def write_gsm8k_run(
    folder: Path, strict: Sequence[int], flexible: Sequence[int], model: str
) -> Path:
    """A gsm8k run folder as lm-evaluation-harness 0.4 writes it: one record per document
    and filter (``strict-match``, ``flexible-extract``), each with ``exact_match``; the
    results file names the model in ``model_name`` (0.4.3+)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (s, f) in enumerate(zip(strict, flexible, strict=True)):
        for filt, value in (("strict-match", s), ("flexible-extract", f)):
            record = lm_eval_sample(i, 0, filt=filt)
            for key in ("acc", "acc_norm"):
                del record[key]
            record.update({"metrics": ["exact_match"], "exact_match": float(value)})
            lines.append(json.dumps(record))
    (folder / f"samples_gsm8k_{DATE}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = {
        "results": {
            "gsm8k": {
                "alias": "gsm8k",
                "exact_match,strict-match": sum(strict) / len(strict),
                "exact_match,flexible-extract": sum(flexible) / len(flexible),
            }
        },
        "versions": {"gsm8k": 3.0},
        "config": {"model": "hf", "model_args": "pretrained=ignored", "batch_size": 1},
        "model_name": model,
        "lm_eval_version": "0.4.3",
    }
    (folder / f"results_{DATE}.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


SC_TASK = "gsm8k_cot_self_consistency"
_ANSWER = re.compile(r"The answer is (\-?[0-9\.\,]*[0-9]+)")


def extracted(text: str) -> str:
    """lm-eval's regex filter on one response: the first match of the task's pattern, else
    ``[invalid]``."""
    found = _ANSWER.findall(text)
    return found[0].strip() if found else "[invalid]"


def voted(answers: Sequence[str]) -> str:
    """lm-eval's ``majority_vote`` filter: the most common answer, the first seen on a tie."""
    return Counter(answers).most_common(1)[0][0]


def write_self_consistency_run(
    folder: Path, texts: Sequence[Sequence[str]], targets: Sequence[str], model: str
) -> Path:
    """A ``gsm8k_cot_self_consistency`` run as lm-evaluation-harness 0.4 writes it with
    ``repeats: N``: per filter (``score-first``, ``maj@N``, ``maj@8``) one record per document,
    ``resps`` the N generations of its one request, ``filtered_resps`` what the filter kept,
    ``exact_match`` that against the target; the records filter by filter."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(texts[0])
    filters = {"score-first": 1, f"maj@{n}": n, "maj@8": 8}
    lines, means = [], {}
    for name, k in filters.items():
        hits = []
        for i, (gens, target) in enumerate(zip(texts, targets, strict=True)):
            picks = [extracted(t) for t in gens[:k]]
            kept = picks[0] if name == "score-first" else voted(picks)
            hits.append(float(kept == target))
            record = {
                "doc_id": i,
                "doc": {"question": f"Question {i}?", "answer": f"Some steps.\n#### {target}"},
                "target": target,
                "arguments": {
                    "gen_args_0": {
                        "arg_0": f"Q: Question {i}?\nA:",
                        "arg_1": {"until": ["Q:", "\n\n"], "do_sample": True, "temperature": 0.2},
                    }
                },
                "resps": [list(gens)],
                "filtered_resps": [kept],
                "filter": name,
                "metrics": ["exact_match"],
                "doc_hash": "d" * 64,
                "prompt_hash": "p" * 64,
                "target_hash": "t" * 64,
                "exact_match": hits[-1],
            }
            lines.append(json.dumps(record))
        means[name] = sum(hits) / len(hits)
    (folder / f"samples_{SC_TASK}_{DATE}.jsonl").write_text(
        "\n".join(lines) + "\n", encoding="utf-8"
    )
    results = {
        "results": {
            SC_TASK: {"alias": SC_TASK}
            | {f"exact_match,{f}": m for f, m in means.items()}
            | {f"exact_match_stderr,{f}": "N/A" for f in means}
        },
        "configs": {SC_TASK: {"task": SC_TASK, "repeats": n, "output_type": "generate_until"}},
        "versions": {SC_TASK: 2.0},
        "config": {"model": "hf", "model_args": f"pretrained={model}", "batch_size": 1},
        "model_name": model,
        "lm_eval_version": "0.4.8",
    }
    (folder / f"results_{DATE}.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return folder
