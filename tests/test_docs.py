"""docs/language.md stays in sync with the implementation.

Every primitive (fcl.types.builtins) and every prelude declaration has a row
`| `name` | `type` | meaning |` in the reference, and the type written there
is exactly the scheme `fclc check` prints.
"""
import re
from pathlib import Path

import pytest

from fcl.types import format_scheme
from fcl.types.builtins import PRIMITIVES

ROOT = Path(__file__).resolve().parents[1]
LANGUAGE = ROOT / "docs" / "language.md"
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
    known = set(PRIMITIVES) | set(prelude_schemes()) | {"#BlockSize", "#WarpSize", "#NumGroups"}
    extra = [n for n, ty in documented().items() if "->" in ty and n not in known]
    assert not extra, f"docs/language.md documents functions that do not exist: {extra}"


@pytest.mark.parametrize("name", ["#BlockSize", "#WarpSize", "#NumGroups"])
def test_hardware_parameters_are_documented(name):
    assert f"| `{name}` | `int` |" in LANGUAGE.read_text()


def test_keywords_are_documented():
    from fcl.syntax.grammar import KEYWORDS
    text = LANGUAGE.read_text()
    line = next(l for l in text.splitlines() if l.startswith("- **Keywords**"))
    block = text[text.index(line):text.index("## 2.")]
    assert sorted(re.findall(r"[a-z]+", block.split("**:", 1)[1])) == sorted(KEYWORDS)
