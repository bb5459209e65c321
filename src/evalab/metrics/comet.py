"""COMET (Rei et al., 2020) from a local unbabel-comet checkpoint, computed without
unbabel-comet and with the numbers of its ``predict`` (2.2.7; checked by parity tests).

``model`` is a checkpoint folder as unbabel-comet downloads it (``checkpoints/model.ckpt``
and ``hparams.yaml``); ``encoder`` a local folder with the config and tokenizer of the
encoder the checkpoint was trained on (its weights come from the checkpoint). Nothing is
fetched. Sources are an input of their own: :meth:`Comet.with_sources` binds them, and the
CLI does so from ``--source``.

Per-segment stats rows are ``(score, count=1)``: the corpus score is the mean of the
segment scores (unbabel's ``system_score``), so rows add up across shards and resamples.
Every distinct string of every side and system is embedded once per :meth:`stats_many`
call (COMET embeds source, hypothesis and reference separately before its estimator).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from evalab.errors import InputError, Part, Setting, SettingsError, require
from evalab.metrics.base import (
    REFERENCES,
    SOURCE,
    Metric,
    MetricSettings,
    Refs,
    Score,
    check_model_run,
    check_references,
    column_ratio,
    complete,
    require_checkpoint,
    setting,
)
from evalab.metrics.stats_value import NRefs, Stats
from evalab.models.comet_checkpoint import (
    UNIFIED_CLASSES,
    checkpoint_file,
    hparams_file,
    input_sides,
    read_checkpoint,
    read_class,
    read_hparams_yaml,
)
from evalab.models.hub import cached_snapshot, is_model_name, model_label

if TYPE_CHECKING:
    from evalab.models.comet_unified import UnifiedScores

__all__ = ["EITHER_SIDE", "Comet", "CometSettings", "ScoredSystem"]

#: what a model that reads a source, a reference or both asks for given neither (xCOMET,
#: MetricX-24's auto)
EITHER_SIDE: tuple[Part, ...] = (SOURCE, " SRC (quality estimation), ", REFERENCES, " REF or both")


@dataclass(frozen=True)
class CometSettings(MetricSettings):
    """Settings of :class:`Comet`."""

    model: str | None = setting(
        None,
        "COMET checkpoint folder (checkpoints/model.ckpt + hparams.yaml), as unbabel-comet downloads it",
        path=True,
    )
    encoder: str | None = setting(
        None,
        "local folder with the config and tokenizer of the checkpoint's encoder "
        "(default: the pretrained_model the checkpoint names, if that is a local folder)",
        path=True,
    )
    batch_size: int = setting(16, "sentences per forward pass (unbabel-comet's default is 16)")
    device: str = setting("cpu", "torch device: cpu, cuda or cuda:N")
    amp: bool = setting(
        False, "automatic mixed precision (float16) on cuda; off keeps the numbers identical"
    )
    progress: bool = setting(True, "progress bar on stderr while embedding (only on a terminal)")

    def read_paths(self) -> list[tuple[str, str]]:
        """The model, the encoder and, for a ``.ckpt`` file, the ``hparams.yaml`` it is read with."""
        paths = super().read_paths()
        if self.model is not None and Path(self.model).is_file():
            hparams = hparams_file(Path(self.model))
            paths += [("model", str(hparams))] if hparams is not None else []
        return paths

    def validate(self) -> None:
        super().validate()
        require_checkpoint("comet", self.model, "a COMET checkpoint folder")
        check_model_run("comet", self.batch_size, self.device)
        if self.amp and not self.device.startswith("cuda"):
            raise SettingsError(
                "comet amp=true needs device=cuda; on cpu the numbers are computed in float32"
            )


@dataclass(frozen=True)
class ScoredSystem:
    """One system's stats rows and its segment scores, computed in one run of the model."""

    stats: Stats
    #: one :class:`Score` per segment (with ``error_spans`` where the model tags words)
    segments: list[Score]


class Comet(Metric):
    """COMET segment scores from a local checkpoint; the corpus score is their mean."""

    name = "comet"
    settings_class = CometSettings
    releases_gil = True
    #: the sources bound by with_sources() cover the whole corpus, not one shard
    parallel_safe = False
    #: a regression head is unbounded: scores are not confined to [0, 1]
    bounds = (-math.inf, math.inf)
    #: a learned metric has no such guarantee: the estimator may rate a hypothesis higher
    #: against another reference than against itself
    self_score_is_best = False
    max_reference_streams: ClassVar[int] = 1
    #: float32 embeddings of padded batches: a segment's score moves by ~1e-6 with the other
    #: strings of its call (as in unbabel-comet)
    row_tolerance = 1e-5
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        # paths: the contract test builds them (DATA_VALUES); tests/metrics/test_comet.py
        # checks the model's name and hash and the encoder's name in the signature
        "model": (),
        "encoder": (),
        # any other value needs CUDA (refused without it); the signature names both
        "device": (),
        "amp": (),
    }
    inert_settings: ClassVar[Mapping[str, str]] = {
        "progress": "a progress bar on stderr: changes neither the rows nor what they mean",
    }
    settings: CometSettings

    def __init__(self, settings: CometSettings | None = None, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        # cheap checks first, so a bad path fails before any input is read
        ckpt = checkpoint_file(self.settings.model)  # type: ignore[arg-type]
        self.class_identifier = read_class(ckpt)
        self.uses_references = self.class_identifier == "regression_metric"
        #: CometKiwi / xCOMET: hypothesis, source and reference encoded as one sequence
        self.unified = self.class_identifier in UNIFIED_CLASSES
        #: the sides the checkpoint reads as ``hparams.yaml`` declares them (for the checks
        #: before any work; the loaded model's own hyper-parameters decide when scoring)
        self.input_sides = input_sides(self.class_identifier, read_hparams_yaml(ckpt))
        #: a reference-free or unified model reading a source (CometKiwi, xCOMET) needs none
        self.needs_references = "ref" in self.input_sides and (
            self.uses_references or not self.uses_source
        )
        if self.settings.encoder is not None and not Path(self.settings.encoder).is_dir():
            raise InputError(
                f"{self.settings.encoder}: comet.encoder is not a folder; pass the encoder's local folder"
            )
        self._ckpt = ckpt
        self._sources: list[str] | None = None
        self._loaded: dict[str, Any] = {}  # the torch model, shared by with_sources() copies

    def with_sources(self, sources: Sequence[str]) -> Comet:
        """A copy of this metric that scores hypotheses against these source segments."""
        if isinstance(sources, str) or not all(isinstance(s, str) for s in sources):
            raise InputError("comet: sources must be a list of strings, one per segment")
        bound = copy.copy(self)
        bound._sources = list(sources)
        return bound

    @property
    def uses_source(self) -> bool:
        """Whether the checkpoint reads source segments (the CLI binds ``--source`` then)."""
        return "src" in self.input_sides

    @property
    def needs_source(self) -> bool:
        """Whether it cannot score without them: a regression model, or a unified one whose
        inputs are the hypothesis and the source alone (CometKiwi)."""
        return self.uses_source and (not self.unified or "ref" not in self.input_sides)

    def check_inputs(
        self, has_source: bool, has_reference: bool, *, unread_source_ok: bool = False
    ) -> None:
        """Refuse, naming the command-line option, inputs this checkpoint cannot score from:
        no source where it needs one, a source it does not read (unless
        ``unread_source_ok``), no reference where it needs one."""
        reads = f"reads {'+'.join(self.input_sides)}"
        if self.needs_source and not has_source:
            raise SettingsError(
                f"comet reads the source segments (this {self.class_identifier} checkpoint "
                f"{reads}): pass ",
                SOURCE,
                " SRC (one segment a line)",
            )
        if has_source and not self.uses_source and not unread_source_ok:
            raise SettingsError(
                f"comet: this checkpoint ({self.class_identifier}) {reads} (its input_segments), "
                "no source: drop ",
                SOURCE,
            )
        if not has_reference and self.needs_references:
            raise SettingsError(
                f"comet: this checkpoint ({self.class_identifier}) {reads}: pass ",
                REFERENCES,
                " REF (the references, one a line)",
            )
        if not (has_reference or has_source) and self.unified:  # xCOMET: either, or both
            raise SettingsError(
                f"comet: this checkpoint ({self.class_identifier}) {reads}: pass ", *EITHER_SIDE
            )

    @property
    def sources(self) -> list[str] | None:
        """The source segments bound by :meth:`with_sources` (``None``: none bound)."""
        return self._sources

    # -- model --------------------------------------------------------------------------
    def model(self) -> Any:
        """The loaded :class:`~evalab.models.comet_model.CometModel` (loaded on first use)."""
        if "model" not in self._loaded:
            from evalab.models.comet_model import CometModel
            from evalab.models.comet_unified import UnifiedModel

            torch = require("torch", what="COMET", extra="semantic")
            if self.settings.device.startswith("cuda") and not torch.cuda.is_available():
                raise SettingsError(
                    f"comet device {self.settings.device!r} requested but CUDA is not available; use device=cpu"
                )
            info = read_checkpoint(self._ckpt)
            model_class = UnifiedModel if self.unified else CometModel
            self._loaded["model"] = model_class(
                info, self._encoder_dir(info.hparams), self.settings.device, self.settings.amp
            )
        return self._loaded["model"]

    def _encoder_dir(self, hparams: dict[str, Any]) -> Path:
        """The encoder folder: ``comet.encoder``, else the ``pretrained_model`` the checkpoint
        names: a relative path beside the checkpoint folder (``hparams.yaml``'s), then from
        the working directory (as unbabel-comet, through transformers, reads it), then a model
        id in the Hugging Face cache; one line saying what to pass otherwise."""
        if self.settings.encoder is not None:
            return Path(self.settings.encoder)
        named = str(hparams.get("pretrained_model", ""))
        if named and not Path(named).is_absolute() and (self._ckpt.parents[1] / named).is_dir():
            return self._ckpt.parents[1] / named
        if not Path(named).is_dir() and is_model_name(named):
            with contextlib.suppress(
                InputError
            ):  # not cached either: the message below says what to do
                return cached_snapshot(named)
        if not Path(named).is_dir():
            where = (
                ""
                if Path(named).is_absolute()
                else f" (looked in {self._ckpt.parents[1]} and the working directory)"
            )
            raise InputError(
                f"{self._ckpt}: its encoder {named!r} is not a local folder{where} and evalab never "
                "downloads; pass ",
                Setting("comet.encoder"),
                "=PATH (a folder with that encoder's config.json and tokenizer)",
            )
        return Path(named)

    # -- the contract -------------------------------------------------------------------
    @property
    def stat_names(self) -> tuple[str, ...]:
        return ("score", "count")

    def stats(self, hypotheses: Sequence[str], references: Refs) -> Stats:
        return self.stats_many([hypotheses], references)[0]

    def stats_many(self, systems: Sequence[Sequence[str]], references: Refs) -> list[Stats]:
        return [s.stats for s in self._scored(systems, references, segments=False)]

    def scored_many(self, systems: Sequence[Sequence[str]], references: Refs) -> list[ScoredSystem]:
        """Each system's stats and segment scores from one run of the model; a model that
        tags words (xCOMET) adds its ``error_spans`` to each segment's components."""
        return self._scored(systems, references, segments=True)

    def segment_scores(self, hypotheses: Sequence[str], references: Refs) -> list[Score]:
        """One :class:`Score` per segment; a model that tags words (xCOMET) adds its
        ``error_spans`` (text, severity, confidence, character start and end)."""
        return self.scored_many([hypotheses], references)[0].segments

    @property
    def tags_words(self) -> bool:
        """Whether the segment scores carry error spans (a unified model with a word-level
        head): more than the stats rows hold. Loads the model."""
        return self.unified and bool(self.model().tags_words)

    def _scored(
        self, systems: Sequence[Sequence[str]], references: Refs, segments: bool
    ) -> list[ScoredSystem]:
        checked = [self._check(hyps, references) for hyps in systems]
        if not checked:
            return []
        hyps_list = [h for h, _ in checked]
        refs = checked[0][1]
        if not hyps_list[0]:
            empty = self.make_stats(np.zeros((0, 2), dtype=np.float64), len(refs))
            return [ScoredSystem(empty, []) for _ in hyps_list]
        if complete(refs):
            read = refs
        elif self.uses_references or (self.unified and refs):
            raise InputError(
                "comet: a segment has no reference (None); this model reads one reference per segment"
            )
        else:
            read = []  # a reference-free model reads none
        if self.unified:
            runs = self._unified_scores(hyps_list, read)
        else:
            from evalab.models.comet_unified import UnifiedScores

            runs = [UnifiedScores(s, None) for s in self._regression_scores(hyps_list, read)]
        out = []
        for run in runs:
            value = self.make_stats(_rows(run.scores), len(refs))
            scores = self.segment_scores_of(value) if segments else []
            if segments and run.spans is not None:
                scores = [
                    dataclasses.replace(sc, components={**sc.components, "error_spans": sp})
                    for sc, sp in zip(scores, run.spans, strict=True)
                ]
            out.append(ScoredSystem(value, scores))
        return out

    def _check(
        self, hypotheses: Sequence[str], references: Refs
    ) -> tuple[list[str], list[list[str | None]]]:
        # a reference-free model needs no references; given ones are checked and ignored
        hyps, refs = check_references(
            hypotheses, references, metric=self.name, optional=not self.uses_references
        )
        if self.uses_references and len(refs) > self.max_reference_streams:
            raise InputError(
                f"comet: {len(refs)} reference streams given; COMET reads one reference per segment"
            )
        if self._sources is None and not self.unified:  # a unified model may read none
            raise InputError(
                "comet: the model reads the source segments; pass ",
                SOURCE,
                " SRC (Python: metric.with_sources(sources))",
            )
        if self._sources is not None and len(self._sources) != len(hyps):
            raise InputError(
                f"comet: {len(hyps)} hypotheses but {len(self._sources)} source segments"
            )
        return hyps, refs

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        return self.stats(hypotheses, references).rows

    def _regression_scores(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[np.ndarray]:
        """Segment scores of each system from a regression (or reference-free) model."""
        torch = require("torch", what="COMET", extra="semantic")
        model = self.model()
        src = self._sources or []
        ref = references[0] if self.uses_references else None
        strings = [*src, *(ref or []), *(h for hyps in systems for h in hyps)]
        emb = model.embed(strings, self.settings.batch_size, progress=self.settings.progress)

        def stack(xs: list[str]) -> Any:
            return torch.stack([emb[x] for x in xs])

        src_emb = stack(src)
        ref_emb = stack(ref) if ref is not None else None
        out = []
        for hyps in systems:
            out.append(np.asarray(model.estimate(stack(hyps), src_emb, ref_emb)))
        return out

    def _unified_scores(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[UnifiedScores]:
        """A unified model's :class:`~evalab.models.comet_unified.UnifiedScores` per system."""
        model = self.model()
        ref = references[0] if references else None
        if len(model.sides(self._sources is not None, ref is not None)) == 1:
            sides: dict[str, tuple[Part, ...]] = {
                "src": ("its source", Setting("source", aside="")),
                "ref": ("its reference", Setting("references", aside="")),
            }
            named = [sides[s] for s in model.segments[1:]]
            raise InputError(
                "comet: this checkpoint reads the hypothesis with ",
                *(p for k, side in enumerate(named) for p in ((" or ",) if k else ()) + side),
                f" (input_segments {', '.join(model.segments)}); pass one",
            )
        progress = self.settings.progress
        return list(model.score(systems, self._sources, ref, self.settings.batch_size, progress))

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        return column_ratio(sums, 0, 1)

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        return {"n_segments": int(sums[1])}, ""

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        if self.unified:
            return self._unified_fields(nrefs)
        hp_class = "regression" if self.uses_references else "referenceless"
        fields = [
            ("nrefs", str(nrefs) if self.uses_references else "unused"),
            ("src", "yes" if self._sources is not None else "no"),
            ("model", f"{checkpoint_name(self._ckpt)}@{self._hash()[:12]}"),
            ("class", hp_class),
            *self._model_fields(),
            ("batch", str(self.settings.batch_size)),
            ("device", self.settings.device),
            ("amp", "yes" if self.settings.amp else "no"),
        ]
        return fields

    def _unified_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        """A unified model's signature: the sides it read and its word-level head."""
        model = self.model()
        has_ref = isinstance(nrefs, int) and nrefs > 0
        sides = model.sides(self._sources is not None, has_ref)
        return [
            ("nrefs", str(nrefs) if "ref" in sides else "unused"),
            ("src", "yes" if "src" in sides else "no"),
            ("model", f"{checkpoint_name(self._ckpt)}@{self._hash()[:12]}"),
            ("class", "xcomet" if model.xcomet else "unified"),
            ("inputs", "+".join(sides)),
            *self._model_fields(),
            ("spans", "yes" if model.tags_words else "no"),
            ("batch", str(self.settings.batch_size)),
            ("device", self.settings.device),
            ("amp", "yes" if self.settings.amp else "no"),
        ]

    def _model_fields(self) -> list[tuple[str, str]]:
        model = self.model()
        hp = model.model_hparams(model.info)
        return [
            (
                "encoder",
                f"{hp.get('encoder_model')}:{encoder_name(Path(model.tokenizer.name_or_path))}",
            ),
            (
                "layer",
                str(hp.get("layer", "mix"))
                + (":norm" if hp.get("layer_norm") and hp.get("layer") == "mix" else ""),
            ),
            ("pool", str(hp.get("pool", "avg"))),
        ]

    def _hash(self) -> str:
        sha256: str = self.model().info.sha256
        return sha256


def _rows(scores: np.ndarray) -> np.ndarray:
    """Stats rows ``(score, count=1)`` of segment scores."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.column_stack([scores, np.ones_like(scores)])


def encoder_name(folder: Path) -> str:
    """The encoder folder's name (the shipped MiniLM under its model name)."""
    from evalab.models.hf_encoder import DEFAULT_MODEL_NAME, default_model_path

    try:
        if folder.resolve() == default_model_path().resolve():
            return DEFAULT_MODEL_NAME
    except Exception:  # the semantic extra is absent: the folder cannot be the shipped one
        pass
    return model_label(folder)


def checkpoint_name(ckpt: Path) -> str:
    """The model's name: ``Org/name`` inside a Hugging Face cache, else the folder name."""
    return model_label(ckpt.parents[1])
