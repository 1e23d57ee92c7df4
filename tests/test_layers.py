"""Import layering: no module of ``tailbound`` imports from a layer above its own.

The layers, bottom to top (issue 12; ``docs/architecture.md``): a module may import from its own
layer and any lower one. Every import counts, wherever it is written: at module level, inside
functions and methods, under ``if TYPE_CHECKING:`` or ``try:``, relative imports, ``import a.b.c``,
``from a import b`` (``b`` a submodule counts as ``a.b``), and string literals given to
``importlib.import_module``/``import_module``/``__import__`` (an f-string counts by its constant
prefix when that names a module, e.g. ``f"tailbound.cli.{name}"`` imports ``tailbound.cli``).
A module that is in no layer fails the test: add it to :data:`LAYERS`.

The checker lives here, not in the package, and is tested on a synthetic package
(:func:`test_checker_reports_upward_imports`) so that the real check cannot pass vacuously.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIR = REPO / "python" / "tailbound"

#: Layer of each module prefix, bottom (0) to top. A module belongs to the entry naming it or
#: its closest enclosing package; the bare package name covers only the package ``__init__``.
LAYERS: dict[str, int] = {
    "tailbound": 0,
    "tailbound.model": 0,
    "tailbound.traces": 0,
    "tailbound.errors": 0,
    "tailbound.limits": 0,
    "tailbound.lazy": 0,
    "tailbound.atomic": 0,
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
    "tailbound.plan_queues": 4,
    "tailbound.sim": 5,
    "tailbound.policies": 6,
    "tailbound.verify": 7,
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


# ------------------------------------------------------------------------------ the tests
def test_no_module_imports_from_a_layer_above() -> None:
    assert PACKAGE_DIR.is_dir(), f"package sources not found at {PACKAGE_DIR}"
    problems = check_layers(PACKAGE_DIR, "tailbound", LAYERS, root=REPO)
    assert not problems, f"{len(problems)} layering problem(s):\n" + "\n".join(problems)


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
    layers = {"pkg": 0, "pkg.low": 0, "pkg.high": 1}
    problems = check_layers(pkg, "pkg", layers)
    expected = [
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
