"""The Metric contract shared by every metric in evalab.

Every corpus metric is split in two steps (see DESIGN.md):

* :meth:`Metric.stats` turns ``(hypotheses, references)`` into a :class:`Stats` value:
  per-segment sufficient statistics (float64 rows ``[n_segments, k]`` whose columns are
  named by :attr:`Metric.stat_names`) together with the number of references, the
  signature they were computed under and whether they are ``additive``. Additive rows
  (every metric but IDF-weighted BERTScore) combine by concatenation: the corpus
  statistics are the column sums, so a shard's rows can be summed with another shard's,
  and a bootstrap resample is just a weighted sum of rows.
* :meth:`Metric.scores_from_sums` maps summed statistics (shape ``[..., k]``) to the
  metric's score on its conventional scale, vectorised over leading axes so thousands of
  resamples are scored in one call; it is the only function that makes the number.
  :meth:`Metric.aggregate` builds the full :class:`Score` from a :class:`Stats` value:
  that number, the components of :meth:`Metric._score_components` (precision/recall...)
  and a signature that comes from the value, never from an earlier call.

Metrics whose corpus score is a mean of segment scores (ROUGE, EM, F1, BERTScore) store
the per-segment values plus a count column, so they obey the same additive contract.

References use the sacrebleu layout: a list of *reference streams*, each stream as long
as the hypotheses (``references[j][i]`` is reference ``j`` of segment ``i``).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias, TypeGuard

import numpy as np

from evalab import numbers
from evalab._version import __version__
from evalab.errors import InputError, Part, Setting, SettingsError
from evalab.metrics.missing_refs import (
    check_some_reference,
    has_missing,
    reference_count,
    rows_with_missing,
)
from evalab.metrics.stats_value import NRefs, Stats
from evalab.models.hub import resolve_model_settings

__all__ = [
    "Metric",
    "MetricSettings",
    "PairTooLarge",
    "PairWork",
    "PeerName",
    "Score",
    "Stats",
    "check_model_run",
    "check_references",
    "empty_corpus_error",
    "reference_digest",
    "require_checkpoint",
    "setting",
]


def setting(
    default: Any, help: str, choices: Sequence[Any] | None = None, *, path: bool = False
) -> Any:
    """Declare a metric setting: a dataclass field with help text and optional choices.

    ``path``: the value names a file or folder the metric reads (a model, a baseline), so
    no command may write its output there (:meth:`MetricSettings.read_paths`).
    """
    return field(
        default=default,
        metadata={"help": help, "choices": tuple(choices) if choices else None, "path": path},
    )


@dataclass(frozen=True)
class PeerName:
    """A peer's name for a setting: ``peer`` (who spells it so) calls ``setting`` by
    another name; ``inverted``: the peer's ``True`` is this setting's ``False`` (sacrebleu's
    TER ``case_sensitive=True`` is ``lowercase=False``)."""

    setting: str
    peer: str
    inverted: bool = False


@dataclass(frozen=True)
class MetricSettings:
    """Base class of every metric's frozen settings dataclass.

    One idea has one name in every metric (``tokenize``, ``lowercase``,
    ``remove_punctuation``); :attr:`peer_names` accepts a peer's spelling of it where a user
    coming from that peer types it (``Metric(**kw)``, ``--set``).
    """

    #: a peer's spelling -> the setting it means (not fields: they are never stored)
    peer_names: ClassVar[Mapping[str, PeerName]] = {}

    @classmethod
    def setting_names(cls) -> set[str]:
        """The names this class accepts: its settings and their peer spellings."""
        return {f.name for f in dataclasses.fields(cls)} | set(cls.peer_names)

    @classmethod
    def from_peer_names(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` with every peer spelling replaced by the setting it means."""
        out = {k: v for k, v in values.items() if k not in cls.peer_names}
        for key, value in values.items():
            alias = cls.peer_names.get(key)
            if alias is None:
                continue
            if alias.setting in values:
                raise SettingsError(
                    f"setting {alias.setting!r} is given twice: as {alias.setting!r} and as "
                    f"{key!r} ({alias.peer}'s name for it); give it once"
                )
            if alias.inverted and not isinstance(value, bool):
                raise SettingsError(f"setting {key!r}: expected true or false, got {value!r}")
            out[alias.setting] = (not value) if alias.inverted else value
        return out

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """Name, type, default, choices and help of every setting (for docs and the CLI)."""
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            out.append(
                {
                    "name": f.name,
                    "type": _type_name(hints[f.name]),
                    "default": f.default,
                    "choices": f.metadata.get("choices"),
                    "help": f.metadata.get("help", ""),
                }
            )
        return out

    @classmethod
    def parse_value(cls, name: str, raw: str) -> Any:
        """Convert a command-line string to the type of setting ``name``."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        alias = cls.peer_names.get(name)
        if name not in fields and alias is None:
            raise SettingsError(
                f"unknown setting {name!r}; known settings: {', '.join(sorted(fields)) or '(none)'}"
            )
        hint = typing.get_type_hints(cls)[alias.setting if alias else name]
        return _coerce(name, raw, hint)

    def read_paths(self) -> list[tuple[str, str]]:
        """``(setting, path)`` of every file or folder these settings make the metric read."""
        return [
            (f.name, str(getattr(self, f.name)))
            for f in dataclasses.fields(self)
            if f.metadata.get("path") and getattr(self, f.name) is not None
        ]

    def validate(self) -> None:
        """Check choices; subclasses extend this with cross-field checks."""
        for f in dataclasses.fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value not in choices:
                raise SettingsError(
                    f"invalid value {value!r} for setting {f.name!r}; expected one of "
                    + ", ".join(repr(c) for c in choices)
                )


def _type_name(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")


def _coerce(name: str, raw: str, hint: Any) -> Any:
    """Parse ``raw`` as ``hint`` (bool, int, float, str, Optional[...], tuple[int, ...])."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if raw.lower() in ("none", "null", ""):
            return None
        return _coerce(name, raw, args[0])
    if origin is tuple:
        inner = typing.get_args(hint)[0]
        return tuple(_coerce(name, part, inner) for part in raw.split(",") if part)
    try:
        if hint is bool:
            low = raw.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if hint is int:
            return numbers.parse_int(raw)
        if hint is float:
            return numbers.parse_float(raw)
        if hint is str:
            return raw
    except ValueError as exc:
        why = f": {numbers.REASONS[exc.reason]}" if isinstance(exc, numbers.NumberError) else ""
        raise SettingsError(
            f"setting {name!r}: cannot read {raw!r} as {_type_name(hint)}{why}"
        ) from None
    return raw


@dataclass(frozen=True)
class Score:
    """A metric value with the signature that produced it and its components.

    ``score`` is on the metric's conventional scale (``scale`` is 100 for BLEU/chrF, 1
    otherwise). Components (``precision``, ``recall``, ``fmeasure``, BLEU's
    ``precisions``, ``bp``, ``sys_len``...) are readable as attributes.
    """

    metric: str
    score: float
    signature: str
    scale: float = 1.0
    higher_is_better: bool = True
    components: Mapping[str, Any] = field(default_factory=dict)
    verbose: str = ""

    def __getattr__(self, name: str) -> Any:
        comps = self.__dict__.get("components", {})
        if name in comps:
            return comps[name]
        raise AttributeError(
            f"{type(self).__name__} of {self.__dict__.get('metric')!r} has no component {name!r}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: metric, score, scale, signature, components, verbose line."""
        return {
            "metric": self.metric,
            "score": float(self.score),
            "scale": self.scale,
            "higher_is_better": self.higher_is_better,
            "signature": self.signature,
            **{k: _jsonable(v) for k, v in self.components.items()},
            **({"verbose": self.verbose} if self.verbose else {}),
        }

    def __float__(self) -> float:
        """The score on the metric's own scale, as :attr:`score` (``float(bleu) == 48.89``)."""
        return float(self.score)

    def __str__(self) -> str:
        text = f"{self.metric} = {self.score:.{2 if self.scale == 100 else 4}f}"
        return f"{text} {self.verbose}".rstrip()


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a typed component (e.g. COMET's error spans): its fields by name
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


#: reference streams, one reference per hypothesis in each; ``None`` is a missing reference
#: (sacrebleu's convention, :mod:`evalab.metrics.missing_refs`)
Refs: TypeAlias = Sequence[Sequence[str | None]]
#: the inputs a refusal asks for, named as settings (the CLI: ``--source``, ``-r``)
SOURCE, REFERENCES = Setting("source"), Setting("references")


def nrefs_field(nrefs: NRefs) -> tuple[str, str]:
    """The signature's ``nrefs`` field (``?`` where the number of references is not known)."""
    return ("nrefs", str(nrefs) if nrefs is not None else "?")


def column_ratio(sums: np.ndarray, num: int, den: int) -> np.ndarray:
    """``sums[..., num] / sums[..., den]``: a mean of summed stats (NaN where nothing was
    counted, without a warning)."""
    sums = np.asarray(sums, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores: np.ndarray = sums[..., num] / sums[..., den]
    return scores


def complete(references: list[list[str | None]]) -> TypeGuard[list[list[str]]]:
    """Whether no reference is missing (every stream holds strings only)."""
    return not has_missing(references)


def require_checkpoint(metric: str, model: str | None, what: str) -> None:
    """A metric that is nothing without its trained checkpoint (``what`` says where one is)."""
    if model is None:
        raise SettingsError(
            f"{metric} needs a checkpoint: ", Setting(f"{metric}.model"), f"=PATH ({what})"
        )


def check_model_run(metric: str, batch_size: int | None, device: str) -> None:
    """The settings of a metric that runs a torch model: a ``batch_size`` of at least 1
    (``None``: the metric's own choice) and a torch device it runs on."""
    if batch_size is not None and batch_size < 1:
        raise SettingsError(f"{metric} batch_size must be at least 1, got {batch_size}")
    if re.fullmatch(r"cpu|cuda(:\d+)?", device) is None:
        raise SettingsError(f"{metric} device {device!r}: expected cpu, cuda or cuda:N")


def check_references(
    hypotheses: Sequence[str], references: Refs, *, metric: str, optional: bool = False
) -> tuple[list[str], list[list[str | None]]]:
    """Validate the sacrebleu layout and return plain lists (``optional``: no reference
    stream at all is no reference, for a metric that scores without one).

    ``references`` must be a list of reference *streams*, each as long as ``hypotheses``.
    The classic mistake (one list of references *per segment*) is detected and the error
    shows the expected layout, instead of silently scoring part of the corpus. A ``None``
    reference is a missing one (sacrebleu's convention); a segment with no reference at all
    is refused.
    """
    if isinstance(hypotheses, str):
        raise InputError(f"{metric}: hypotheses must be a list of strings, got one string")
    if isinstance(references, str):
        raise InputError(
            f"{metric}: references must be a list of reference streams, got one string"
        )
    hyps = _strings(hypotheses, metric)
    streams = list(references)
    if not streams and optional:
        return hyps, []
    if not streams:
        raise InputError(f"{metric}: no references given; expected references=[stream, ...]")
    if any(isinstance(stream, str) for stream in streams):
        raise InputError(
            f"{metric}: references must be a list of reference streams (lists of strings), "
            "e.g. references=[[ref1_seg1, ref1_seg2, ...]]; got a list of strings. "
            "For one reference per segment wrap it: [refs]"
        )
    refs = [list(stream) for stream in streams]
    n = len(hyps)
    lengths = [len(s) for s in refs]
    if any(length != n for length in lengths):
        per_segment = len(refs) == n and len(set(lengths)) <= 2
        hint = (
            " It looks like one list of references per segment was passed; transpose it to "
            "streams: references=[[seg1_ref1, seg2_ref1, ...], [seg1_ref2, seg2_ref2, ...]]"
            if per_segment
            else ""
        )
        raise InputError(
            f"{metric}: {n} hypotheses but reference streams of lengths {lengths}; every "
            f"stream must have one reference per hypothesis.{hint}"
        )
    if _any_missing(refs, metric):
        check_some_reference(refs, metric)
    return hyps, refs


def _strings(hypotheses: Sequence[str], metric: str) -> list[str]:
    """The hypotheses as a list, each checked to be a string."""
    hyps = list(hypotheses)
    # the type check runs on every scoring call: map(type) keeps it at C speed, and the
    # offending index is searched only when there is one
    if not set(map(type, hyps)) <= {str}:
        for i, h in enumerate(hyps):
            if not isinstance(h, str):  # str subclasses pass
                raise InputError(f"{metric}: hypothesis {i} is {type(h).__name__}, expected str")
    return hyps


def _any_missing(refs: list[list[str | None]], metric: str) -> bool:
    """Whether a reference is missing (``None``), every one checked to be a string or ``None``."""
    missing = False
    for j, stream in enumerate(refs):
        # None is a missing reference for that segment (see evalab.metrics.missing_refs);
        # the one pass over the types also says whether there is one
        types = set(map(type, stream))
        if types <= {str, type(None)}:
            missing = missing or type(None) in types
            continue
        for i, r in enumerate(stream):
            if not isinstance(r, str) and r is not None:  # str subclasses pass
                raise InputError(
                    f"{metric}: reference stream {j}, segment {i} is {type(r).__name__}, "
                    "expected str (or None for a missing reference)"
                )
        missing = missing or None in stream
    return missing


def reference_digest(references: Sequence[Sequence[str | None]]) -> str:
    """A short digest of reference streams (identifies corpus-level context built from them).

    A missing reference (``None``) has a digest of its own, distinct from an empty one: the
    segments with the same present references form the groups whose context is built alone.
    """
    import hashlib  # here: OpenSSL's start-up is not every command's (IDF BERTScore only)

    h = hashlib.blake2b(digest_size=12)
    for stream in references:
        for ref in stream:
            h.update(b"\x02" if ref is None else ref.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        h.update(b"\x01")
    return h.hexdigest()


@dataclass(frozen=True)
class PairWork:
    """A metric's bound on the work of one segment pair, in its own tokens.

    The work of a pair is ``hyp_tokens × ref_tokens`` cells (an edit-distance table, an
    LCS); beyond ``limit`` cells a pair is refused (``refuse``) or announced with a
    warning. ``unit`` names the tokens counted, ``table`` what fills the cells.
    """

    unit: str
    limit: int
    table: str = "edit distance"
    refuse: bool = True
    #: the setting that lifts the bound (it changes no number, only how long one may take)
    setting: str | None = None


class PairTooLarge(InputError):
    """A segment pair beyond its metric's :class:`PairWork` bound (``segment`` from 0)."""

    def __init__(
        self, metric: str, work: PairWork, segment: int, hyp_size: int, ref_size: int
    ) -> None:
        self.metric, self.work, self.segment = metric, work, segment
        self.hyp_size, self.ref_size = hyp_size, ref_size
        super().__init__(*self.at(f"{metric}: segment {segment + 1}"))

    def at(self, where: str) -> tuple[Part, ...]:
        """The refusal, with ``where`` naming the segment (``SYSTEM: line K`` in the CLI)."""
        return (
            f"{where} has {self.hyp_size:,} {self.work.unit} against a reference of {self.ref_size:,}: "
            f"{self.metric}'s {self.work.table} would fill {self.cells:,} cells (at most {self.work.limit:,}); "
            f"split the segment into sentences or leave {self.metric} out",
            *(
                ()
                if self.work.setting is None
                else (
                    ", or lift the bound with ",
                    Setting(f"{self.metric}.{self.work.setting}"),
                    "=N (same scores, more time)",
                )
            ),
        )

    @property
    def cells(self) -> int:
        return self.hyp_size * self.ref_size


def empty_corpus_error(metric: str) -> InputError:
    """The one error every scoring entry point raises for a corpus without segments."""
    return InputError(
        f"{metric}: empty corpus: no hypotheses to score; a corpus score needs at least one segment"
    )


class Metric(ABC):
    """Base class of every metric.

    Subclasses set ``name``, ``settings_class``, ``stat_names``, ``scale`` and
    ``higher_is_better`` and implement :meth:`_segment_stats`, :meth:`scores_from_sums`
    and :meth:`_signature_fields` (and :meth:`_score_components` for a :class:`Score` with
    components). A metric object holds its
    settings and caches only: no result depends on an earlier call. ``docs/metric-contract.md``
    is the guide for writing one; ``tests/metrics/test_contract.py`` checks every
    registered metric against the contract.
    """

    name: ClassVar[str]
    settings_class: ClassVar[type[MetricSettings]] = MetricSettings
    higher_is_better: ClassVar[bool] = True
    scale: ClassVar[float] = 1.0
    #: the interval every score lies in; ``None``: ``[0, scale]``
    bounds: ClassVar[tuple[float, float] | None] = None
    #: :meth:`stats` spends much of its time in compiled code that releases the GIL, so
    #: computing it on a thread of its own beside other metrics saves time. A capability
    #: of the class that declares it: a subclass that does not declare it again is False
    #: (:data:`OWN_FLAGS`), so a subclass computing in Python never claims it
    releases_gil: ClassVar[bool] = False
    #: class attributes that are not inherited: each class states them for itself
    OWN_FLAGS: ClassVar[tuple[str, ...]] = ("releases_gil",)
    #: for the contract test: values to try for a setting (instead of the derived ones:
    #: the other boolean, the other choices, an int plus one), e.g. ``{"tokenize": ("char",)}``
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {}
    #: settings that by design change neither the score nor the signature (how it is
    #: computed, not what: ``device``, ``batch_size``), each with the reason
    inert_settings: ClassVar[Mapping[str, str]] = {}
    #: how far (absolutely) a segment's row may move when it is computed in another call
    #: (a shard, another batch of systems); 0: bit for bit, as for every count metric
    row_tolerance: ClassVar[float] = 0.0
    #: whether a corpus scored against itself gets the best score (every overlap and
    #: similarity metric); False for a learned metric, which has no such guarantee
    self_score_is_best: ClassVar[bool] = True
    #: the most reference streams the metric reads; ``None``: any number
    max_reference_streams: ClassVar[int | None] = None
    #: whether the metric cannot score without references; ``False`` for quality
    #: estimation (a COMET QE checkpoint, MetricX ``qe``), which the CLI scores without ``-r``
    needs_references: bool = True
    #: the bound on one segment pair's work, checked by :meth:`check_pair_work` (which the
    #: metric calls on the tokens it counts) and by the CLI before any metric runs
    #: (:meth:`pair_sizes`); ``None``: the work grows linearly with the text
    pair_work: ClassVar[PairWork | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for flag in cls.OWN_FLAGS:
            if flag not in cls.__dict__:
                setattr(cls, flag, False)

    def __init__(self, settings: MetricSettings | None = None, **kwargs: Any) -> None:
        if settings is not None and kwargs:
            raise SettingsError(
                f"{self.name}: pass either a settings object or keyword settings, not both"
            )
        if settings is None:
            cls = self.settings_class
            unknown = sorted(set(kwargs) - cls.setting_names())
            if unknown:
                known = sorted(f.name for f in dataclasses.fields(cls))
                raise SettingsError(
                    f"{self.name}: unknown setting(s) {', '.join(unknown)}; known settings: "
                    f"{', '.join(known) or '(none)'}"
                )
            try:
                kwargs = cls.from_peer_names(kwargs)
            except SettingsError as exc:
                raise SettingsError(f"{self.name}: {exc}") from None
            settings = cls(**kwargs)
        # a hub model id (Org/name) becomes its folder in the local cache, for library and CLI
        settings = resolve_model_settings(settings)
        settings.validate()
        self.settings = settings

    # -- the contract -------------------------------------------------------------------
    @property
    @abstractmethod
    def stat_names(self) -> tuple[str, ...]:
        """Names of the columns of :meth:`stats` rows."""

    @abstractmethod
    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        """Per-segment statistics for already validated inputs: ``[n, k]`` float64."""

    @abstractmethod
    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        """Score(s) on the metric's scale from summed stats of shape ``[..., k]``.

        The one place a metric's number is made: :meth:`aggregate` and
        :meth:`segment_scores` give ``scores_from_sums(sums [k])``, the bootstrap the same
        function over thousands of resamples. Where a reference tool defines the number
        (sacrebleu), a single vector ``[k]`` goes through its scalar arithmetic.
        """

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        """Components (precision, BLEU's ``bp``...) and the verbose line of one summed stats
        vector ``[k]``, for the :class:`Score`; by default none."""
        return {}, ""

    @abstractmethod
    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        """Ordered ``(key, value)`` pairs of the signature, without the version."""

    @property
    def additive(self) -> bool:
        """Whether rows of different :meth:`stats` calls may be concatenated and summed.

        True for every metric whose rows depend on their own segment only. A metric with
        corpus-level context (IDF weights from the references) returns False and gives the
        context's identity in :meth:`_stats_context`; shards of it are then refused.
        """
        return True

    def _stats_context(self, hypotheses: list[str], references: Refs) -> str:
        """Identity of the corpus-level context the rows depend on ("" for additive metrics)."""
        return ""

    def sentence_settings(self) -> MetricSettings:
        """Settings of sentence-level scores (BLEU turns effective order on); default: the same."""
        return self.settings

    # -- the work of a segment pair -------------------------------------------------------
    def pair_sizes(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]
    ) -> tuple[list[int], list[int]]:
        """Tokens of each hypothesis and of its longest reference, as :attr:`pair_work` counts them.

        Only metrics that declare a refusing :attr:`pair_work` are asked (the CLI's check
        names the system and line); such a metric must count its own tokens here.
        """
        raise TypeError(
            f"metric {self.name!r} declares no pair_work, so it has no pair sizes to count"
        )

    def pair_bound(self) -> PairWork | None:
        """The bound in effect: :attr:`pair_work`, or its limit as this metric's settings set it."""
        return self.pair_work

    def check_pair_work(
        self, hyp_sizes: Sequence[int] | np.ndarray, ref_sizes: Sequence[int] | np.ndarray
    ) -> None:
        """Refuse (:class:`PairTooLarge`, the first pair beyond the bound) or warn about the
        pairs whose ``hyp × ref`` cells exceed the limit of :meth:`pair_bound`."""
        work = self.pair_bound()
        if work is None:
            return
        hyp_n, ref_n = np.asarray(hyp_sizes, dtype=np.int64), np.asarray(ref_sizes, dtype=np.int64)
        if hyp_n.shape != ref_n.shape:
            raise ValueError(f"{len(hyp_n)} hypothesis sizes for {len(ref_n)} reference sizes")
        over = np.flatnonzero(hyp_n * ref_n > work.limit).tolist()  # one C loop, not per pair
        if not over:
            return
        if work.refuse:
            k = over[0]
            raise PairTooLarge(self.name, work, k, int(hyp_sizes[k]), int(ref_sizes[k]))
        import warnings

        k = max(over, key=lambda i: int(hyp_sizes[i]) * int(ref_sizes[i]))
        warnings.warn(
            f"{self.name}: {len(over)} segment pair(s) are long (segment {k + 1}: {int(hyp_sizes[k]):,} x "
            f"{int(ref_sizes[k]):,} {work.unit}); their {work.table} fills {sum(int(hyp_sizes[i]) * int(ref_sizes[i]) for i in over):,} "
            f"cells in all (slow beyond {work.limit:,})",
            UserWarning,
            stacklevel=4,
        )

    # -- derived API ----------------------------------------------------------------------
    def make_stats(self, rows: Any, nrefs: NRefs, context: str = "") -> Stats:
        """Wrap rows computed under this metric's settings as a :class:`Stats` value."""
        return Stats(
            metric=self.name,
            stat_names=tuple(self.stat_names),
            rows=rows,
            nrefs=nrefs,
            signature=self.signature_for(nrefs),
            additive=self.additive,
            context=context,
        )

    def stats(self, hypotheses: Sequence[str], references: Refs) -> Stats:
        """Per-segment sufficient statistics as a :class:`Stats` value (rows ``[n, k]``)."""
        hyps, refs = check_references(hypotheses, references, metric=self.name)
        nrefs = reference_count(refs)
        if not hyps:
            return self.make_stats(np.zeros((0, len(self.stat_names))), nrefs)
        if complete(refs):
            rows = self._segment_stats(hyps, refs)
            return self.make_stats(rows, nrefs, self._stats_context(hyps, refs))
        # each group of segments with the same present references is scored on its own
        # (corpus-level context such as IDF is per group); the context digest of the
        # whole layout, None included, identifies those groups
        rows = rows_with_missing(self._segment_stats, hyps, refs, self.name)
        return self.make_stats(rows, nrefs, self._stats_context(hyps, refs))

    #: systems whose statistics :meth:`stats_many` computes in one batch (bounds memory)
    STATS_BATCH: ClassVar[int] = 16

    def stats_many(self, systems: Sequence[Sequence[str]], references: Refs) -> list[Stats]:
        """:meth:`stats` of several systems' outputs against the same references.

        The rows are exactly those of one :meth:`stats` call per system; metrics that can
        share reference-side work between systems (BLEU and chrF count each reference
        segment's n-grams once) do so in :meth:`_segment_stats_many`.
        """
        if isinstance(references, Iterator):
            references = [list(stream) for stream in references]  # read once, used per system
        checked = [
            check_references(hyps, references, metric=self.name, optional=not self.needs_references)
            for hyps in systems
        ]
        if not checked:
            return []
        refs = checked[0][1]
        if not refs or not complete(refs):  # no reference stream: a metric that reads none
            return [self.stats(hyps, refs) for hyps, _ in checked]
        return self._complete_stats_many([hyps for hyps, _ in checked], refs)

    def _complete_stats_many(self, systems: list[list[str]], refs: list[list[str]]) -> list[Stats]:
        """:meth:`stats_many` where no reference is missing, :attr:`STATS_BATCH` systems at a time."""
        if not refs[0]:
            return [
                self.make_stats(np.zeros((0, len(self.stat_names))), len(refs)) for _ in systems
            ]
        out: list[Stats] = []
        for start in range(0, len(systems), self.STATS_BATCH):
            batch = systems[start : start + self.STATS_BATCH]
            for hyps, rows in zip(batch, self._segment_stats_many(batch, refs), strict=True):
                out.append(self.make_stats(rows, len(refs), self._stats_context(hyps, refs)))
        return out

    def _segment_stats_many(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[np.ndarray]:
        """Rows of every system (validated, non-empty); by default one system at a time."""
        return [self._segment_stats(hyps, references) for hyps in systems]

    def check_stats(self, stats: Any, nrefs: NRefs = None) -> Stats:
        """``stats`` as a :class:`Stats` value of this metric, or a clear error.

        A :class:`Stats` must have been computed by a metric of this name under the same
        settings (equal signatures). A plain array (rows from older code or from numbers,
        e.g. :meth:`LossMetric.stats_from_nll`) is wrapped with the ``nrefs`` given.
        """
        if isinstance(stats, Stats):
            if stats.metric != self.name or stats.stat_names != tuple(self.stat_names):
                raise InputError(
                    f"{self.name}: these stats were computed by {stats.metric!r} "
                    f"({', '.join(stats.stat_names)}), not by this metric"
                )
            expected = self.signature_for(stats.nrefs)
            if stats.signature != expected:
                raise InputError(
                    f"{self.name}: these stats were computed under {stats.signature!r}, this metric "
                    f"scores under {expected!r}; use the metric that computed them"
                )
            if nrefs is not None and nrefs != stats.nrefs:
                raise InputError(
                    f"{self.name}: nrefs={nrefs} given for stats computed with {stats.nrefs} references"
                )
            return stats
        return self.make_stats(stats, nrefs)

    def aggregate(self, stats: Stats | np.ndarray, nrefs: NRefs = None) -> Score:
        """Corpus :class:`Score` from a :class:`Stats` value (its rows are summed).

        A plain ``[n, k]`` array is accepted too; its signature then names ``nrefs`` as
        given (``?`` when not given). Refused: no rows (an empty corpus) and non-finite rows.
        """
        value = self.check_stats(stats, nrefs)
        if len(value.rows) == 0:
            raise empty_corpus_error(self.name)
        value.check_finite()
        return self._score_of(value.sums(), value.nrefs)

    def _score_of(self, sums: np.ndarray, nrefs: NRefs) -> Score:
        """The :class:`Score` of one summed stats vector ``[k]``: :meth:`scores_from_sums`
        with the components of :meth:`_score_components`."""
        sums = np.asarray(sums, dtype=np.float64)
        if sums.shape != (len(self.stat_names),):
            raise InputError(
                f"{self.name}: summed stats must have {len(self.stat_names)} values "
                f"({', '.join(self.stat_names)}), got shape {sums.shape}"
            )
        components, verbose = self._score_components(sums)
        return Score(
            metric=self.name,
            score=float(self.scores_from_sums(sums)),
            signature=self.signature_for(nrefs),
            scale=self.scale,
            higher_is_better=self.higher_is_better,
            components=components,
            verbose=verbose,
        )

    def corpus_score(self, hypotheses: Sequence[str], references: Refs) -> Score:
        """Score a corpus: statistics are summed over segments, then scored once."""
        if not isinstance(hypotheses, str):
            hypotheses = list(hypotheses)
            if not hypotheses:
                raise empty_corpus_error(self.name)
        return self.aggregate(self.stats(hypotheses, references))

    # -- accumulation (torchmetrics-style, for training loops) -----------------------------
    def update(self, hypotheses: Sequence[str], references: Refs) -> None:
        """Add a batch (``references`` as for :meth:`corpus_score`: one stream per reference).

        :meth:`compute` then gives what :meth:`corpus_score` gives on all batches together.
        """
        hyps, refs = check_references(list(hypotheses), references, metric=self.name)
        batches = self._batches()
        if batches and len(refs) != len(batches[0][1]):
            raise InputError(
                f"{self.name}.update: this batch has {len(refs)} reference stream(s), the earlier ones "
                f"{len(batches[0][1])}; give every batch the same number (None for a missing reference)"
            )
        stats = self.stats(hyps, refs) if self.additive else None
        batches.append((hyps, refs, stats))

    def compute(self) -> Score:
        """The corpus :class:`Score` of every batch given to :meth:`update` since :meth:`reset`.

        Additive metrics sum the batches' statistics rows; the others (a corpus-level IDF)
        are scored once on all batches' segments.
        """
        batches = self._batches()
        if not sum(len(hyps) for hyps, _, _ in batches):
            raise empty_corpus_error(self.name)
        parts = [stats for _, _, stats in batches if stats is not None and not stats.context]
        if len(parts) == len(batches) and len({p.nrefs for p in parts}) == 1:
            rows = np.concatenate([p.rows for p in parts])
            return self.aggregate(self.make_stats(rows, parts[0].nrefs))
        hyps = [h for batch, _, _ in batches for h in batch]
        refs = [
            [r for _, streams, _ in batches for r in streams[k]] for k in range(len(batches[0][1]))
        ]
        return self.corpus_score(hyps, refs)

    def reset(self) -> None:
        """Forget the batches given to :meth:`update`."""
        self._batches().clear()

    def _batches(self) -> list[tuple[list[str], list[list[str | None]], Stats | None]]:
        # kept on the instance (metrics are built by subclasses that may not call __init__)
        batches: list[tuple[list[str], list[list[str | None]], Stats | None]]
        batches = self.__dict__.setdefault("_accumulated", [])
        return batches

    def sentence_metric(self) -> Metric:
        """The metric that scores single sentences (:meth:`sentence_settings`)."""
        settings = self.sentence_settings()
        return self if settings == self.settings else type(self)(settings)

    def sentence_score(self, hypothesis: str, references: Sequence[str]) -> Score:
        """Score one segment against its references (a flat list of strings)."""
        if not isinstance(hypothesis, str):
            raise InputError(
                f"{self.name}: hypothesis must be a str, got {type(hypothesis).__name__}"
            )
        if isinstance(references, str):
            raise InputError(f"{self.name}: references must be a list of strings, got one string")
        return self.segment_scores([hypothesis], [[r] for r in references])[0]

    def segment_scores(self, hypotheses: Sequence[str], references: Refs) -> list[Score]:
        """One sentence-level :class:`Score` per segment (corpus-level context such as IDF is kept)."""
        return self.segment_scores_of(self.stats(hypotheses, references))

    def segment_scores_of(self, stats: Stats) -> list[Score]:
        """One sentence-level :class:`Score` per row of ``stats`` (rows this metric computed):
        :meth:`segment_scores` without computing the rows again."""
        value = self.check_stats(stats)
        scorer = self.sentence_metric()
        return [scorer._score_of(row, value.nrefs) for row in value.rows]

    @property
    def signature(self) -> str:
        """The signature of the settings, for metrics whose signature has no ``nrefs``.

        Signatures that name the number of references are a function of it: ask
        :meth:`signature_for` (or read ``Stats.signature`` / ``Score.signature``).
        """
        if self.signature_for(1) != self.signature_for(2):
            raise InputError(
                f"{self.name}: the signature names the number of references; use "
                "signature_for(nrefs), or the signature of a Stats or Score value"
            )
        return self.signature_for(None)

    def signature_for(self, nrefs: NRefs) -> str:
        """Signature string for a given number of references (a pure function of both)."""
        fields = self._signature_fields(nrefs)
        fields.append(("version", __version__))
        # every signature starts with the registry name, as sacrebleu prints "BLEU|nrefs:1|...",
        # so a number and its signature can never be read as another metric's
        return "|".join([self.name, *(f"{k}:{v}" for k, v in fields)])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings})"


class SystemsMetric(Metric):
    """A metric whose rows come from one pass over many systems (:meth:`_segment_stats_many`),
    one system being the case of one."""

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        return self._segment_stats_many([hypotheses], references)[0]

    @abstractmethod
    def _segment_stats_many(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[np.ndarray]:
        """Rows of every system (validated, non-empty), all in one pass."""
