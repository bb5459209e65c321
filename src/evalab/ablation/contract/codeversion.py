"""The code a run executes: a hash over the syntax trees of the modules the entry imports.

A stored run is only valid for the code that produced it, and that code is rarely the entry
file alone: ``entry.py`` imports ``model.py`` beside it. The modules are found statically,
by walking the ``import`` statements (absolute and relative) of the entry module and of
every local module it reaches, never by executing anything, so ``status`` and ``report``
derive the same version as ``run``. *Local* means a file under the study's folder, or
under the top-level package the study folder belongs to; third-party and standard-library
modules are not hashed (pin them through your environment).

Each file is hashed over its syntax tree (``ast``) with docstrings removed, so comments,
docstrings and formatting do not change the version; any change that can change behaviour
does. A file that does not parse is hashed over its bytes (the run will fail anyway). The
version also keeps the file -> hash map, so a newer version can say which files changed.
"""

from __future__ import annotations

import ast
import contextlib
import glob as globmod
import hashlib
import json
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_DOC_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class GitState:
    """The git commit of the study folder's repository and whether its tree was dirty."""

    commit: str
    dirty: bool


@dataclass(frozen=True)
class CodeVersion:
    """A code version: its id, the file -> syntax-tree hash map behind it, and git state."""

    version: str
    files: dict[str, str] = field(default_factory=dict)
    git: GitState | None = None
    pinned: bool = False  # ``code_version`` was written in the study file
    start: tuple[Path, ...] = ()  # the entry modules and command files the map starts from
    inputs: tuple[Path, ...] = ()  # the declared input files (``[study] inputs``)


def tree_hash(path: Path) -> str:
    """sha256 of a Python file's syntax tree without docstrings (bytes when it does not parse).

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); a, b = os.path.join(d, "a.py"), os.path.join(d, "b.py")
    >>> _ = open(a, "w").write('def f():\\n    "doc"\\n    return 1  # one\\n')
    >>> _ = open(b, "w").write("def f( ):\\n    return (1)\\n")
    >>> tree_hash(Path(a)) == tree_hash(Path(b))
    True
    """
    data = path.read_bytes()
    try:
        tree = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError):
        return hashlib.sha256(b"bytes:" + data).hexdigest()[:16]
    for node in ast.walk(tree):
        if isinstance(node, _DOC_OWNERS) and node.body and _is_docstring(node.body[0]):
            # a body may not be empty: a docstring-only function keeps a `pass`
            node.body = node.body[1:] or [ast.Pass()]
    dump = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(dump.encode("utf-8")).hexdigest()[:16]


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def search_roots(directory: Path) -> list[Path]:
    """Where local modules are looked up: the study folder, and the folder above the
    top-level package the study folder belongs to (when it is inside a package)."""
    roots = [directory]
    top = directory
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    if top != directory:
        roots.append(top)
    return roots


def _module_file(name: str, roots: list[Path]) -> list[Path]:
    """The files importing ``name`` executes: each package's ``__init__.py`` on the way, then
    the module. Empty when the module is not local."""
    parts = name.split(".")
    for root in roots:
        found: list[Path] = []
        folder = root
        for i, part in enumerate(parts):
            pkg, mod = folder / part / "__init__.py", folder / f"{part}.py"
            if pkg.is_file():
                found.append(pkg)
                folder = folder / part
            elif mod.is_file() and i == len(parts) - 1:
                found.append(mod)
            else:
                found = []
                break
        if found:
            return found
    return []


def _package_of(path: Path) -> str:
    """The dotted package a file belongs to (for its relative imports): the folders above
    it that hold an ``__init__.py``."""
    parts: list[str] = []
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts))


def _imported_names(tree: ast.AST, package: str) -> list[str]:
    """Dotted names a module imports; ``from m import x`` yields ``m`` and ``m.x`` (x may be
    a submodule). Relative imports are resolved against ``package``."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                keep = len(parts) - (node.level - 1)
                if keep < 0:
                    continue
                base = ".".join([*parts[:keep], *([base] if base else [])])
            if base:
                names.append(base)
            names.extend(
                f"{base}.{alias.name}" if base else alias.name
                for alias in node.names
                if alias.name != "*"
            )
    return names


def local_imports(start: list[Path], roots: list[Path]) -> list[Path]:
    """Every local file reachable from ``start`` through import statements (start included)."""
    seen: dict[Path, None] = {}
    stack = [p.resolve() for p in start]
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen[path] = None
        if path.suffix != ".py":
            continue
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, OSError):
            continue
        for name in _imported_names(tree, _package_of(path)):
            stack.extend(p.resolve() for p in _module_file(name, roots) if p.resolve() not in seen)
    return sorted(seen)


def command_files(command: str, directory: Path) -> list[Path]:
    """Files a command template names that exist relative to the study folder (its script)."""
    text = command.replace("{config}", "").replace("{seed}", "").replace("{out}", "")
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    return [directory / t for t in tokens if t and (directory / t).is_file()]


def git_state(directory: Path) -> GitState | None:
    """Commit and dirty flag of the repository holding ``directory`` (None outside git)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "-C", str(directory), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return GitState(commit=head.stdout.strip(), dirty=bool(status.stdout.strip()))


def _display_name(path: Path, roots: list[Path]) -> str:
    for root in roots:
        try:
            return path.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
    return str(path)


def derive_code_version(
    directory: Path,
    entry: str | None,
    command: str | None,
    module_files: list[str] | str | None,
    pinned: str | None = None,
    inputs: list[Path] | None = None,
    cache: DigestCache | None = None,
) -> CodeVersion:
    """The code version of a study: ``pinned`` when given, else a hash of the file map of
    ``module_files`` (the modules of the entry points: ``entry`` and ``evaluate``), the
    files the command names, and the declared ``inputs`` (data files the runs read)."""
    if isinstance(module_files, str):
        module_files = [module_files]
    start: list[Path] = [Path(f) for f in module_files or ()]
    if command:
        start.extend(command_files(command, directory))
    declared = tuple(inputs or ())
    files = code_files(directory, start, declared, cache or DigestCache())
    if pinned is not None:
        version = pinned
    elif files:
        h = hashlib.sha256()
        for name, digest in sorted(files.items()):
            h.update(f"{name}\0{digest}\n".encode())
        version = h.hexdigest()[:12]
    else:  # nothing local found: the entry or command text is all we know
        version = hashlib.sha256((entry or command or "").encode()).hexdigest()[:12]
    return CodeVersion(
        version=version,
        files=files,
        git=git_state(directory),
        pinned=pinned is not None,
        start=tuple(start),
        inputs=declared,
    )


def code_files(
    directory: Path,
    start: list[Path] | tuple[Path, ...],
    inputs: tuple[Path, ...],
    cache: DigestCache,
) -> dict[str, str]:
    """The file map of a code version: the modules reachable from ``start`` and the
    declared input files, each by its name (relative to the study's roots) and digest."""
    roots = search_roots(directory)
    files = {_display_name(p, roots): _file_hash(p) for p in local_imports(list(start), roots)}
    files.update(input_digests(list(inputs), roots, cache))
    return files


def _file_hash(path: Path) -> str:
    if path.suffix == ".py":
        return tree_hash(path)
    return hashlib.sha256(b"bytes:" + path.read_bytes()).hexdigest()[:16]


def changed_files(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Files whose hash differs between two file maps, with added/removed ones marked.

    >>> changed_files({"a.py": "1", "b.py": "2"}, {"a.py": "1", "b.py": "3", "c.py": "4"})
    ['b.py', 'c.py (new)']
    """
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            out.append(f"{name} (new)")
        elif name not in new:
            out.append(f"{name} (removed)")
        elif old[name] != new[name]:
            out.append(name)
    return out


# ---------------------------------------------------------------------------- artifacts

#: digests kept in the cache file at most (the oldest go first)
_CACHE_LIMIT = 20_000


def cache_file() -> Path:
    """Where file digests are cached: ``$EVALAB_CACHE_DIR`` or ``$XDG_CACHE_HOME/evalab``
    (default ``~/.cache/evalab``), file ``file-digests.json``."""
    root = os.environ.get("EVALAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "evalab",
    )
    return Path(root) / "file-digests.json"


class DigestCache:
    """sha256 digests of files, reused while a file's size, mtime and inode are unchanged,
    so a model of gigabytes is hashed once, not on every run. The cache file is optional:
    one that cannot be read or written only costs the hashing."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else cache_file()
        self._entries: dict[str, list[Any]] = {}
        self._dirty = False
        with contextlib.suppress(OSError, ValueError):
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                self._entries = {
                    k: v for k, v in loaded.items() if isinstance(v, list) and len(v) == 2
                }

    def digest(self, path: Path) -> str:
        """sha256 (16 hex digits) of the file's bytes."""
        st = path.stat()
        key, stamp = str(path.resolve()), [st.st_size, st.st_mtime_ns, st.st_ino]
        hit = self._entries.get(key)
        if hit is not None and hit[0] == stamp:
            return str(hit[1])
        h = hashlib.sha256(b"bytes:")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        value = h.hexdigest()[:16]
        self._entries.pop(key, None)
        self._entries[key] = [stamp, value]
        self._dirty = True
        return value

    def save(self) -> None:
        """Write the cache (atomically) when it learnt something."""
        if not self._dirty:
            return
        entries = dict(list(self._entries.items())[-_CACHE_LIMIT:])
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries), encoding="utf-8")
            os.replace(tmp, self.path)
            self._dirty = False


def artifact_digest(path: Path, cache: DigestCache) -> str:
    """Digest of a file, or of a folder (every file under it, by relative name and digest:
    a model folder's weights, config and tokenizer)."""
    if path.is_file():
        return cache.digest(path)
    h = hashlib.sha256(b"folder:")
    for file in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(f"{file.relative_to(path).as_posix()}\0{cache.digest(file)}\n".encode())
    return h.hexdigest()[:16]


def declared_inputs(directory: Path, patterns: list[str]) -> list[Path]:
    """The files ``[study] inputs`` names: glob patterns relative to the study folder (a
    folder stands for every file under it). :class:`ValueError` naming a pattern that
    matches nothing (a typo would otherwise cover nothing)."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        base = Path(pattern)
        matches = (
            [base]
            if base.is_absolute() and base.exists()
            else sorted(Path(p) for p in globmod.glob(str(directory / pattern), recursive=True))
        )
        files = [
            f
            for m in matches
            for f in ([m] if m.is_file() else sorted(x for x in m.rglob("*") if x.is_file()))
        ]
        if not files:
            raise ValueError(f"{pattern!r} matches no file (relative to {directory})")
        found.update((f.resolve(), None) for f in files)
    return list(found)


def input_digests(paths: list[Path], roots: list[Path], cache: DigestCache) -> dict[str, str]:
    """Display name -> digest of files a run reads (a Python module over its syntax tree)."""
    out = {}
    for path in paths:
        with contextlib.suppress(OSError):
            out[_display_name(path, roots)] = (
                tree_hash(path) if path.suffix == ".py" else cache.digest(path)
            )
    return out


def changed_inputs(recorded: dict[str, str], directory: Path, cache: DigestCache) -> list[str]:
    """The recorded input files (name -> digest, names relative to the study's roots) whose
    content differs now, or that are gone."""
    roots = search_roots(directory)
    out = []
    for name, digest in sorted(recorded.items()):
        path = next(
            (r / name for r in roots if (r / name).exists()),
            Path(name) if Path(name).is_absolute() else None,
        )
        if path is None or not path.is_file():
            out.append(f"{name} (removed)")
            continue
        try:
            now = tree_hash(path) if path.suffix == ".py" else cache.digest(path)
        except OSError:
            now = ""
        if now != digest:
            out.append(name)
    return out


def observed_files(paths: list[str], directory: Path, out_dir: Path) -> list[Path]:
    """The files a run's process read (its audit record) that belong to the study: under
    the study's roots, not in the store's run folders, ``.pyc`` files as their sources."""
    roots = [r.resolve() for r in search_roots(directory)]
    runs = out_dir.resolve().parents[1]  # runs/<store id>/: run folders and checkpoints
    out: dict[Path, None] = {}
    for raw in paths:
        p = Path(raw)
        if p.suffix == ".pyc" and p.parent.name == "__pycache__":
            p = p.parent.parent / f"{p.name.split('.')[0]}.py"
        p = p.resolve()
        if (
            not p.is_file()
            or runs in p.parents
            or not any(r == p.parent or r in p.parents for r in roots)
        ):
            continue
        out[p] = None
    return sorted(out)
