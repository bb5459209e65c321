"""Warnings, once per run, when the text and a metric's tokenizer or encoder do not fit.

BLEU's 13a tokenizer does not split Chinese, Japanese or Korean into words (Chinese WMT22
output scores 19.7 under 13a and 48.8 under ``zh``, sacrebleu's choice for ``-l en-zh``);
the shipped MiniLM encoder was trained on English only. Neither is refused (a user may
mean it), both are said.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from evalab.metrics.base import Metric
from evalab.text.scripts import english_word_share, script_share

__all__ = ["warn_encoder_misfit", "warn_tokenizer_misfit"]

#: BLEU tokenizers that keep a run of CJK characters as one token
_NO_CJK_SPLIT = ("13a", "intl", "none")

#: the tokenizer sacrebleu picks for each CJK target language (``-l SRC-TGT``)
CJK_TOKENIZERS = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}

#: below this share of frequent English function words a text is taken for non-English
ENGLISH_MIN_SHARE = 0.15

#: multilingual encoders ``--lang`` looks for in the local cache and the warning points at
#: (bert-score's default for other languages first), under their hub names old and new
MULTILINGUAL_ENCODERS = (
    "bert-base-multilingual-cased",
    "google-bert/bert-base-multilingual-cased",
    "xlm-roberta-large",
    "FacebookAI/xlm-roberta-large",
)

_LANGUAGES = {"zh": "Chinese", "ja": "Japanese", "ko": "Korean"}


def warn_tokenizer_misfit(
    metrics: Mapping[str, Metric],
    refs: Sequence[Sequence[str | None]],
    *,
    langpair_option: bool = False,
) -> None:
    """Warn when BLEU tokenizes CJK references with a tokenizer that does not split them.

    ``langpair_option``: the command has sacrebleu's ``-l``/``-tok`` (``evalab score``).
    """
    bleu = metrics.get("bleu")
    tokenize = getattr(getattr(bleu, "settings", None), "tokenize", None)
    if bleu is None or tokenize not in _NO_CJK_SPLIT or not refs:
        return
    share = script_share(refs[0])
    language = share.dominant_cjk()
    if language is None:
        return
    fit = CJK_TOKENIZERS[language]
    how = f"-l SRC-{language} or -tok {fit}" if langpair_option else f"--set bleu.tokenize={fit}"
    warnings.warn(
        f"bleu: the references are {_LANGUAGES[language]} ({share.cjk_fraction():.0%} of letters) but "
        f"the tokenizer is {tokenize}, which leaves runs of such characters as one word; "
        f"pass {how} (sacrebleu's choice for {_LANGUAGES[language]})",
        stacklevel=2,
    )


def warn_encoder_misfit(metric: Metric, refs: Sequence[Sequence[str | None]], remedy: str) -> None:
    """Warn when the shipped English-only encoder embeds references that are not English.

    ``remedy`` is what the command offers instead (``--model FOLDER``).
    """
    settings = getattr(metric, "settings", None)
    if getattr(settings, "model", "") is not None or not refs:
        return  # a model the user chose is the user's call
    if english_word_share(refs[0]) >= ENGLISH_MIN_SHARE:
        return
    warnings.warn(
        f"{metric.name}: the references do not read as English but the default encoder "
        f"(all-MiniLM-L6-v2) was trained on English only; {remedy} with a multilingual one "
        f"(e.g. {MULTILINGUAL_ENCODERS[0]} or {MULTILINGUAL_ENCODERS[2]})",
        stacklevel=2,
    )
