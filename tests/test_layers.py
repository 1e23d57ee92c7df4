"""Import layering: no module of ``tailbound`` imports from a layer above its own.

The layers, bottom to top (issue 12; ``docs/architecture.md``): a module may import from its own
layer and any lower one. Every import counts, wherever it is written: at module level, inside
functions and methods, under ``if TYPE_CHECKING:`` or ``try:``, relative imports, ``import a.b.c``,
``from a import b`` (``b`` a submodule counts as ``a.b``), and string literals given to
``importlib.import_module``/``import_module``/``__import__`` (an f-string counts by its constant
prefix when that names a module, e.g. ``f"tailbound.cli.{name}"`` imports ``tailbound.cli``).
A module that is in no layer fails the test: add it to :data:`LAYERS`; so does an entry of
:data:`LAYERS` that names no module or package (a layer is listed when its code lands).

No cycles: two modules of one package never import each other, directly or through other modules
of the package, by any of the imports above (one inside a function included) except those under
``if TYPE_CHECKING:``, which never run: a type named in an annotation may point back (the layer
rule still counts them). A cycle is broken by moving the piece both need into the lower module or
a small module of its own.

``benchmarks/`` is the top floor: a benchmark may import any module of ``tailbound``, but only
modules that exist and are public (no part of the dotted name starts with ``_``: the
``_core`` binding and helpers such as ``experiments._snc_common`` may change without notice),
and nothing from ``tests`` (the benchmarks run without the test suite; ``tests/benchmarks``
may import them, not the other way round).

The checkers live here, not in the package, and are tested on synthetic packages
(:func:`test_checker_reports_upward_imports`, :func:`test_checker_reports_cycles`,
:func:`test_benchmark_checker_reports_private_missing_and_test_imports`) so that the real checks
cannot pass vacuously.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIR = REPO / "python" / "tailbound"
BENCHMARKS_DIR = REPO / "benchmarks"

#: Layer of each module prefix, bottom (0) to top. A module belongs to the entry naming it or
#: its closest enclosing package; the bare package name covers only the package ``__init__``.
LAYERS: dict[str, int] = {
    "tailbound": 0,
    "tailbound.model": 0,
    "tailbound.rpc_network": 0,
    "tailbound.traces": 0,
    "tailbound.errors": 0,
    "tailbound.limits": 0,
    "tailbound.lazy": 0,
    "tailbound.atomic": 0,
    "tailbound.executor": 0,
    "tailbound.jsonio": 0,
    "tailbound.tables": 0,
    "tailbound.stages": 0,
    "tailbound._core": 0,
    "tailbound.plotting": 0,
    "tailbound.profiles": 1,
    "tailbound.characterize": 2,
    "tailbound.dnc": 3,
    "tailbound.snc": 3,
    "tailbound.plan": 4,
    "tailbound.plan_inputs": 4,
    "tailbound.characterisation_forms": 4,
    "tailbound.plan_queues": 4,
    "tailbound.plan_control": 4,
    "tailbound.plan_aequitas": 4,
    "tailbound.sim": 5,
    "tailbound.policies": 6,
    "tailbound.verify": 7,
    "tailbound.verify_aequitas": 7,
    "tailbound.compare": 7,
    "tailbound.enforce": 8,
    "tailbound.service": 8,
    "tailbound.cli": 9,
    "tailbound.experiments": 9,
    "tailbound.demo": 9,
}

_IMPORT_FUNCTIONS = {"import_module", "__import__"}


# ------------------------------------------------------------------------------ the checker
@dataclass(frozen=True)
class Import:
    """One import of a module of the package: who, where, what."""

    module: str  # the importing module
    path: Path
    line: int
    target: str  # the imported module (most specific name known)


def layer_of(name: str, layers: Mapping[str, int], package: str) -> int | None:
    """The layer of module ``name``: its longest matching entry in ``layers`` (the bare
    ``package`` entry matches only the package itself), or None when no entry covers it."""
    best: str | None = None
    for key in layers:
        covers = name == key or (key != package and name.startswith(key + "."))
        if covers and (best is None or len(key) > len(best)):
            best = key
    return None if best is None else layers[best]


def package_modules(package_dir: Path, package: str) -> dict[str, Path]:
    """Every module of the package under ``package_dir``: dotted name → file. Extension modules
    and stubs (``_core.cpython-….so``, ``_core.pyi``) count as modules too."""
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        if path.suffix not in {".py", ".pyi", ".so", ".pyd"}:
            continue
        parts = list(path.relative_to(package_dir).parts)
        parts[-1] = parts[-1].split(".", 1)[0]
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join([package, *parts])
        # a .py source wins over a stub or a binary of the same name (it is what we parse)
        if name not in modules or path.suffix == ".py":
            modules[name] = path
    return modules


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, name] if name else parts)


def _string_target(node: ast.expr, module: str, is_package: bool) -> str | None:
    """The module named by the first argument of an ``import_module``/``__import__`` call: a
    string literal, or an f-string's constant prefix up to its last dot."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif (
        isinstance(node, ast.JoinedStr)
        and node.values
        and isinstance(node.values[0], ast.Constant)
        and isinstance(node.values[0].value, str)
    ):
        prefix = node.values[0].value
        if "." not in prefix:
            return None
        text = prefix.rsplit(".", 1)[0]
    else:
        return None
    if text.startswith("."):
        level = len(text) - len(text.lstrip("."))
        return _resolve_relative(module, is_package, level, text[level:] or None)
    return text


def imports_of(
    path: Path, module: str, package: str, known: Mapping[str, Path]
) -> Iterator[Import]:
    """Every import of a module of ``package`` written anywhere in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.stem == "__init__"

    def emit(target: str, line: int) -> Iterator[Import]:
        if target == package or target.startswith(package + "."):
            yield Import(module, path, line, target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from emit(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(module, is_package, node.level, node.module)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield from emit(sub if sub in known else base, node.lineno)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else None
            )
            if name in _IMPORT_FUNCTIONS:
                target = _string_target(node.args[0], module, is_package)
                if target is not None:
                    yield from emit(target, node.lineno)


def check_layers(
    package_dir: Path, package: str, layers: Mapping[str, int], root: Path | None = None
) -> list[str]:
    """The layering problems of the package under ``package_dir``, one message each: modules in
    no layer, then upward imports as ``module (file:line) imports X (layer N above layer M)``.
    Files are shown relative to ``root`` (default: the package directory's parent)."""
    root = root if root is not None else package_dir.parent
    modules = package_modules(package_dir, package)
    problems: list[str] = []
    for key in sorted(layers):
        if key not in modules:
            problems.append(
                f"LAYERS lists {key}, which is no module or package of {package}: remove it "
                "from LAYERS in tests/test_layers.py"
            )
    for name, path in modules.items():
        if layer_of(name, layers, package) is None:
            problems.append(
                f"module {name} ({path.relative_to(root)}) is in no layer: add it to LAYERS "
                "in tests/test_layers.py"
            )
    for name, path in modules.items():
        own = layer_of(name, layers, package)
        if path.suffix != ".py" or own is None:
            continue
        found = set(imports_of(path, name, package, modules))  # one per (line, target)
        for imp in sorted(found, key=lambda i: (i.line, i.target)):
            theirs = layer_of(imp.target, layers, package)
            where = f"{imp.module} ({imp.path.relative_to(root)}:{imp.line})"
            if theirs is None:
                problems.append(
                    f"{where} imports {imp.target}, which is in no layer: add it to LAYERS "
                    "in tests/test_layers.py"
                )
            elif theirs > own:
                problems.append(f"{where} imports {imp.target} (layer {theirs} above layer {own})")
    return problems


def _parent(name: str, modules: Mapping[str, Path]) -> str:
    """The package holding module ``name`` (a package holds itself and its own modules)."""
    path = modules.get(name)
    if path is not None and path.stem == "__init__":
        return name
    return name.rsplit(".", 1)[0]


def _type_checking_lines(path: Path) -> set[int]:
    """Lines of the imports under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) in
    ``path``: they never run."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
        if name != "TYPE_CHECKING":
            continue
        for stmt in node.body:
            for inner in ast.walk(stmt):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    lines.add(inner.lineno)
    return lines


def check_cycles(package_dir: Path, package: str, root: Path | None = None) -> list[str]:
    """The import cycles among modules of one package under ``package_dir``, one message each:
    ``cycle in P: a (file:line) → b (file:line) → a``, the shortest cycle through the first
    module (by name) of each circle (every import that runs counts: at module level, inside
    functions, ``importlib`` strings; not those under ``if TYPE_CHECKING:``)."""
    root = root if root is not None else package_dir.parent
    modules = package_modules(package_dir, package)
    edges: dict[str, dict[str, Import]] = {}
    for name, path in modules.items():
        if path.suffix != ".py":
            continue
        typing_only = _type_checking_lines(path)
        for imp in sorted(imports_of(path, name, package, modules), key=lambda i: i.line):
            if imp.line in typing_only:
                continue
            target = imp.target
            while target not in modules and "." in target:  # a name inside a module
                target = target.rsplit(".", 1)[0]
            same = _parent(name, modules) == _parent(target, modules) or target == _parent(
                name, modules
            )
            if target != name and target in modules and same:
                edges.setdefault(name, {}).setdefault(target, imp)
    problems: list[str] = []
    done: set[str] = set()
    for start in sorted(edges):
        if start in done:
            continue
        # breadth first from start: the shortest way back to it
        back: dict[str, str] = {}
        frontier = [start]
        found: str | None = None
        while frontier and found is None:
            nxt = []
            for a in frontier:
                for b in sorted(edges.get(a, {})):
                    if b == start:
                        found = a
                        break
                    if b not in back:
                        back[b] = a
                        nxt.append(b)
                if found is not None:
                    break
            frontier = nxt
        if found is None:
            continue
        chain = [found]
        while chain[-1] != start:
            chain.append(back[chain[-1]])
        chain.reverse()  # start … found, and found imports start
        done.update(chain)
        hops = [
            f"{a} ({edges[a][b].path.relative_to(root)}:{edges[a][b].line})"
            for a, b in zip(chain, [*chain[1:], start], strict=True)
        ]
        problems.append(f"cycle in {_parent(start, modules)}: " + " → ".join([*hops, start]))
    return problems


def check_benchmarks(
    bench_dir: Path, package_dir: Path, package: str, root: Path | None = None
) -> list[str]:
    """What the benchmarks under ``bench_dir`` import that they may not: a module of ``package``
    that does not exist or is private (a part of its name starts with ``_``), or anything of
    ``tests``."""
    root = root if root is not None else bench_dir.parent
    modules = package_modules(package_dir, package)
    problems: list[str] = []
    for path in sorted(bench_dir.rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        where = f"{name} ({path.relative_to(root)}"
        found = set(imports_of(path, name, package, modules))
        for imp in sorted(found, key=lambda i: (i.line, i.target)):
            if imp.target not in modules:
                problems.append(f"{where}:{imp.line}) imports {imp.target}, which does not exist")
            elif any(part.startswith("_") for part in imp.target.split(".")):
                problems.append(
                    f"{where}:{imp.line}) imports {imp.target}, a private module of {package}"
                )
        for imp in sorted(set(imports_of(path, name, "tests", {})), key=lambda i: i.line):
            problems.append(f"{where}:{imp.line}) imports {imp.target}: benchmarks import no tests")
    return problems


# ------------------------------------------------------------------------------ the tests
def test_no_module_imports_from_a_layer_above() -> None:
    assert PACKAGE_DIR.is_dir(), f"package sources not found at {PACKAGE_DIR}"
    problems = check_layers(PACKAGE_DIR, "tailbound", LAYERS, root=REPO)
    assert not problems, f"{len(problems)} layering problem(s):\n" + "\n".join(problems)


def test_no_import_cycle_within_a_package() -> None:
    problems = check_cycles(PACKAGE_DIR, "tailbound", root=REPO)
    assert not problems, f"{len(problems)} import cycle(s):\n" + "\n".join(problems)


def test_benchmarks_import_existing_public_modules_only() -> None:
    assert BENCHMARKS_DIR.is_dir(), f"benchmarks not found at {BENCHMARKS_DIR}"
    problems = check_benchmarks(BENCHMARKS_DIR, PACKAGE_DIR, "tailbound", root=REPO)
    assert not problems, f"{len(problems)} benchmark import problem(s):\n" + "\n".join(problems)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_checker_reports_upward_imports(tmp_path: Path) -> None:
    """On a synthetic package: an upward import inside a function, an ``importlib`` string, a
    relative upward import under ``TYPE_CHECKING``, a submodule imported by ``from a import b``,
    an f-string given to ``import_module`` and a module in no layer are all reported; downward
    and same-layer imports are not."""
    pkg = tmp_path / "pkg"
    _write(pkg / "__init__.py", "from pkg.low import base\n")
    _write(
        pkg / "low" / "__init__.py",
        "from __future__ import annotations\n"  # 1
        "import importlib\n"  # 2
        "from typing import TYPE_CHECKING\n"  # 3
        "if TYPE_CHECKING:\n"  # 4
        "    from ..high import thing\n"  # 5
        "def base():\n"  # 6
        "    from pkg.high.impl import run\n"  # 7
        "    return importlib.import_module('pkg.high')\n"  # 8
        "def other():\n"  # 9
        "    from pkg import high\n"  # 10
        "    importlib.import_module(f'pkg.high.{high}')\n"  # 11
        "    return __import__('pkg.low.util')\n",  # 12
    )
    _write(pkg / "low" / "util.py", "import pkg.low\n")
    _write(pkg / "high" / "__init__.py", "thing = 1\n")
    _write(pkg / "high" / "impl.py", "from pkg.low import base\nfrom . import thing\n")
    _write(pkg / "stray.py", "")
    layers = {"pkg": 0, "pkg.low": 0, "pkg.high": 1, "pkg.gone": 1}
    problems = check_layers(pkg, "pkg", layers)
    expected = [
        "LAYERS lists pkg.gone, which is no module or package of pkg: remove it from LAYERS "
        "in tests/test_layers.py",
        "module pkg.stray (pkg/stray.py) is in no layer: add it to LAYERS in tests/test_layers.py",
        "pkg.low (pkg/low/__init__.py:5) imports pkg.high (layer 1 above layer 0)",
        "pkg.low (pkg/low/__init__.py:7) imports pkg.high.impl (layer 1 above layer 0)",
        "pkg.low (pkg/low/__init__.py:8) imports pkg.high (layer 1 above layer 0)",
        "pkg.low (pkg/low/__init__.py:10) imports pkg.high (layer 1 above layer 0)",
        "pkg.low (pkg/low/__init__.py:11) imports pkg.high (layer 1 above layer 0)",
    ]
    assert sorted(problems) == sorted(expected)


def test_layer_of_uses_the_closest_entry() -> None:
    assert layer_of("tailbound", LAYERS, "tailbound") == 0
    assert layer_of("tailbound.snc.replay", LAYERS, "tailbound") == 3
    assert layer_of("tailbound.sim.plan", LAYERS, "tailbound") == 5
    assert layer_of("tailbound.nowhere", LAYERS, "tailbound") is None


def test_checker_reports_cycles(tmp_path: Path) -> None:
    """On a synthetic package: a two-module cycle closed by an import inside a function, a
    three-module cycle through ``from . import``, and a submodule importing its own package's
    ``__init__`` that imports it are reported once each; one-directional imports, an import of a
    module of another package and an import back under ``TYPE_CHECKING`` are not."""
    pkg = tmp_path / "pkg"
    _write(pkg / "__init__.py", "")
    _write(pkg / "a.py", "from pkg.b import f\n")  # 1
    _write(pkg / "b.py", "def f():\n    from pkg.a import g\n    return g\n")
    _write(pkg / "c.py", "from . import d\n")
    _write(pkg / "d.py", "import pkg.e\n")
    _write(pkg / "e.py", "from pkg.c import x\nfrom pkg.sub.m import y\n")
    _write(pkg / "sub" / "__init__.py", "from pkg.sub.m import y\n")
    _write(pkg / "sub" / "m.py", "from pkg.sub import z\nfrom pkg.a import w\n")
    _write(pkg / "ok.py", "from pkg.a import f\nfrom pkg.sub import y\nfrom pkg import typed\n")
    _write(
        pkg / "typed.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.ok import f\n",
    )
    problems = check_cycles(pkg, "pkg")
    expected = [
        "cycle in pkg: pkg.a (pkg/a.py:1) → pkg.b (pkg/b.py:2) → pkg.a",
        "cycle in pkg: pkg.c (pkg/c.py:1) → pkg.d (pkg/d.py:1) → pkg.e (pkg/e.py:1) → pkg.c",
        "cycle in pkg.sub: pkg.sub (pkg/sub/__init__.py:1) → pkg.sub.m (pkg/sub/m.py:1) → pkg.sub",
    ]
    assert sorted(problems) == sorted(expected)


def test_benchmark_checker_reports_private_missing_and_test_imports(tmp_path: Path) -> None:
    """On a synthetic package and benchmarks folder: an import of a module that does not exist,
    of a private module (a name part starting with ``_``, also through ``from pkg import
    _private``) and of ``tests`` are reported; public modules of any layer and names inside
    them are not."""
    pkg = tmp_path / "pkg"
    _write(pkg / "__init__.py", "")
    _write(pkg / "top.py", "X = 1\n")
    _write(pkg / "_hidden.py", "")
    _write(pkg / "sub" / "__init__.py", "")
    _write(pkg / "sub" / "_helpers.py", "")
    bench = tmp_path / "benchmarks"
    _write(bench / "__init__.py", "")
    _write(
        bench / "bench_x.py",
        "from pkg.top import X\n"  # 1 fine
        "import pkg.sub\n"  # 2 fine
        "from pkg import _hidden\n"  # 3
        "from pkg.sub._helpers import h\n"  # 4
        "import pkg.gone\n"  # 5
        "from tests.conftest import fixture\n"  # 6
        "from benchmarks import bench_y\n",  # 7 fine
    )
    _write(bench / "bench_y.py", "")
    problems = check_benchmarks(bench, pkg, "pkg")
    expected = [
        "benchmarks.bench_x (benchmarks/bench_x.py:3) imports pkg._hidden, a private module of pkg",
        "benchmarks.bench_x (benchmarks/bench_x.py:4) imports pkg.sub._helpers, a private module "
        "of pkg",
        "benchmarks.bench_x (benchmarks/bench_x.py:5) imports pkg.gone, which does not exist",
        "benchmarks.bench_x (benchmarks/bench_x.py:6) imports tests.conftest: benchmarks import "
        "no tests",
    ]
    assert sorted(problems) == sorted(expected)
