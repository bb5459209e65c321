"""Static word-vector tables (``word<TAB>v1<TAB>...``) as an :class:`Embedder`.

Whitespace tokenization, no context (seed 001's hand-made table); words outside the table
get a zero vector, i.e. cosine 0 with everything, or (``oov="exact"``) cosine 1 with the
same string. A table is read whole and checked line by line: a row with a missing,
non-numeric, NaN or infinite number is refused with its line number, because a NaN would
silently change every score that touches the word.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from evalab import numbers
from evalab.errors import InputError, SettingsError
from evalab.models.embedding_cache import DEFAULT_CACHE_BYTES, Embedder
from evalab.models.token_embeddings import TokenEmbeddings, unit_rows

__all__ = ["FUNCTION_TAGS", "StaticTableEmbedder", "read_table"]


#: tags in a table's last column that mark a function word (English, or seed 001's label)
FUNCTION_TAGS = frozenset({"function", "func", "stop", "hư từ", "hư_từ"})


class StaticTableEmbedder(Embedder):
    """Word vectors from a table file; whitespace tokenization; no context.

    Each non-blank line not starting with ``#`` is ``word<TAB>v1<TAB>...<TAB>vd`` with an
    optional last non-numeric column tagging the word (``function`` marks a function
    word). A word outside the table gets a zero vector, so its cosine with every token is
    0 (seed 001's convention: ``phi_thuyền`` against itself scores 0); with
    ``oov="exact"`` it instead gets cosine 1 with the identical string.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "t.tsv")
    >>> _ = open(p, "w", encoding="utf-8").write("car\\t1\\t0\\nauto\\t0.9\\t0.1\\n")
    >>> emb = StaticTableEmbedder(p)
    >>> round(float(emb.similarity(*emb.embed(["car", "auto"]))[0, 0]), 4)
    0.9939
    """

    kind = "static"

    def __init__(
        self, path: str | Path, *, oov: str = "zero", cache_bytes: int = DEFAULT_CACHE_BYTES
    ) -> None:
        super().__init__(cache_bytes)
        if oov not in ("zero", "exact"):
            raise SettingsError(f"oov must be 'zero' or 'exact', got {oov!r}")
        self.path = Path(path)
        self.oov = oov
        self.layer = 0
        self.name = self.path.name
        self._vectors, self._functions, digest = read_table(self.path)
        self.dim = next(iter(self._vectors.values())).shape[0]
        self.fingerprint = digest

    def _embed_uncached(self, sentences: list[str], *, progress: bool) -> list[TokenEmbeddings]:
        out = []
        zero = np.zeros(self.dim, dtype=np.float32)
        for s in sentences:
            words = tuple(s.split())
            known = np.array([w in self._vectors for w in words], dtype=bool)
            vecs = (
                np.stack([self._vectors.get(w, zero) for w in words])
                if words
                else np.zeros((0, self.dim), np.float32)
            )
            out.append(
                TokenEmbeddings(
                    tokens=words,
                    keys=words,
                    vectors=vecs,
                    content=np.ones(len(words), dtype=bool),
                    known=known,
                )
            )
        return out

    def similarity(self, hyp: TokenEmbeddings, ref: TokenEmbeddings) -> np.ndarray:
        sim = super().similarity(hyp, ref)
        if self.oov == "exact":
            # letter match as a fallback for words the table lacks
            for i in np.flatnonzero(~hyp.known):
                for j in np.flatnonzero(~ref.known):
                    if hyp.tokens[i] == ref.tokens[j]:
                        sim[i, j] = 1.0
        return sim

    def function_words(self) -> frozenset[str]:
        return self._functions


def read_table(path: Path) -> tuple[dict[str, np.ndarray], frozenset[str], str]:
    if not path.exists():
        raise InputError(f"{path}: no such embedding table")
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: embedding table is not valid UTF-8") from exc
    vectors: dict[str, np.ndarray] = {}
    functions: set[str] = set()
    first: tuple[int, int] | None = None  # (line number, dimension) of the first row
    for no, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        word, vec, tag = _parse_row(path, no, line)
        if first is None:
            first = (no, vec.size)
        elif vec.size != first[1]:
            raise InputError(
                f"{path}, line {no}: word {word!r} has {vec.size} numbers, expected {first[1]} like line {first[0]}"
            )
        vectors[word] = unit_rows(vec[None, :])[0].astype(np.float32)
        if tag is not None and tag.lower() in FUNCTION_TAGS:
            functions.add(word)
    if not vectors:
        raise InputError(f"{path}: embedding table has no rows")
    return vectors, frozenset(functions), hashlib.sha256(data).hexdigest()[:8]


def _parse_row(path: Path, no: int, line: str) -> tuple[str, np.ndarray, str | None]:
    """``(word, vector, tag or None)`` of table line ``no``; a row whose vector is not
    finite numbers (NaN, inf, or too large for a float) is refused, naming the line."""
    fields = line.split("\t") if "\t" in line else line.split()
    word, rest = fields[0].strip(), [f.strip() for f in fields[1:]]
    tag = None
    if rest and not _is_number(rest[-1]):
        tag = rest.pop()
    try:
        vec = np.array([numbers.parse_float(x) for x in rest], dtype=np.float64)
    except numbers.NumberError as exc:
        raise InputError(
            f"{path}, line {no}: word {word!r} has the entry {exc}; expected "
            "'word<TAB>number<TAB>number...' (optional last tag column)"
        ) from None
    if vec.size == 0:
        raise InputError(f"{path}, line {no}: word {word!r} has no vector")
    bad = np.flatnonzero(~np.isfinite(vec))
    if bad.size:
        raise InputError(
            f"{path}, line {no}: word {word!r} has the non-finite number {rest[bad[0]]!r} "
            f"(column {bad[0] + 2}); every vector entry must be a finite number"
        )
    with np.errstate(over="ignore"):
        if not np.isfinite(np.linalg.norm(vec)):
            raise InputError(
                f"{path}, line {no}: word {word!r} has numbers too large to normalise; scale the table down"
            )
    return word, vec, tag


def _is_number(text: str) -> bool:
    """Is ``text`` written as a number (the one grammar: ``1_0`` and ``nan`` are numbers
    gone wrong, not tags, so that they are refused rather than read as a word's tag)?"""
    try:
        numbers.parse_number(text)
    except numbers.NumberError as exc:
        return exc.reason != "syntax" or text.strip()[:1] in tuple("+-.0123456789")
    return True
