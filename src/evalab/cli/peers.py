"""The peers' command-line habits (sacrebleu, jiwer, bert-score, comet-score) met at the edge.

Spellings that mean the same thing here are accepted as option names of the commands
(``-tok``, ``-lc``, ``-c/--cand``, ``--hypothesis``...). This module handles the others,
before click parses anything: a peer flag that means something else here, or that click
would misread (``-sl`` as ``-s l``), is refused with one line naming evalab's spelling,
and an unknown option gets a suggestion only when one is close.

>>> peer_equivalent("--sentence-level", "score")
"sacrebleu's -sl/--sentence-level is --segments FILE here (per-segment scores as JSON Lines)"
>>> relevant_suggestions("--metirc", ["--metrics", "--seed", "--set"])
['--metrics']
>>> relevant_suggestions("--paired-bs", ["--metrics", "--seed"])
[]
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from evalab.errors import SettingsError

__all__ = [
    "bare_scores",
    "check_peer_habits",
    "peer_equivalent",
    "relevant_suggestions",
    "translate_peer_flags",
]

_SEGMENTS = "--segments FILE here (per-segment scores as JSON Lines)"

#: a peer's option that is not an option of the command -> what to write here instead
#: (``{command}`` is the command it was given to)
PEER_EQUIVALENTS: dict[str, str] = {
    "-sl": f"sacrebleu's -sl/--sentence-level is {_SEGMENTS}",
    "--sentence-level": f"sacrebleu's -sl/--sentence-level is {_SEGMENTS}",
    "--seg_level": f"bert-score's -s/--seg_level is {_SEGMENTS}",
    "--cer": "jiwer's -c/--cer is -m cer here",
    "--global": "jiwer's -g/--global is the default here: wer and cer are corpus-level (all edits over all reference words)",
    "-g": "jiwer's -g/--global is the default here: wer and cer are corpus-level (all edits over all reference words)",
    "--paired-bs": "sacrebleu's --paired-bs is `evalab compare -t bs` (or `evalab score --paired-bs`)",
    "-pbs": "sacrebleu's --paired-bs is `evalab compare -t bs` (or `evalab score --paired-bs`)",
    "--paired-ar": "sacrebleu's --paired-ar is `evalab compare -t ar` (or `evalab score --paired-ar`)",
    "-par": "sacrebleu's --paired-ar is `evalab compare -t ar` (or `evalab score --paired-ar`)",
    "-ci": "sacrebleu's -ci/--confidence is --ci on `evalab score`; `evalab {command}` always reports intervals",
    "--model_type": "bert-score's --model_type is --model here",
    "--rescale_with_baseline": "bert-score's --rescale_with_baseline is --rescale here",
    "--batch_size": "comet-score's and bert-score's --batch_size is --set comet.batch_size=N (or bertscore.batch_size=N) here; `evalab semsim` and `evalab ppl` take --batch-size N",
    "--num_layers": "bert-score's -l/--num_layers is --layer here",
    "--lang": "--lang is an option of `evalab semsim` (bert-score's --lang); on score give -l SRC-TGT",
    "-t": "sacrebleu's -t TESTSET is not supported: evalab downloads nothing; pass the reference file with -r",
    "--test-set": "sacrebleu's -t/--test-set is not supported: evalab downloads nothing; pass the reference file with -r",
    "--gpus": "comet-score's --gpus is --set comet.device=cuda here",
    "--to_json": "comet-score's --to_json FILE is -f json -o FILE here",
    "--only_system": "comet-score's --only_system is what `evalab score` prints by default (per-segment scores only with --segments FILE)",
    "--chrf-word-order": "sacrebleu's --chrf-word-order N is --set chrf.word_order=N here (2: chrF++)",
    "-cw": "sacrebleu's -cw/--chrf-word-order N is --set chrf.word_order=N here (2: chrF++)",
    "--chrf-char-order": "sacrebleu's --chrf-char-order N is --set chrf.char_order=N here",
    "-cc": "sacrebleu's -cc/--chrf-char-order N is --set chrf.char_order=N here",
    "--chrf-beta": "sacrebleu's --chrf-beta N is --set chrf.beta=N here",
    "--short": "sacrebleu's -sh/--short signature has no counterpart: the signature has one form here, and -f json gives every setting as a field",
    "-sh": "sacrebleu's -sh/--short signature has no counterpart: the signature has one form here, and -f json gives every setting as a field",
}

#: comet-score's short options that take a file, where evalab has the same letter for
#: another option (``-s`` is ``--set``) or none (``-t``), -> evalab's spelling
_COMET_FILES = {
    "-s": "comet-score's -s SOURCES is --source FILE here (-s is --set KEY=VALUE)",
    "-t": "comet-score's -t TRANSLATIONS is -i FILE here",
}
#: the options that give the hypotheses of ``evalab score``
_INPUTS = ("-i", "--input", "-c", "--cand", "--candidate", "--hypothesis")

_CANDIDATE = {"-c": "-i", "--cand": "-i", "--candidate": "-i", "--hypothesis": "-i", "--ref": "-r"}

#: per command: a peer's spelling -> the option it means here (sacrebleu, bert-score, jiwer)
PEER_ALIASES: dict[str, dict[str, str]] = {
    "score": {
        **_CANDIDATE,
        "-ci": "--ci",
        "-cin": "-n",
        "--confidence-n": "-n",
        "-pbs": "--paired-bs",
        "-par": "--paired-ar",
        "--paired-bs-n": "-n",
        "-pbsn": "-n",
        "--paired-ar-n": "-n",
        "-parn": "-n",
        "--language-pair": "--langpair",
    },
    "compare": {
        "--ref": "-r",
        "--paired-bs-n": "-n",
        "-pbsn": "-n",
        "--paired-ar-n": "-n",
        "-parn": "-n",
    },
    "semsim": {
        **_CANDIDATE,
        "--model_type": "--model",
        "--rescale_with_baseline": "--rescale",
        "--batch_size": "--batch-size",
    },
}


def translate_peer_flags(args: Sequence[str], command: str) -> list[str]:
    """``args`` with the command's peer spellings (``-c``, ``-cin``) as evalab's (``-i``, ``-n``).

    ``--cand=FILE`` is translated too; values and everything after ``--`` are left alone
    (a value that looks like a peer flag is taken for one, as click would take it).
    """
    aliases = PEER_ALIASES.get(command, {})
    out: list[str] = []
    for i, tok in enumerate(args):
        if tok == "--":
            return [*out, *args[i:]]
        name, eq, value = tok.partition("=")
        out.append(aliases[name] + eq + value if name in aliases else tok)
    return out


#: option names that are help in evalab but a value-taking option in a peer
HELP_FLAG = "-h"


def check_peer_habits(args: Sequence[str], command: str, options: set[str]) -> None:
    """Refuse, with the evalab spelling, a peer habit click would misread or answer with help.

    ``command`` is the command path (``score``, ``ablate run``) and ``options`` its option
    names. ``-h`` is help only when nothing but command names comes before it and nothing
    after: jiwer's ``-h HYP`` (hypothesis file) must not print help and exit 0 into a
    redirected stdout. ``--confidence`` without a level is sacrebleu's switch; ``-c``
    without a file is jiwer's ``--cer`` switch; a peer's multi-letter short option that is
    not one of the command's (``-sl``) would be read as a short option and its value
    (``-s l``).
    """
    args = list(args[: args.index("--")] if "--" in args else args)
    options = options | set(PEER_ALIASES.get(command, {}))
    path = " ".join(["evalab", *command.split()])
    see = f" (see `{path} --help`)"
    for i, tok in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else None
        if tok == HELP_FLAG and (nxt is not None or any(a.startswith("-") for a in args[:i])):
            raise SettingsError(
                f"-h is short for --help here and takes nothing else; jiwer's -h/--hypothesis HYP is -i HYP{see}"
            )
        if tok == "--confidence" and "--confidence" in options and not _is_number(nxt):
            switch = (
                "--ci (with -n N for its --confidence-n)"
                if "--ci" in options
                else f"always on in `{path}`"
            )
            raise SettingsError(
                f"'--confidence' takes a level here (e.g. --confidence 0.95); sacrebleu's --confidence switch is {switch}{see}"
            )
        if (
            tok == "-c"
            and "-c" in options
            and (nxt is None or (nxt.startswith("-") and nxt != "-"))
        ):
            raise SettingsError(
                f"'-c' takes the candidate file here (bert-score's -c/--cand); jiwer's -c/--cer switch is -m cer{see}"
            )
        if (
            tok not in options
            and tok in PEER_EQUIVALENTS
            and not tok.startswith("--")
            and len(tok) > 2
        ):
            raise SettingsError(f"{tok!r}: {peer_equivalent(tok, command)}{see}")
        _check_peer_values(tok, nxt, command, see)
    if command == "score":
        _check_score_inputs(args, see)


def _check_peer_values(tok: str, nxt: str | None, command: str, see: str) -> None:
    """Refuse a peer flag whose value shows which peer meant it: comet-score's ``-s``/``-t``
    with a file, sacrebleu's ``-f text``."""
    if (
        command == "score"
        and tok in _COMET_FILES
        and nxt is not None
        and "=" not in nxt
        and os.path.isfile(nxt)
    ):
        raise SettingsError(f"{tok} {nxt}: {_COMET_FILES[tok]}{see}")
    if tok in ("-f", "--format") and nxt == "text":
        raise SettingsError(
            f"-f text: sacrebleu's text format is -f table here (the default; -f json for its JSON){see}"
        )


def _check_score_inputs(args: Sequence[str], see: str) -> None:
    """sacrebleu's ``sacrebleu REF < HYP``: a positional reference, the hypotheses on stdin."""
    if any(a in ("-h", "--help") or a.partition("=")[0] in PEER_EQUIVALENTS for a in args):
        return  # help, or a peer's flag click answers with its own line
    bare = args[1] if len(args) > 1 and args[0] == "score" else None
    given = any(a.partition("=")[0] in _INPUTS for a in args)
    if bare is not None and not bare.startswith("-"):
        raise SettingsError(
            f"{bare!r}: sacrebleu's positional reference is -r {bare} here, and the hypotheses -i FILE "
            f"(-i - reads them from stdin: evalab score -r {bare} -i - < HYP){see}"
        )
    with_ref = any(
        (a in ("-r", "--reference") and i + 1 < len(args)) or a.startswith("--reference=")
        for i, a in enumerate(args)
    )  # `-r` alone is click's "requires an argument"
    if not given and with_ref:
        raise SettingsError(
            f"Missing option '-i' / '--input': the hypotheses, -i FILE (-i - reads them from stdin, "
            f"where sacrebleu reads piped hypotheses by itself){see}"
        )


def bare_scores(results: Sequence[tuple[str, str, str]], short: dict[str, str]) -> str:
    """``score -b``: sacrebleu's bare score, one a line, for one system; with several systems
    each line starts with the system's table name (and the metric, with several), a tab
    between, so no number is left without its system."""
    systems = list(dict.fromkeys(s for s, _, _ in results))
    metrics = list(dict.fromkeys(m for _, m, _ in results))
    if len(systems) < 2:
        return "".join(value + "\n" for _, _, value in results)
    return "".join(
        "\t".join([short.get(s, s), *([m] if len(metrics) > 1 else []), value]) + "\n"
        for s, m, value in results
    )


def _is_number(token: str | None) -> bool:
    if token is None:
        return False
    try:
        float(token)
    except ValueError:
        return False
    return True


def peer_equivalent(option: str, command: str) -> str | None:
    """What a peer's ``option`` is spelt here, or None when it is not a known peer option."""
    message = PEER_EQUIVALENTS.get(option)
    return None if message is None else message.format(command=command)


def relevant_suggestions(option: str, possibilities: Sequence[str]) -> list[str]:
    """The options close to the unknown ``option`` (click offers any loose match otherwise:
    ``--paired-bs`` would get "Did you mean --seed?")."""
    import difflib  # only an unknown option needs it

    bare = option.lstrip("-")
    by_bare = {p.lstrip("-"): p for p in possibilities}
    return [by_bare[m] for m in difflib.get_close_matches(bare, list(by_bare), n=3, cutoff=0.75)]
