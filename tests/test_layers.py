"""The package's import layers: every import points down, and no package imports a sibling.

`LAYERS` is the map a reader of the code can rely on: a module may import
modules of its own package and of packages on lower floors, never one on
its own floor or above.  Imports inside functions count as well: they are
arrows all the same, only later.  A new package gets a floor here.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FCL = ROOT / "fcl"

# package -> floor; the deepest listed package that contains a module is its own
LAYERS = {
    "fcl.base": 0,
    "fcl.syntax": 1,
    "fcl.types": 2,
    "fcl.eval": 3,
    "fcl.codegen.kir": 3,
    "fcl.codegen.plan": 4,
    "fcl.codegen.analysis": 5,
    "fcl.codegen.verify": 5,
    "fcl.codegen.interp": 5,
    "fcl.codegen.opencl": 5,
    "fcl.codegen.passes": 6,
    "fcl.codegen.lower": 6,
    "fcl.runtime": 7,
    "fcl.api": 8,
    "fcl.distributed": 9,
    "fcl.tools": 10,
    "fcl.fuzz": 11,
    "fcl": 12,                       # the facade, fcl/__init__.py
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    candidates = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    assert candidates, f"{module} is in no package of LAYERS: give it a floor"
    return max(candidates, key=len)


def imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) of every import of an fcl module, nested ones included."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:      # `from fcl.codegen import kir`: the module kir
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if (FCL.parent / (sub.replace(".", "/") + ".py")).exists()
                            or (FCL.parent / sub.replace(".", "/")).is_dir() else target))
    return [(line, m) for line, m in out if m == "fcl" or m.startswith("fcl.")]


def violations() -> list[str]:
    bad = []
    for path in sorted(FCL.rglob("*.py")):
        module = module_name(path)
        here = package_of(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, target in imported(tree, module, path.name == "__init__.py"):
            there = package_of(target)
            if there == here or target == "fcl" and here == "fcl":
                continue
            if LAYERS[there] >= LAYERS[here]:
                side = "a sibling" if LAYERS[there] == LAYERS[here] else "a higher layer"
                bad.append(f"{path.relative_to(ROOT)}:{line}: {module} ({here}) imports {target} "
                           f"({there}), {side}")
    return bad


def test_every_module_has_a_floor():
    for path in FCL.rglob("*.py"):
        package_of(module_name(path))


def test_imports_point_down():
    bad = violations()
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_the_checker_sees_a_back_arrow(tmp_path):
    source = "from fcl.api import program\n"
    tree = ast.parse(source)
    targets = [t for _, t in imported(tree, "fcl.base.errors", False)]
    assert targets == ["fcl.api.program"]
    assert LAYERS[package_of("fcl.api.program")] > LAYERS[package_of("fcl.base.errors")]


def test_package_root_holds_only_the_facade():
    assert sorted(p.name for p in FCL.glob("*.py")) == ["__init__.py"]
