"""Random well-typed FCL programs, for differential testing.

`generate_case(seed)` -> `Case`: one entry point (source text), the hardware
parameters it is compiled for (block sizes, warp sizes that are not powers
of two, small `#NumGroups`) and its arguments.  The same seed always gives
the same case.  Programs are built top-down by type and by level, so they
type-check by construction:

* the top of an entry runs at grid level: `let`s of scalars (looping
  `foldl`s), grid-level `force`s and `while`s, then a push array, a pull
  array or a scalar result;
* push arrays at every level: `push`, `concat`/`interleave` of parts built
  one level down (whose own code may `force` and `while` at its level),
  `seqConcat` over a part's chunks with a carried state, at grid level
  `scanConcat` and `packConcat`, `mapPush`, `zipWithPush`, `if`;
* pull arrays: `generate`, `mapPull`, `zipWith`, `reverse`, `take`, `drop`,
  `halve`, `evenOdds`, `range`, `iota`, array literals, `force`, `while`,
  `if`, `let`; thread-level `seqfor`s;
* scalars (int, double, bool): arithmetic with wrap-around, truncating `/`
  and `%`, shifts, `index`, `lengthPull`, `foldl`, `if`, `let`, hardware
  parameters, conversions (to floats too);
* top-level declarations before the entry, added on first use: helpers with
  a level parameter (`place <lvl> n parts = concat n parts`, ...) applied at
  every level the generator reaches, a scalar helper, a `val`.

Three constructs aim at bugs a uniform grammar rarely reaches: a per-warp
`if` whose condition reads the warp's part, with a warp-level `force` in a
branch (barriers under divergent control); an array literal indexed below its
last element, which reads out of range (literals eager or lazy); and chains of
`let`s or `mapPull`s in which each value uses the previous one twice or more
(at a kernel's top, in per-element code, host-computable), whose code grows
exponentially unless shared values are named.

Four more keep the code a one-operator compiler bug would change live and
run-time dependent (planted mutations went unnoticed without them, see
docs/fuzzing.md): every top-level name reaches the result (an array through a
"digest", a top-level `foldl` that reads every element in order); int leaves
that read elements with `/`, `%`, `abs` and shifts (negative dividends,
negative and non-constant divisors, shift counts 16 to 31), which the compiler
can neither fold nor prove non-negative; parts forced at their own level
(warp or block) and read back reversed and rotated, so each element is read by
other work-items than its writer; and let-bound arrays read at positions that
depend on the element.

Ids and loop variables (indices of `generate` at every level, elements of
ranges that start below zero, the steps of `seqConcat`, `seqfor` and `foldl`
over a range) go below zero and are divided, compared, shifted, converted
and used as indices there (work-item ids are unsigned in OpenCL, FCL's are
ints); one result in eight is a grid's ids so.

Sizes stay small (the evaluator is an interpreter).  Indexing is kept in
range where the generator can see the length; where it cannot (an empty
array), the evaluator reports an error.  Some cases make it report one on
purpose: parts whose length is not `concat`'s, `interleave` positions outside
the result, written twice or never, divisors that are zero for some data or
at one id, lengths below zero for some arguments.  The compiled program must
then report a located run-time error too (fcl/fuzz/worker.py).

`Gen` is built of parts, one a family of expressions: gen_base.py (the state,
weighted choice, fresh names, the helpers, sizes), gen_scalars.py,
gen_pull.py, gen_push.py.  This module adds the body of the entry (`Gen.top`)
and `generate_case`.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from fcl.base.hw import LEVEL_KEYWORDS
from fcl.fuzz.gen_base import BLOCK, GRID, THREAD, WARP
from fcl.fuzz.gen_pull import PullGen
from fcl.fuzz.gen_push import PushGen
from fcl.fuzz.gen_scalars import ScalarGen

# Entry names that are also OpenCL C keywords, types or built-ins, or not C identifiers.
AWKWARD_NAMES = ("main", "kernel", "float4", "global", "restrict", "fcl_add", "sin", "rev'",
                 "local", "barrier", "get_group_id", "x_'")


@dataclass
class Case:
    """One generated program with the hardware it is compiled for and its arguments."""
    seed: int
    source: str
    entry: str
    args: list            # FCL literal texts, as `fclc run` takes them
    block_size: int
    warp_size: int
    num_groups: int
    features: list = field(default_factory=list)

    def program_text(self) -> str:
        """The case as an FCL file with a test-block header (for keeping failures)."""
        return (f"-- fuzz seed {self.seed}: #BlockSize {self.block_size}, #WarpSize {self.warp_size}, "
                f"#NumGroups {self.num_groups}\n{self.source}\n-- == entry: {self.entry}\n"
                f"-- input {{ {' '.join(self.args)} }}\n")


class Gen(ScalarGen, PullGen, PushGen):
    """One program's generator: the expression families together, and the entry's body."""

    # -- the entry point

    def top(self, env, depth) -> str:
        """The body of an entry: lets at grid level, then the result."""
        if self.r.random() < 0.55 and self.fuel > 0:
            v = self.fresh("t")
            kind = self.r.choice(["fold", "force", "force", "while", "pull", "scalar", "chain"])
            if kind == "fold":
                value, t = self.fold(env, "int", depth - 1, GRID), "int"
                if self.r.random() < 0.4:     # a branch that loops, at the kernel's top
                    arrays = [n for n, ty in env.items() if ty.startswith("[")]
                    cond = f"lengthPull {self.r.choice(arrays)} > {self.r.choice([0, 2, 5, 10, 40])}"
                    value = f"if {cond} then {value} else {self.int_(env, 1, GRID)}"
                    self.features.add("if of a loop at the top")
            elif kind == "force":
                level = self.r.choice([GRID, GRID, BLOCK, WARP, THREAD])
                value, t = f"force {self.atom(self.push(env, 'int', depth - 1, GRID, True, level))}", "[int]"
                self.features.add(f"force {LEVEL_KEYWORDS[level]}")
            elif kind == "while":
                value, t = self.while_(env, "int", depth - 1, GRID, True), "[int]"
            elif kind == "pull":
                value, t = self.pull(env, "int", depth - 1, GRID, True), "[int]"
            elif kind == "chain":
                return self.top_chain(env, depth)
            else:
                t = self.elem_type()
                value = self.scalar(env, t, depth - 1, GRID)
            env2 = {**env, v: t}
            if t == "[int]":
                # every work-item reads every element (the writers' barrier, the parts' places),
                # in order, so the result depends on all of them
                dg, a, x = self.fresh("dg"), self.fresh("acc"), self.fresh("x")
                self.features.add("top digest")
                self.chain_ends.append(dg)
                env2[dg] = "int"
                return (f"let {v} = {value}\n  in let {dg} = foldl (fn {a} => fn {x} => ({a} * 3) ^ {x}) 0 {v}\n"
                        f"  in {self.top(env2, depth)}")
            if t == "int":
                self.chain_ends.append(v)
            else:
                self.chain_ends.append(f"d2i (min 1000000.0 (max (-1000000.0) ({v} * 16.0)))")
            return f"let {v} = {value}\n  in {self.top(env2, depth)}"
        ty = self.elem_type()
        kind = self.r.choice(["push", "push", "push", "pull", "scalar"])
        if kind != "scalar" and self.r.random() < 0.15:
            out = self.grid_ids(env, ty, depth, kind)
        elif kind == "push":
            out = self.push(env, ty, depth, GRID, True, GRID)
        elif kind == "pull":
            out = self.pull(env, ty, depth, GRID, True)
        else:
            out = self.scalar(env, ty, depth, GRID)
        if self.chain_ends:
            used = " + ".join(self.atom(u) for u in self.chain_ends)
            used = f"i2d ({used})" if ty == "double" else f"({used})"
            if kind == "scalar":
                return f"{self.atom(out)} + {used}"
            x = self.fresh("x")
            out = f"{'mapPush' if kind == 'push' else 'mapPull'} (fn {x} => {x} + {used}) {self.atom(out)}"
        if ty == "int" and kind != "scalar" and self.r.random() < 0.12:
            # a result of floats (doubles): an int computed in another type shows as such
            z = self.fresh("z")
            conv = "i2d" if self.doubles and self.r.random() < 0.5 else "i2f"
            self.features.add("converted result")
            out = f"{'mapPush' if kind == 'push' else 'mapPull'} (fn {z} => {conv} {z}) {self.atom(out)}"
        return out

    def grid_ids(self, env, ty, depth, kind) -> str:
        """A result whose elements are work-items' global ids in arithmetic that goes
        negative: `push <grid> (generate 9 (fn i => (i - 7) / 2))`,
        `mapPull (fn z => ...) (range (-1) ((-1) + 9))` (work-item ids are unsigned in
        OpenCL; FCL's are ints)."""
        self.features.add("grid ids")
        n = str(self.r.choice([1, 2, 3, 5, 8, 9, 13, 16, 31, 33, 100])) if self.r.random() < 0.7 \
            else self.size(env, 0, GRID, negative=False)
        if self.r.random() < 0.5:
            out = f"generate {self.atom(n)} ({self.id_fn(env, ty, depth, 'i', 1.0)})"
        else:
            out = f"mapPull ({self.id_fn(env, ty, depth, 'z', 1.0)}) ({self.range_(env, GRID, n)})"
        return f"push <grid> ({out})" if kind == "push" else out

    def top_chain(self, env, depth) -> str:
        """Lets at the kernel's top, each using the previous value twice or more; the
        last one is used by the result."""
        text, last, kind = self.chain_lets(env, GRID, "\n  ")
        self.features.add(f"top chain {kind}")
        self.chain_ends.append(last)
        return text + "\n  " + self.top({**env, last: "int"}, depth)


HARDWARE = [(32, 256), (32, 64), (8, 32), (3, 12), (6, 24), (4, 64), (12, 48), (5, 5), (16, 128), (2, 6)]


def generate_case(seed: int) -> Case:
    """The random case for `seed` (deterministic)."""
    r = random.Random(seed)
    doubles = r.random() < 0.3
    g = Gen(r, doubles)
    g.fuel = r.choice([20, 40, 60, 90])
    env = {"k": "int", "arr": "[int]"}
    params = ["k", "arr"]
    if doubles:
        env["darr"] = "[double]"
        params.append("darr")
    depth = r.choice([3, 4, 5, 6])
    body = g.top(env, depth)
    name = r.choice(AWKWARD_NAMES) if r.random() < 0.04 else f"f{seed}"
    source = f"{g.declarations()}fun {name} {' '.join(params)} =\n  {body}\n"
    if any(len(set(re.findall(rf"\b{h} <(\w+)>", body))) > 1 for h in g.helpers):
        g.features.add("helper at several levels")
    warp, block = r.choice(HARDWARE)
    groups = r.choice([1, 2, 3, 5, 1024, 1024])
    n = r.choice([0, 1, 2, 3, 5, 7, 8, 16, 31, 32, 33, 64, 100, 129, 200])
    vals = [r.randint(-50, 50) if r.random() < 0.9 else r.randint(-2 ** 31, 2 ** 31 - 1) for _ in range(n)]
    args = [str(r.randint(0, 9)), "[" + ", ".join(map(str, vals)) + "]"]
    if doubles:
        dn = r.choice([0, 1, 5, 17, 64, 100])
        args.append("[" + ", ".join(repr(round(r.uniform(-10, 10), 3)) for _ in range(dn)) + "]")
    return Case(seed, source, name, args, block, warp, groups, sorted(g.features))
