"""The documentation stays in sync with the implementation.

Every primitive (fcl.types.builtins) and every prelude declaration has a row
`| `name` | `type` | meaning |` in docs/language.md, and the type written there
is exactly the scheme `fclc check` prints.  docs/compiler.md's pass table is
`fcl.codegen.passes.PIPELINE`, in its order (`--update-golden` rewrites it).
docs/compiler.md's Layout names every module of `fcl/`, and no module that is gone;
its list of what the compiler does not do yet is `fcl.base.errors.LIMITATIONS`, and
the code raises each of them.
"""
import re
from pathlib import Path

import pytest

from fcl.types import format_scheme
from fcl.types.builtins import HARDWARE_PARAMETERS, PRIMITIVES

ROOT = Path(__file__).resolve().parents[1]
LANGUAGE = ROOT / "docs" / "language.md"
COMPILER = ROOT / "docs" / "compiler.md"
README = ROOT / "README.md"
ROW = re.compile(r"^\| `([A-Za-z#][A-Za-z0-9_']*)` \| `([^`]+)` \| (.+) \|$", re.M)


def documented() -> dict[str, str]:
    """name -> documented type, from every three-column table row of language.md."""
    rows = {}
    for name, ty, meaning in ROW.findall(LANGUAGE.read_text()):
        assert meaning.strip(), f"{name} has no meaning in docs/language.md"
        rows.setdefault(name, ty)
    return rows


def prelude_schemes() -> dict[str, str]:
    import fcl
    prog = fcl.load_file(str(ROOT / "prelude" / "prelude.fcl"), prelude=False)
    return dict(prog.declarations())


def test_every_primitive_is_documented_with_its_type():
    rows = documented()
    for name, (scheme, _) in PRIMITIVES.items():
        assert name in rows, f"primitive `{name}` is missing from docs/language.md"
        assert rows[name] == format_scheme(scheme), f"docs/language.md gives `{name}` a wrong type"


def test_every_prelude_function_is_documented_with_its_type():
    rows = documented()
    schemes = prelude_schemes()
    assert len(schemes) > 30
    for name, scheme in schemes.items():
        assert name in rows, f"prelude function `{name}` is missing from docs/language.md"
        assert rows[name] == scheme, f"docs/language.md gives `{name}` a wrong type"


def test_no_documented_function_is_unknown():
    known = set(PRIMITIVES) | set(prelude_schemes()) | set(HARDWARE_PARAMETERS)
    extra = [n for n, ty in documented().items() if "->" in ty and n not in known]
    assert not extra, f"docs/language.md documents functions that do not exist: {extra}"


@pytest.mark.parametrize("name", HARDWARE_PARAMETERS)
def test_hardware_parameters_are_documented(name):
    assert f"| `{name}` | `int` |" in LANGUAGE.read_text()


def test_keywords_are_documented():
    from fcl.syntax.grammar import KEYWORDS
    text = LANGUAGE.read_text()
    line = next(l for l in text.splitlines() if l.startswith("- **Keywords**"))
    block = text[text.index(line):text.index("## 2.")]
    assert sorted(re.findall(r"[a-z]+", block.split("**:", 1)[1])) == sorted(KEYWORDS)


PASS_TABLE = re.compile(r"^\| pass \| kind \| what it does \|\n\| --- \| --- \| --- \|\n(?:\|.*\|\n)*", re.M)


def pass_table() -> str:
    """The Markdown table of the pass pipeline, one row a pass in the order they run."""
    from fcl.codegen.passes import PIPELINE
    rows = ["| pass | kind | what it does |", "| --- | --- | --- |"]
    for p in PIPELINE:
        kind = "required" if not p.optimising else "optimising" if p.default else "optional (`--pass`)"
        rows.append(f"| `{p.name}` | {kind} | {p.description.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"


def test_compiler_doc_lists_the_passes_in_pipeline_order(update_golden):
    text = COMPILER.read_text()
    tables = PASS_TABLE.findall(text)
    assert len(tables) == 1, "docs/compiler.md needs one table `| pass | kind | what it does |`"
    if update_golden and tables[0] != pass_table():
        COMPILER.write_text(text.replace(tables[0], pass_table()))
        return
    assert tables[0] == pass_table(), ("docs/compiler.md's pass table is not PIPELINE's; "
                                       "run pytest tests/test_docs.py --update-golden")


def layout_modules() -> set[str]:
    """The modules docs/compiler.md's Layout block names: a line that starts with `fcl/d/` or `fcl/d/x.py`
    (and the lines indented below it) names `fcl/d/` + every `y.py` it holds."""
    block = COMPILER.read_text().split("## Layout", 1)[1].split("```", 2)[1]
    named, folder = set(), None
    for line in block.splitlines():
        if line.strip() and not line[0].isspace():
            head = line.split()[0]
            folder = head[:head.rindex("/") + 1] if head.startswith("fcl/") else None
        if folder is not None:
            named.update(folder + m.rsplit("/", 1)[-1] for m in re.findall(r"[\w/]*\w+\.py\b", line))
    return named


def test_layout_names_every_module():
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "fcl").rglob("*.py")}
    named = layout_modules()
    optional = {m for m in modules if m.endswith("/__init__.py") and m != "fcl/__init__.py"}
    assert not named - modules, f"docs/compiler.md's Layout names modules that do not exist: {sorted(named - modules)}"
    missing = modules - optional - named
    assert not missing, f"docs/compiler.md's Layout leaves out: {sorted(missing)}"


def test_compiler_doc_lists_every_limitation():
    from fcl.base.errors import LIMITATIONS
    section = COMPILER.read_text().split("## What the compiler does not do yet", 1)[1].split("\n## ", 1)[0]
    listed = dict(re.findall(r"^- `([a-z-]+)`: (.+)$", section, re.M))
    assert listed == LIMITATIONS, "docs/compiler.md's list is not fcl.base.errors.LIMITATIONS"


def test_the_compiler_raises_every_limitation():
    from fcl.base.errors import LIMITATIONS
    code = "\n".join(p.read_text() for p in (ROOT / "fcl").rglob("*.py"))
    raised = set(re.findall(r"(?:CompilerLimitation|limitation)\(\s*\"([a-z-]+)\"", code))
    assert raised == set(LIMITATIONS), (sorted(set(LIMITATIONS) - raised), sorted(raised - set(LIMITATIONS)))
