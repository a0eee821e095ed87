"""Grammar-aware mutations of FCL programs, for robustness testing.

`mutants(text, rng)` yields program texts derived from a valid program by
one random edit: on the AST (a subexpression replaced by another one of the
same program, by a literal at a boundary, by an unbound name; operators,
levels and argument orders changed; a `let` dropped) or on the tokens (one
deleted, duplicated or swapped with its neighbour; a bracket dropped).
`check_mutant(text)` runs the front end, the evaluator and the lowering on
it and returns None when every problem is a located FCLError, else a
description of the traceback or internal error.

PLANTED are one-operator bugs of the compiler, to measure what the
differential tester finds (docs/fuzzing.md, "Planted one-operator
mutations"):

    python -m fcl.fuzz.mutate --list
    python -m fcl.fuzz.mutate NAME DIR     # plant NAME in the copy of the source tree at DIR

Plant them only in a throwaway copy (`git worktree add --detach /tmp/fclwt
HEAD`), then run `python -m fcl.fuzz --seeds 0:210 --stop -j 1` there: the
first failing seed plus one is the number of seeds it takes.  A mutation
whose text is no longer in its file (the code moved on) is an error, never a
silent no-op.
"""
from __future__ import annotations

import argparse
import dataclasses
import random
import re
import sys
from pathlib import Path

from fcl.api.kernel import default_type
from fcl.api.program import load
from fcl.base.errors import FCLError, NO_SOURCE
from fcl.base.hw import LEVEL_KEYWORDS
from fcl.codegen.lower.entry import lower_entry
from fcl.fuzz.minimize import replace_at, subexprs
from fcl.syntax import ast as A
from fcl.syntax import parse_program
from fcl.syntax.pretty import print_decl
from fcl.types import terms as T

HW = {"#BlockSize": 64, "#WarpSize": 32, "#NumGroups": 8}
BOUNDARY_INTS = (0, 1, -1, 2147483647, -2147483648, 65536)
OPS = ("+", "-", "*", "/", "%", "div", "mod", "<", "<=", "==", "!=", "&&", "||", "&", "|", "^",
       "<<", ">>", "|>", ".")
TOKEN = re.compile(r"--[^\n]*|\(\*|\*\)|\d+(?:\.\d+)?(?:e-?\d+)?f?|[A-Za-z_#'][\w']*|=>|->|<=|>=|==|!=|&&|\|\||\|>|<<|>>|\S")


def ast_mutant(program: A.Program, rng: random.Random, last: bool = False) -> A.Program | None:
    vals = [k for k, d in enumerate(program.decls) if isinstance(d, A.Val)]
    if not vals:
        return None
    k = vals[-1] if last else rng.choice(vals)
    d = program.decls[k]
    nodes = subexprs(d.value)
    path, node = rng.choice(nodes)
    kind = rng.randrange(7)
    if kind == 0:                                    # another subexpression of the program
        other = rng.choice([n for _, n in subexprs(program.decls[rng.choice(vals)].value)])
        new = other
    elif kind == 1:
        new = A.IntLit(rng.choice(BOUNDARY_INTS))
    elif kind == 2:
        new = A.Var(rng.choice(["undefinedName", "x", "arr", "force", "push", "concat", "while"]))
    elif kind == 3 and isinstance(node, A.BinOp):
        new = dataclasses.replace(node, op=rng.choice(OPS))
    elif kind == 4 and isinstance(node, A.LevelApp):
        new = dataclasses.replace(node, level=A.LNamed(rng.choice(LEVEL_KEYWORDS)))
    elif kind == 5 and isinstance(node, A.App) and isinstance(node.fn, A.App):
        new = A.App(A.App(node.fn.fn, node.arg), node.fn.arg)        # swap two arguments
    elif kind == 6 and isinstance(node, A.Let):
        new = node.body
    else:
        new = A.IntLit(rng.choice(BOUNDARY_INTS))
    decls = list(program.decls)
    decls[k] = dataclasses.replace(d, value=replace_at(d.value, path, new))
    return dataclasses.replace(program, decls=tuple(decls))


def token_mutant(text: str, rng: random.Random) -> str:
    toks = [m for m in TOKEN.finditer(text) if not m.group(0).startswith("--")]
    if not toks:
        return text
    m = rng.choice(toks)
    a, b = m.span()
    kind = rng.randrange(5)
    if kind == 0:
        return text[:a] + text[b:]
    if kind == 1:
        return text[:a] + m.group(0) + " " + text[a:]
    if kind == 2:
        other = rng.choice(toks).group(0)
        return text[:a] + other + text[b:]
    if kind == 3:
        return text[:a] + rng.choice(["(", ")", "[", "]", "<", ">", "=>", ",", "-", "'", "#", "\"", "9" * 60]) + text[b:]
    return text[:a] + "9" * rng.choice([11, 400, 5000]) + text[b:]


def mutants(text: str, rng: random.Random, count: int):
    """`count` mutants of `text` (its comments dropped first: they only cost parsing time)."""
    whole = parse_program(text, "mutant.fcl")
    vals = [k for k, d in enumerate(whole.decls) if isinstance(d, A.Val)]
    for _ in range(count):
        # one declaration and those it uses (a small text parses fast)
        program = dataclasses.replace(whole, decls=tuple(closure(whole.decls, rng.choice(vals))))
        if rng.random() < 0.6:
            m = ast_mutant(program, rng, last=True)
            if m is not None:
                yield "\n".join(print_decl(d) for d in m.decls) + "\n"
                continue
        yield token_mutant("\n".join(print_decl(d) for d in program.decls) + "\n", rng)


def closure(decls, k: int) -> list:
    """Declaration k with the earlier declarations (and sigs) it uses, in order."""
    names = {d.name: i for i, d in enumerate(decls[:k]) if isinstance(d, A.Val)}
    keep, todo = {k}, [k]
    while todo:
        d = decls[todo.pop()]
        for _, node in subexprs(d.value):
            if isinstance(node, A.Var) and node.name in names and names[node.name] not in keep:
                keep.add(names[node.name])
                todo.append(names[node.name])
    for i in list(keep):
        if i > 0 and isinstance(decls[i - 1], A.Sig) and decls[i - 1].name == decls[i].name:
            keep.add(i - 1)
    return [decls[i] for i in sorted(keep)]


def check_mutant(text: str, eval_args: dict | None = None) -> str | None:
    """None when `text` loads, evaluates and lowers without a traceback or internal
    error (located FCLErrors are fine); else what went wrong."""
    import traceback

    def located(e):
        return e.span is not None and e.span.source is not NO_SOURCE

    try:
        prog = load(text, name="mutant.fcl")
    except FCLError as e:
        return None if located(e) else f"unlocated {type(e).__name__}: {e.message}"
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__} while loading: {e}\n{traceback.format_exc(limit=8)}"
    for name in prog.names():
        try:
            scheme = prog.scheme(name)
            t, params = scheme.body, []
            if isinstance(t, T.TLevelFunT):
                continue
            while isinstance(t, T.TFunT):
                params.append(default_type(t.arg))
                t = t.res
            lower_entry(list(prog.decls), name, params, HW, prog.span_of(name))
            if eval_args and name in eval_args:
                prog.evaluate(name, *eval_args[name], block_size=64)
        except FCLError:
            continue
        except RecursionError:
            continue
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__} in {name}: {e}\n{traceback.format_exc(limit=8)}"
    return None


def check_examples(paths, count: int, seed: int = 0, jobs: int = 2) -> tuple[int, list]:
    """(mutants checked, [(path, problem, mutant text)]) for `count` mutants spread over `paths`."""
    from concurrent.futures import ProcessPoolExecutor
    rng = random.Random(seed)
    jobs_list = []
    per = max(1, -(-count // len(paths)))
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        jobs_list += [(str(path), m) for m in mutants(text, rng, per)]
    with ProcessPoolExecutor(jobs) as pool:
        problems = list(pool.map(_check_one, jobs_list, chunksize=25))
    return len(jobs_list), [(p, r, m) for (p, m), r in zip(jobs_list, problems) if r is not None]


def _check_one(job):
    return check_mutant(job[1])


# ---------------------------------------------------------------- planted compiler bugs

# name: (file, what it is, the text, the text planted in its place)
PLANTED = {
    "mod-floors": ("fcl/codegen/opencl.py", "floor instead of truncating `%` in fcl_mod",
                   "(b == 0 || b == -1) ? 0 : a % b;",
                   "(b == 0 || b == -1) ? 0 : (a % b != 0 && (a % b < 0) != (b < 0) ? a % b + b : a % b);"),
    "warp-slices": ("fcl/codegen/lower/schemes.py", "overlapping warp slices (`wid * (room - 1)`) in placement",
                    'return rec, K.mul(K.HwId("int", "wid"), room)',
                    'return rec, K.mul(K.HwId("int", "wid"), K.sub(room, K.cint(1)))'),
    "abs-off-by-one": ("fcl/codegen/opencl.py", "`a < -1` for `a < 0` in fcl_abs",
                       "fcl_abs(int a) {{ return a < 0 ?", "fcl_abs(int a) {{ return a < -1 ?"),
    "no-block-barrier": ("fcl/codegen/lower/schemes.py",
                         "no barrier after a block-level force (`level < Level.BLOCK`) in sync",
                         "if level >= Level.WARP and level <= Level.BLOCK:",
                         "if level >= Level.WARP and level < Level.BLOCK:"),
    "shift-4-bits": ("fcl/codegen/opencl.py", "shift counts masked to 4 bits (`b & 15`) in fcl_shl",
                     "(uint)a << (b & 31)", "(uint)a << (b & 15)"),
    "concat-overlap": ("fcl/codegen/lower/primitives.py", "overlapping parts of a concat (`p * (n - 1) + j`)",
                       "return K.add(K.mul(p, n.e), j), K.Const(",
                       "return K.add(K.mul(p, K.sub(n.e, K.cint(1))), j), K.Const("),
    "no-claims": ("fcl/codegen/lower/claims.py", "no claims: every interleave written as if proven one-to-one",
                  "if self.rec is None:\n            return None", "if True:\n            return None"),
    "lax-radix": ("fcl/codegen/analysis/injective.py",
                  "a coefficient need only reach the one before, not times its width, in the one-to-one proof",
                  "self.at_least(after, _mul(mag, width))", "self.at_least(after, mag)"),
}


def plant(name: str, root: Path) -> None:
    path, _, old, new = PLANTED[name]
    file = root / path
    text = file.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{file}: the text of mutation {name!r} occurs {text.count(old)} times, not once: "
                         f"{old!r}")
    file.write_text(text.replace(old, new))


def plant_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fcl.fuzz.mutate",
                                 description="Plant a one-operator compiler bug in a throwaway copy of the source.")
    ap.add_argument("--list", action="store_true", help="list the mutations")
    ap.add_argument("name", nargs="?", choices=sorted(PLANTED))
    ap.add_argument("root", nargs="?", type=Path, help="the root of a throwaway copy of the source tree")
    args = ap.parse_args(argv)
    if args.list or not args.name:
        for name, (path, what, _, _) in PLANTED.items():
            print(f"{name:18} {path:32} {what}")
        return 0
    if args.root is None:
        ap.error("give the root of a throwaway copy (git worktree add /tmp/fclwt HEAD)")
    if (args.root / ".git").is_dir():
        ap.error(f"{args.root} is a main checkout; plant in a throwaway worktree")
    plant(args.name, args.root)
    return 0


if __name__ == "__main__":
    sys.exit(plant_main())
