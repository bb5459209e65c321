"""Imports point down the layers, and no modules import each other in a cycle.

The layers, top to bottom (DESIGN.md, "Layers"); a module may import its own layer and
the layers below it, never one above (imports inside functions count too: a lazy import
is still a dependency):

====  ==========================================================================
 7    entry points: ``evalab`` (the package's API facade) and ``evalab.__main__``
 6    ``evalab.cli``
 5    ``evalab.report``
 4    ``evalab.ablation``; ``evalab.examples`` (studies the ablation layer runs);
      ``evalab.metaeval`` (metrics against human judgements)
 3    ``evalab.stats``
 2    ``evalab.metrics``
 1    ``evalab.text``, ``evalab.models``, ``evalab.items`` (per-item score files)
 0    the core every layer uses: ``errors``, ``_version``, ``_kernel`` (and the compiled
      ``_mtkernel``, ``_rougekernel``, ``_edkernel``, ``_tieskernel``), ``io``, ``nll``, ``progress``, ``numbers``,
      ``_lazy`` (names a package imports on first use)
====  ==========================================================================

Inside a layer, a package over ~15 modules is split into subpackages named after its
stages (DESIGN.md, "Packages show the pipeline"). Each such subpackage's ``__init__``
docstring says what it owns and, on a line ``May import: ...``, which of its sibling
stages it may import; the tests below hold the imports to those lines and the declared
stages to an order without cycles. The package's own modules (its facade ``__init__``
and helpers every stage shares) sit outside the stages: any stage may import a helper,
no stage imports the facade.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: dict[str, int] = {
    "evalab": 7,
    "evalab.__main__": 7,
    "evalab.cli": 6,
    "evalab.report": 5,
    "evalab.ablation": 4,
    "evalab.examples": 4,
    "evalab.metaeval": 4,
    "evalab.stats": 3,
    "evalab.metrics": 2,
    "evalab.text": 1,
    "evalab.models": 1,
    "evalab.items": 1,
    "evalab.errors": 0,
    "evalab._version": 0,
    "evalab._kernel": 0,
    "evalab._mtkernel": 0,
    "evalab._rougekernel": 0,
    "evalab._edkernel": 0,
    "evalab._tieskernel": 0,
    "evalab.io": 0,
    "evalab.nll": 0,
    "evalab.progress": 0,
    "evalab.numbers": 0,
    "evalab._lazy": 0,
}

#: import cycles tolerated for now: (module, module) pairs (none today; keep it that way).
KNOWN_CYCLES: set[frozenset[str]] = set()


def modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "evalab").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    # the compiled kernels import nothing of ours
    for source in (SRC / "evalab").glob("_*kernel.c"):
        out[f"evalab.{source.stem}"] = source
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every ``evalab`` module ``name`` imports, at any depth of its syntax tree."""
    if path.suffix != ".py":
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "evalab"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "evalab":
                continue
            submodules = {f"{target}.{a.name}" for a in node.names} & known
            # `from evalab import _kernel` depends on evalab._kernel, not on the facade
            found |= submodules if len(submodules) == len(node.names) else submodules | {target}
    return found - {name}


def layer_of(name: str) -> int:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise AssertionError(
        f"{name} is in no layer: add it to LAYERS in {__file__} (and to the table)"
    )


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_imports_point_down_the_layers() -> None:
    upward = [
        f"{src} (layer {layer_of(src)}) imports {dst} (layer {layer_of(dst)})"
        for src, targets in sorted(graph().items())
        for dst in sorted(targets)
        if layer_of(dst) > layer_of(src)
    ]
    assert not upward, "upward imports:\n" + "\n".join(upward)


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    edges = graph()
    # a package's __init__ and its own modules may refer to each other (re-exports)
    edges = {
        s: {d for d in ds if not (s.startswith(d + ".") or d.startswith(s + "."))}
        for s, ds in edges.items()
    }
    for pair in KNOWN_CYCLES:
        a, b = sorted(pair)
        edges.get(a, set()).discard(b)
        edges.get(b, set()).discard(a)
    cycles = find_cycles(edges)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize(
    ("edges", "expected"),
    [({"a": {"b"}, "b": {"a"}}, [["a", "b"]]), ({"a": {"b"}, "b": {"c"}, "c": set()}, [])],
)
def test_the_cycle_finder_finds_cycles(edges, expected) -> None:
    assert find_cycles(edges) == expected


def test_an_upward_import_would_be_reported(tmp_path) -> None:
    fake = tmp_path / "evalab" / "metrics" / "x.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from evalab.cli import app\n", encoding="utf-8")
    found = imports_of("evalab.metrics.x", fake, {"evalab.cli"})
    assert found == {"evalab.cli"} and layer_of("evalab.cli") > layer_of("evalab.metrics.x")


#: packages whose modules all live in stage subpackages, and the shared helper modules
#: outside them (none today: a helper every stage needs belongs a layer down)
STAGED: dict[str, set[str]] = {"evalab.ablation": set()}

MAY_IMPORT = re.compile(r"^May import: (.+?)\.?$", re.MULTILINE)


def stages(package: str) -> dict[str, set[str]]:
    """Each stage subpackage of ``package`` with the sibling stages its docstring allows."""
    out = {}
    root = SRC.joinpath(*package.split("."))
    for init in sorted(root.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        line = MAY_IMPORT.search(doc)
        assert line, f"{init}: its docstring has no line 'May import: ...'"
        names = {w.strip(" ,`") for w in line.group(1).split(",")}
        allowed = set() if line.group(1).startswith("nothing") else names
        out[f"{package}.{init.parent.name}"] = {f"{package}.{n}" for n in allowed}
    return out


def stage_of(name: str, package: str) -> str | None:
    parts = name.split(".")
    depth = len(package.split("."))
    return ".".join(parts[: depth + 1]) if len(parts) > depth + 1 else None


@pytest.mark.parametrize("package", sorted(STAGED))
def test_every_module_is_in_a_stage(package) -> None:
    declared = stages(package)
    loose = [
        name
        for name in modules()
        if name.startswith(package + ".")
        and stage_of(name, package) not in declared
        and name not in declared
        and name not in STAGED[package]
    ]
    assert not loose, f"modules of {package} in no stage subpackage: {loose}"


@pytest.mark.parametrize("package", sorted(STAGED))
def test_stages_import_only_what_their_docstring_allows(package) -> None:
    declared = stages(package)
    for stage, allowed in declared.items():
        assert allowed <= set(declared), f"{stage} allows a stage that does not exist"
    assert not find_cycles(declared), f"the stages of {package} allow a cycle"
    wrong = []
    for src, targets in sorted(graph().items()):
        stage = stage_of(src, package) if src.startswith(package + ".") else None
        if stage is None:
            continue
        for dst in sorted(targets):
            if dst == package:
                wrong.append(f"{src} imports the facade {dst}")
            elif dst.startswith(package + ".") and dst not in STAGED[package]:
                target = stage_of(dst, package) or dst
                if target != stage and target not in declared[stage]:
                    wrong.append(f"{src} imports {dst}")
    assert not wrong, "imports a stage's docstring does not allow:\n" + "\n".join(wrong)


def test_a_stage_import_would_be_reported() -> None:
    assert stage_of("evalab.ablation.study.spec", "evalab.ablation") == "evalab.ablation.study"
    assert stage_of("evalab.ablation.study", "evalab.ablation") is None
    assert "evalab.ablation.analysis" not in stages("evalab.ablation")["evalab.ablation.store"]
