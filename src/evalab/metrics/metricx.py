"""MetricX-23 and MetricX-24 (Juraska et al. 2023, 2024) from a local checkpoint, computed
without Google's code and with the numbers of its ``predict.py`` (checked by parity tests).

``model`` is a checkpoint folder (``config.json`` + weights, as ``google/metricx-*`` ship
it) or its name in the local Hugging Face cache; ``tokenizer`` the mT5 tokenizer it reads
(``google/mt5-xl`` and the like; default: the checkpoint folder, where it has one). Nothing
is fetched. The score is an error score in [0, 25]: **lower is better**.

What the model reads (``mode``): MetricX-24 is hybrid: ``hybrid`` reads source, candidate
and reference; ``ref`` the candidate and reference (the source empty, as Google's README
says for missing sources); ``qe`` source and candidate (``predict.py --qe``). Its default,
``auto``, reads what it is given: both sides (``hybrid``), the source alone (``qe``, so no
reference is needed) or the reference alone (``ref``); the signature names the mode read.
A MetricX-23 checkpoint is either reference-based (``ref``: candidate and reference) or
quality estimation (``qe``: candidate and source). Sources are bound by
:meth:`MetricX.with_sources` (the CLI: ``--source``).

Per-segment stats rows are ``(score, count=1)``: the corpus score is the mean of the
segment scores, so rows add up across shards and resamples.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evalab.errors import InputError, Part, Setting, SettingsError
from evalab.metrics.base import (
    REFERENCES,
    SOURCE,
    Metric,
    MetricSettings,
    Refs,
    check_model_run,
    check_references,
    require_checkpoint,
    setting,
)
from evalab.metrics.comet import EITHER_SIDE, Comet, _rows
from evalab.metrics.stats_value import NRefs, Stats
from evalab.models.hf_encoder import _fingerprint_dir
from evalab.models.hub import model_label, resolve_model
from evalab.models.metricx_model import MetricXModel, ModelFiles, input_text, read_model_files

__all__ = ["MetricX", "MetricXSettings"]

#: the longest input (tokens) each version was trained with: its README's command lines
MAX_INPUT_LENGTH = {23: 1024, 24: 1536}
#: the sides each mode reads besides the candidate
MODE_SIDES = {"hybrid": ("src", "ref"), "ref": ("ref",), "qe": ("src",)}


def _or_mode(other: str | None) -> tuple[Part, ...]:
    """A refusal's other way out: the ``mode`` that does without the missing input."""
    return (", or ", Setting("metricx.mode"), f"={other}") if other else ()


_MODEL_HELP = "MetricX checkpoint (config.json + weights): a folder or a name in the HF cache"
_TOKENIZER_HELP = "mT5 tokenizer (google/mt5-xl, ...); default: the checkpoint folder"
_VERSION_IN_NAME = re.compile(r"metricx-(23|24)", re.IGNORECASE)


@dataclass(frozen=True)
class MetricXSettings(MetricSettings):
    """Settings of :class:`MetricX`."""

    version: int | None = setting(
        None, "23 or 24 (default: from the checkpoint's name, google/metricx-23-* or -24-*)"
    )
    mode: str = setting(
        "auto",
        "inputs: hybrid (source + reference), ref (reference), qe (source); auto: MetricX-24 "
        "what is given (both: hybrid), MetricX-23 qe for a -qe- checkpoint, else ref",
        choices=("auto", "hybrid", "ref", "qe"),
    )
    #: both read from a folder, or a name in the local Hugging Face cache (never downloaded)
    model: str | None = setting(None, _MODEL_HELP, path=True)
    tokenizer: str | None = setting(None, _TOKENIZER_HELP, path=True)
    max_input_length: int | None = setting(
        None, "input tokens kept (truncation); default 1536 (MetricX-24), 1024 (MetricX-23)"
    )
    batch_size: int = setting(16, "inputs per forward pass (sorted by length)")
    device: str = setting("cpu", "torch device: cpu, cuda or cuda:N")
    progress: bool = setting(True, "progress bar on stderr while scoring (only on a terminal)")

    def validate(self) -> None:
        super().validate()
        require_checkpoint(
            "metricx",
            self.model,
            "a MetricX checkpoint folder, or google/metricx-24-hybrid-xl-v2p6 in the local "
            "Hugging Face cache",
        )
        if self.version not in (None, 23, 24):
            raise SettingsError(f"metricx version must be 23 or 24, got {self.version}")
        if self.max_input_length is not None and self.max_input_length < 2:
            raise SettingsError(
                f"metricx max_input_length must be at least 2, got {self.max_input_length}"
            )
        check_model_run("metricx", self.batch_size, self.device)


class MetricX(Metric):
    """MetricX segment scores (an error score, lower is better); the corpus score is their mean."""

    name = "metricx"
    settings_class = MetricXSettings
    #: an error score in [0, 25]; a learned metric, so a hypothesis may score better
    #: against another reference than against itself; one reference per segment
    higher_is_better, bounds, self_score_is_best = False, (0.0, 25.0), False
    max_reference_streams: ClassVar[int] = 1
    #: torch runs without the GIL; the sources bound by with_sources() cover the whole
    #: corpus, not one shard
    releases_gil, parallel_safe = True, False
    #: no padding, so a row is the same in any call on a CPU (observed); declared as for
    #: COMET, since another kernel (a GPU) may round a batch otherwise
    row_tolerance = 1e-5
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        # paths: the contract test builds them; tests/metrics/test_metricx.py checks the
        # names and digests in the signature
        "model": (),
        "tokenizer": (),
        # the tiny checkpoint's name says no version: the fixture sets it
        "version": (),
        # auto reads both sides on the fixture's MetricX-24: hybrid (the same signature by design)
        "mode": ("ref", "qe"),
        # short enough that the contract's sentences reach it
        "max_input_length": (8,),
        "device": (),
    }
    inert_settings: ClassVar[Mapping[str, str]] = {
        "progress": "a progress bar on stderr: changes neither the rows nor what they mean",
        "batch_size": "inputs per forward pass: the rows move within row_tolerance only",
    }
    settings: MetricXSettings

    def __init__(self, settings: MetricXSettings | None = None, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        # cheap checks first, so a bad path fails before any input is read
        s = self.settings
        tokenizer = None if s.tokenizer is None else Path(resolve_model(s.tokenizer))
        self.files: ModelFiles = read_model_files(Path(resolve_model(str(s.model))), tokenizer)
        self.version = s.version or _version_of(self.files.folder)
        self.mode = _mode_of(s.mode, self.version, self.files.folder)
        #: MetricX-24's ``auto``: the mode follows the sides given (:meth:`mode_read`)
        self.adapts = s.mode == "auto" and self.version == 24
        self.max_input_length = s.max_input_length or MAX_INPUT_LENGTH[self.version]
        self.uses_references = "ref" in MODE_SIDES[self.mode]
        self.needs_references = self.uses_references and not self.adapts
        #: the source segments bound by :meth:`with_sources` (``None``: none bound)
        self.sources: list[str] | None = None
        self._loaded: dict[str, MetricXModel] = {}  # shared by with_sources() copies

    def with_sources(self, sources: Sequence[str]) -> MetricX:
        """A copy of this metric that scores hypotheses against these source segments."""
        segments = None if isinstance(sources, str) else list(sources)
        if segments is None or any(not isinstance(s, str) for s in segments):
            raise InputError("metricx: sources must be a list of strings, one per segment")
        bound = copy.copy(self)
        bound.sources = segments
        return bound

    @property
    def uses_source(self) -> bool:
        """Whether this mode reads source segments (the CLI binds ``--source`` then)."""
        return "src" in MODE_SIDES[self.mode]

    @property
    def needs_source(self) -> bool:
        """Whether it cannot score without sources (``auto`` can, from a reference)."""
        return self.uses_source and not self.adapts

    def mode_read(self, has_source: bool, has_reference: bool) -> str:
        """The mode these inputs are read in: the one set, or what ``auto`` makes of the sides
        given (MetricX-24: both ``hybrid``, the source ``qe``, the reference ``ref``)."""
        if not self.adapts or has_source == has_reference:
            return self.mode
        return "qe" if has_source else "ref"

    def check_inputs(
        self, has_source: bool, has_reference: bool, *, unread_source_ok: bool = False
    ) -> None:
        """Refuse, naming the option, inputs this mode cannot score from."""
        if self.adapts and not (has_source or has_reference):
            raise SettingsError(
                f"metricx (MetricX-{self.version}, mode auto) reads the source segments, a "
                "reference or both: pass ",
                *EITHER_SIDE,
            )
        if self.adapts:
            return
        what = f"metricx (MetricX-{self.version}, mode {self.mode})"
        if self.uses_source and not has_source:
            other = self._other_mode("ref")
            raise SettingsError(
                f"{what} reads the source segments: pass ", SOURCE, " SRC", *_or_mode(other)
            )
        if has_source and not self.uses_source and not unread_source_ok:
            other = self._other_mode("hybrid")
            raise SettingsError(f"{what} reads no source: drop ", SOURCE, *_or_mode(other))
        if self.uses_references and not has_reference:
            other = self._other_mode("qe")
            raise SettingsError(
                f"{what} reads a reference: pass ", REFERENCES, " REF", *_or_mode(other)
            )

    def _other_mode(self, mode: str) -> str | None:
        """``mode``, the MetricX-24 mode that would do without the missing input (None for
        MetricX-23, whose checkpoints each have one mode)."""
        return mode if self.version == 24 else None

    def model(self) -> MetricXModel:
        """The loaded :class:`~evalab.models.metricx_model.MetricXModel` (loaded on first use)."""
        if "model" not in self._loaded:
            from evalab.errors import require

            torch = require("torch", what="MetricX", extra="metricx")
            if self.settings.device.startswith("cuda") and not torch.cuda.is_available():
                raise SettingsError(
                    f"metricx device {self.settings.device!r} requested but CUDA is not available; use device=cpu"
                )
            self._loaded["model"] = MetricXModel(self.files, self.settings.device)
        return self._loaded["model"]

    # -- the contract: rows (score, count=1) as COMET's: the same mean and components ------
    stat_names = Comet.stat_names
    stats = Comet.stats
    _segment_stats = Comet._segment_stats
    scores_from_sums = Comet.scores_from_sums
    _score_components = Comet._score_components

    def stats_many(self, systems: Sequence[Sequence[str]], references: Refs) -> list[Stats]:
        checked = [self._check(hyps, references) for hyps in systems]
        if not checked:
            return []
        refs = checked[0][1]
        nrefs = len(refs)
        texts = [self.input_texts(hyps, refs) for hyps, _ in checked]
        flat = [t for system in texts for t in system]
        if not flat:
            return [self.make_stats(np.zeros((0, 2)), nrefs) for _ in checked]
        s = self.settings
        scores = self.model().scores(flat, self.max_input_length, s.batch_size, s.progress)
        edges = np.cumsum([0, *(len(system) for system in texts)])
        return [self.make_stats(_rows(scores[a:b]), nrefs) for a, b in itertools.pairwise(edges)]

    def input_texts(self, hypotheses: Sequence[str], references: Refs) -> list[str]:
        """The text the model reads for each segment (Google's ``predict.py`` layout)."""
        sides = MODE_SIDES[self.mode_read(self.sources is not None, bool(references))]
        src = self.sources if "src" in sides else None
        ref = references[0] if "ref" in sides else None
        return [
            input_text(
                self.version,
                h,
                None if src is None else src[i],
                None if ref is None else ref[i],
            )
            for i, h in enumerate(hypotheses)
        ]

    def _check(
        self, hypotheses: Sequence[str], references: Refs
    ) -> tuple[list[str], list[list[Any]]]:
        hyps, refs = check_references(
            hypotheses, references, metric=self.name, optional=not self.needs_references
        )
        mode = self.mode_read(self.sources is not None, bool(refs))
        if self.adapts and self.sources is None and not refs:
            raise InputError(
                "metricx: MetricX-24 (mode auto) reads the source segments, a reference or both: "
                "give references or sources (Python: metric.with_sources(sources))"
            )
        if "ref" in MODE_SIDES[mode]:
            if len(refs) > self.max_reference_streams:
                raise InputError(
                    f"metricx: {len(refs)} reference streams given; MetricX reads one reference per segment"
                )
            if any(r is None for r in refs[0]):
                raise InputError(
                    f"metricx: a segment has no reference (None); mode {mode} reads one per segment"
                )
        if "src" in MODE_SIDES[mode] and self.sources is None:
            raise InputError(
                f"metricx: mode {mode} reads the source segments; pass ",
                SOURCE,
                " SRC (Python: metric.with_sources(sources))",
            )
        if self.uses_source and self.sources is not None and len(self.sources) != len(hyps):
            raise InputError(
                f"metricx: {len(hyps)} hypotheses but {len(self.sources)} source segments"
            )
        return hyps, refs

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        files = self.files
        mode = self.mode_read(self.sources is not None, nrefs != 0)
        return [
            ("nrefs", str(nrefs) if "ref" in MODE_SIDES[mode] else "unused"),
            ("src", "yes" if "src" in MODE_SIDES[mode] else "no"),
            ("model", f"{model_label(files.folder)}@{_fingerprint_dir(files.folder)}"),
            ("tok", f"{model_label(files.tokenizer)}@{_fingerprint_dir(files.tokenizer)}"),
            ("metricx", str(self.version)),
            ("mode", mode),
            ("maxlen", str(self.max_input_length)),
            ("device", self.settings.device),
        ]


def _version_of(folder: Path) -> int:
    """23 or 24 from the checkpoint's name (``google/metricx-24-hybrid-xl-v2p6``)."""
    found = _VERSION_IN_NAME.search(f"{folder} {model_label(folder)}")
    if found is None:
        raise SettingsError(
            f"{folder}: its name does not say which MetricX it is; pass ",
            Setting("metricx.version"),
            "=24 (or 23)",
        )
    return int(found.group(1))


def _mode_of(mode: str, version: int, folder: Path) -> str:
    """The mode ``auto`` stands for, checked against the version."""
    qe_checkpoint = "-qe" in f"{folder.name} {model_label(folder)}".lower()
    if mode == "auto":
        return "hybrid" if version == 24 else ("qe" if qe_checkpoint else "ref")
    if version == 23 and mode == "hybrid":
        raise SettingsError(
            "metricx mode hybrid is MetricX-24's; a MetricX-23 checkpoint reads a reference "
            "(mode ref) or, a -qe- one, a source (mode qe)"
        )
    return mode
