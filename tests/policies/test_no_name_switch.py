"""No second switch on policy names: outside :mod:`tailbound.policies.registry`, no module
branches on the literal name of a registered policy.

What counts as a switch (read from the syntax tree, so comments, docstrings and messages do
not): a comparison (``==``, ``!=``, ``in``, ``not in``) or ``str.startswith`` against a registered
name's literal (or a tuple, list or set of them) in the test of an ``if``/``elif``, a conditional
expression, a ``while`` or a comprehension's ``if``; a ``case`` of a ``match`` on such a literal;
and a dict display keyed by registered names whose values are all plain names, attributes or
lambdas (a dispatch table: ``{"dnc": DncPolicy, ...}``). Labels in result tables, variant rules
(``{"snc-meister": SncRule()}``) and a name passed as an argument are not switches.

Where the check does not look, and why:

- ``tailbound.snc.network`` holds the analysis layer's table of its own SNC analyses
  (``ANALYSIS_FUNCTIONS``, floor 3, which cannot import the registry) and picks the fast path of
  SNC-Meister by name; :func:`test_the_analysis_table_is_the_registrys` pins the table's keys to
  the registry's SNC entries and checks that nothing above the analysis layer reads the table;
- ``tailbound.sim`` and ``tailbound.enforce`` read Plans, not policies: a Plan's discipline kind
  ``edf`` shares its spelling with the scheduling policy ``edf``, and their branches on
  discipline kinds are not policy switches.

The checker is tested on a synthetic module (:func:`test_the_checker_finds_every_form`) so the
real check cannot pass vacuously.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tailbound.policies.registry import REGISTRY, names

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "python" / "tailbound"
#: Folders whose modules are checked (benchmarks and tools build policies too).
ROOTS = (PACKAGE, REPO / "benchmarks", REPO / "tools")
#: Modules and packages left out, with the reason in the module docstring.
EXEMPT = (
    PACKAGE / "policies" / "registry.py",
    PACKAGE / "snc" / "network.py",
    PACKAGE / "sim",
    PACKAGE / "enforce",
)

NAMES = frozenset(e.name for e in REGISTRY if not e.parameterised)
PREFIXES = tuple(e.name.partition(":")[0] + ":" for e in REGISTRY if e.parameterised)


def _literals(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for elt in node.elts:
            yield from _literals(elt)


def _registered(text: str) -> bool:
    return text in NAMES or text.startswith(PREFIXES)


def _in_tests(test: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                yield from ((node.lineno, s) for s in _literals(side) if _registered(s))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
        ):
            for arg in node.args:
                yield from ((node.lineno, s) for s in _literals(arg) if _registered(s))


def name_switches(source: str) -> list[tuple[int, str]]:
    """(line, name) of every switch on a registered policy's name in ``source``."""
    hits: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            hits += _in_tests(node.test)
        elif isinstance(node, ast.comprehension):
            for test in node.ifs:
                hits += _in_tests(test)
        elif isinstance(node, ast.match_case):
            for pat in ast.walk(node.pattern):
                if isinstance(pat, ast.MatchValue):
                    hits += [(pat.lineno, s) for s in _literals(pat.value) if _registered(s)]
        elif isinstance(node, ast.Dict):
            keys = [s for k in node.keys if k is not None for s in _literals(k) if _registered(s)]
            table = all(isinstance(v, ast.Name | ast.Attribute | ast.Lambda) for v in node.values)
            if keys and table:
                hits += [(node.lineno, s) for s in keys]
    return hits


def _modules() -> Iterator[Path]:
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            if not any(path == e or e in path.parents for e in EXEMPT):
                yield path


def test_no_module_switches_on_policy_names() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {name!r}"
        for path in _modules()
        for line, name in name_switches(path.read_text())
    ]
    assert not found, (
        "policy names switched on outside the registry (build the policy through "
        "tailbound.policies.registry, or compare with a registered constant):\n" + "\n".join(found)
    )


def test_the_checker_looks_at_the_package() -> None:
    checked = {p.relative_to(PACKAGE).as_posix() for p in _modules() if PACKAGE in p.parents}
    assert {"cli/admit.py", "experiments/pm_common.py", "policies/admission_policies.py"} <= checked
    assert "policies/registry.py" not in checked


def test_the_checker_finds_every_form() -> None:
    source = """
def make(name, x):
    if name == "dnc":
        return 1
    elif name in ("silo", "qjump"):
        return 2
    while name != "ps":
        break
    y = 3 if x == "edf" else 4
    z = [p for p in x if p == "byslo"]
    if name.startswith("average-rate:"):
        pass
    match name:
        case "cake":
            pass
    table = {"knee": make, "snc-meister": x.f, "dnc-like": 1}
    return {"dnc": 1, "snc-convolution": make(1, 2)}  # labels and values: not a switch
"""
    assert sorted(name_switches(source)) == [
        (3, "dnc"),
        (5, "qjump"),
        (5, "silo"),
        (7, "ps"),
        (9, "edf"),
        (10, "byslo"),
        (11, "average-rate:"),
        (14, "cake"),
    ]
    assert name_switches('table = {"knee": f, "snc-meister": g.h}\n') == [
        (1, "knee"),
        (1, "snc-meister"),
    ]
    # a name passed on, a label, a docstring and a message are not switches
    assert not name_switches('build("dnc", "admission")\nrow["dnc"] = 1\n"""dnc"""\n')


def test_the_analysis_table_is_the_registrys() -> None:
    """The one table left in the analysis layer names exactly the registry's SNC entries, and
    only the analysis layer and the policies read it."""
    from tailbound.snc.network import ANALYSIS_FUNCTIONS

    assert tuple(ANALYSIS_FUNCTIONS) == names("admission", "snc")
    readers = sorted(
        p.relative_to(PACKAGE).as_posix()
        for root in ROOTS
        for p in root.rglob("*.py")
        if "ANALYSIS_FUNCTIONS" in p.read_text()
    )
    assert readers == ["snc/network.py"]
