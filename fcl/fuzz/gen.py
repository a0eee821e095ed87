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
  `seqConcat` over a part's chunks with a carried state, `mapPush`,
  `zipWithPush`, `if`;
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
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from fcl.base.hw import LEVEL_KEYWORDS

THREAD, WARP, BLOCK, GRID = 0, 1, 2, 3
LEVELS = LEVEL_KEYWORDS

# Entry names that are also OpenCL C keywords, types or built-ins, or not C identifiers.
AWKWARD_NAMES = ("main", "kernel", "float4", "global", "restrict", "fcl_add", "sin", "rev'",
                 "local", "barrier", "get_group_id", "x_'")


@dataclass
class Case:
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


class Gen:
    """One program's generator; `depth` bounds nesting, `fuel` the total size."""

    def __init__(self, rng: random.Random, doubles: bool):
        self.r = rng
        self.n = 0
        self.fuel = 60
        self.doubles = doubles
        self.features: set[str] = set()
        self.chain_ends: list[str] = []     # top-level ints the result must use (chains, lets, digests)
        self.ids: set[str] = set()          # int names bound to positions: indices, loop counters, range elements
        self.helpers: dict[str, str] = {}   # top-level declarations the entry calls, in order of first use
        self.sigs = rng.random() < 0.7      # helpers with a `sig` (else their types are inferred)

    # -- helpers

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def pick(self, options):
        """options: [(weight, thunk)]; thunks whose weight is 0 are skipped."""
        options = [(w, f) for w, f in options if w > 0]
        total = sum(w for w, _ in options)
        x = self.r.uniform(0, total)
        for w, f in options:
            x -= w
            if x <= 0:
                return f()
        return options[-1][1]()

    def spend(self, depth: int) -> bool:
        """Whether there is room for a compound form."""
        self.fuel -= 1
        return depth > 0 and self.fuel > 0

    def vars_of(self, env, ty):
        return [n for n, t in env.items() if t == ty]

    # -- top-level declarations the entry calls

    HELPERS = {
        "off": (None, "val off = 5"),
        "half": ("int -> int", "fun half x = (x - 7) / 2"),
        "place": ("forall 'a. <lvl> -> int -> [['a]<lvl>] -> ['a]<1+lvl>",
                  "fun place <lvl> n parts = concat n parts"),
        "weave": ("forall 'a. <lvl> -> int -> [['a]<lvl>] -> ['a]<1+lvl>",
                  "fun weave <lvl> n parts = interleave n (fn ij => snd ij * lengthPull parts + fst ij) parts"),
        "pushAt": ("forall 'a. <lvl> -> ['a] -> ['a]<lvl>", "fun pushAt <lvl> arr = push <lvl> arr"),
        "forceAt": ("forall 'a. <lvl> -> ['a] -> ['a]", "fun forceAt <lvl> arr = force (push <lvl> arr)"),
        "ramp": ("<lvl> -> int -> [int]<lvl>",
                 "fun ramp <lvl> n = push <lvl> (generate n (fn i => (i - 3) / 2 + (i - 7) % 3))"),
    }

    def helper(self, name: str) -> str:
        """The name of a top-level declaration (added on first use); those with level
        parameters are applied at every level the generator reaches."""
        if name not in self.helpers:
            sig, text = self.HELPERS[name]
            self.helpers[name] = (f"sig {name} : {sig}\n" if sig and self.sigs else "") + text + "\n"
            self.features.add(f"helper {name}")
        return name

    def declarations(self) -> str:
        return "".join(self.helpers.values())

    # -- scalars

    def scalar(self, env, ty: str, depth: int, lvl: int) -> str:
        if ty == "int":
            return self.int_(env, depth, lvl)
        if ty == "double":
            return self.double(env, depth, lvl)
        return self.bool_(env, depth, lvl)

    def int_lit(self) -> str:
        v = self.r.choice([0, 1, 2, 3, 5, 7, 9, 13, 100, -1, -3, -17, 2147483647, -2147483647, 65536])
        return f"({v})" if v < 0 else str(v)

    def int_(self, env, depth, lvl) -> str:
        names = self.vars_of(env, "int")
        if not self.spend(depth):
            return self.r.choice(names) if names and self.r.random() < 0.7 else self.int_lit()
        d = depth - 1
        i = lambda: self.int_(env, d, lvl)  # noqa: E731
        arrays = self.vars_of(env, "[int]")
        options = [
            (3, lambda: self.r.choice(names) if names else self.int_lit()),
            (1, self.int_lit),
            (4, lambda: f"({i()} {self.r.choice(['+', '-', '*', '&', '|', '^'])} {i()})"),
            (2, lambda: f"({i()} {self.r.choice(['/', '%', 'div', 'mod'])} (({i()} & 7) + 1))"),
            (1, lambda: f"({i()} {self.r.choice(['<<', '>>'])} {i()})"),
            (1, lambda: f"{self.r.choice(['min', 'max'])} {self.atom(i())} {self.atom(i())}"),
            (1, lambda: f"abs {self.atom(i())}"),
            (1, lambda: self.r.choice(["#BlockSize", "#WarpSize", "#NumGroups"])),
            (3, lambda: self.index(env, "int", d, lvl)),
            (2, lambda: f"lengthPull {self.atom(self.pull(env, 'int', d, lvl, False))}"),
            (3, lambda: self.fold(env, "int", d, lvl)),
            (2, lambda: f"(if {self.bool_(env, d, lvl)} then {i()} else {i()})"),
            (2, lambda: self.let_scalar(env, "int", d, lvl)),
            (1, lambda: f"b2i {self.atom(self.bool_(env, d, lvl))}"),
            (1 if self.doubles else 0,
             lambda: f"d2i (min 1000000.0 (max (-1000000.0) {self.atom(self.double(env, d, lvl))}))"),
            (1 if arrays else 0, lambda: f"lengthPull {self.r.choice(arrays)}"),
            (1 if lvl < GRID and arrays else 0, lambda: self.literal_pick(env, "int", d, lvl)),
            (0.5, lambda: self.let_chain(env, lvl)),
            (4 if self.data_ints(env) else 0, lambda: self.data_op(env, d, lvl)),
            (5 if self.id_names(env) else 0, lambda: self.id_op(env, d, lvl)),
        ]
        return self.pick(options)

    def id_names(self, env) -> list[str]:
        return [n for n, t in env.items() if t == "int" and n in self.ids]

    def id_minus(self, env, v=None) -> str:
        """An id or loop variable moved below zero: `(i - 7)`, `(3 - i)`, `((-1) + i)`."""
        v = v or self.r.choice(self.id_names(env))
        c = self.r.choice(["1", "2", "3", "5", "7", "10", "(#WarpSize / 2)", "off"])
        if c == "off":
            c = self.helper("off")
        elif c.isdigit() and self.r.random() < 0.25:
            return f"((-{c}) + {v})"
        return f"({c} - {v})" if self.r.random() < 0.25 else f"({v} - {c})"

    def id_op(self, env, depth, lvl, safe: bool = False, v=None) -> str:
        """Arithmetic that goes negative on ids and loop variables (an id computed in an
        unsigned type gives huge values, wrong rounding, comparisons that never hold):
        `/`, `%`, `div`, `mod` and shifts of it, comparisons of it, conversions of it, an
        index from it; unless `safe`, now and then a divisor that is zero at one id."""
        b = self.id_minus(env, v)
        kind = self.r.choice(["div", "div", "cmp", "cmp", "conv", "misc", "abs", "index", "helper"]
                             + ([] if safe else ["zero"]))
        self.features.add(f"id {kind}")
        if kind == "div":
            divisor = self.r.choice(["2", "3", "4", "(-2)", "7"])
            if self.data_ints(env) and self.r.random() < 0.4:     # not constant: fcl_div and fcl_mod
                d = self.datum(env)
                divisor = self.r.choice([f"({d} | 1)", f"(if {d} == 0 then (-3) else {d})", f"(({d} & 7) + 1)"])
            return f"({b} {self.r.choice(['/', '%', 'div', 'mod'])} {divisor})"
        if kind == "abs":       # -1, 0 and 1 at neighbouring ids
            return self.r.choice([f"abs {b}", f"abs ({b} % 3)", f"abs {b} - {self.r.choice(['1', '2'])}"])
        if kind == "cmp":
            cmp = f"{b} {self.r.choice(['<', '<', '<=', '>', '>='])} {self.r.choice(['0', '0', '(-1)', '2'])}"
            if self.r.random() < 0.4:
                return f"b2i ({cmp})"
            return f"(if {cmp} then {self.int_(env, depth, lvl)} else {self.int_(env, depth, lvl)})"
        if kind == "conv":
            if self.doubles and self.r.random() < 0.5:
                return self.r.choice([f"d2i (i2d {b} * 0.5)", f"d2i (floor (i2d {b} / 4.0))"])
            return self.r.choice([f"f2i (i2f {b} * 0.5f)", f"f2i (floor (i2f {b} / 4.0f))", f"f2i (i2f {b})"])
        if kind == "misc":
            return self.r.choice([f"({b} >> 1)", f"min {b} 0", f"abs {b}", f"max {b} (-3)", f"({b} * 3)",
                                  f"(3 << ({b} & 31))", f"({b} << ({b} + 12))"])
        if kind == "index":
            arrays = self.vars_of(env, "[int]")
            if arrays:
                a = self.r.choice(arrays)
                n = f"lengthPull {a}"       # a truncating remainder, made non-negative
                return f"(if {n} > 0 then index {a} ((({b} mod {n}) + {n}) % {n}) else {b})"
            return f"({b} mod 5)"
        if kind == "helper":
            return f"{self.helper('half')} {self.atom(b)}"
        a = self.datum(env) if self.data_ints(env) and self.r.random() < 0.5 else self.atom(self.int_(env, depth, lvl))
        self.features.add("zero divisor")
        return f"({a} {self.r.choice(['/', '%', 'div', 'mod'])} {b})"

    def id_body(self, env, ty, depth, v) -> str:
        """The body of a function of the id v (a scalar of `ty`) that uses v in arithmetic
        that goes negative."""
        e = {**env, v: "int"}
        used = self.id_op(e, depth, THREAD, v=v)
        if ty == "double":
            used = f"i2d {self.atom(used)}"
        if self.r.random() < 0.5:
            return used
        return f"{self.atom(used)} {self.r.choice(['+', '-'])} {self.atom(self.scalar(e, ty, depth, THREAD))}"

    def data_ints(self, env) -> list[str]:
        """Int scalars whose values only the device knows: names bound to elements,
        accumulators, indices and lets (not `k`, a static argument the compiler folds),
        and reads of int arrays at positions that vary."""
        names = [n for n, t in env.items() if t == "int" and n != "k"]
        arrays = self.vars_of(env, "[int]")
        reads = [f"index {a} (({self.r.choice(names + ['k', '7'])} & 1023) % lengthPull {a})" for a in arrays[:3]]
        return names + reads

    def datum(self, env) -> str:
        return self.atom(self.r.choice(self.data_ints(env)))

    def data_op(self, env, depth, lvl) -> str:
        """`/`, `%`, `abs` and shifts of run-time data: negative dividends, negative and
        non-constant divisors (a constant divisor prints as C's own operator, a proved
        non-negative one as C's too, so only these reach the helpers), shift counts
        16 to 31 and negative ones."""
        a = self.datum(env) if depth <= 0 or self.r.random() < 0.6 else self.atom(self.int_(env, depth, lvl))
        b = self.datum(env)
        kind = self.r.choice(["div", "div", "div", "abs", "shift", "shift"])
        self.features.add(f"data {kind}")
        if kind == "div":
            divisor = self.r.choice([f"({b} | 1)", f"(if {b} == 0 then (-3) else {b})", f"(({b} % 5) - 7)",
                                     f"(0 - (({b} & 7) + 1))"])
            if self.r.random() < 0.15:      # a divisor that is zero for some data
                divisor = self.r.choice([b, f"({b} % 5)", f"({b} & 3)"])
                self.features.add("zero divisor")
            return f"({a} {self.r.choice(['/', '%', '%', 'div', 'mod'])} {divisor})"
        if kind == "abs":
            return self.r.choice([f"abs ({a} % {self.r.choice([2, 3, 4])})", f"abs ({a} - {b})",
                                  f"abs ({a} / {self.r.choice([2, 7])})", f"abs {a}"])
        return self.r.choice([f"({a} << ({b} & 31))", f"({a} >> ({b} & 31))", f"({a} << {b})",
                              f"({a} << {self.r.randint(16, 31)})", f"({a} >> {b})"])

    def double_lit(self) -> str:
        v = self.r.choice([0.0, 1.0, 0.5, 2.25, 3.0, 100.0, -1.5, -0.125])
        return f"({v!r})" if v < 0 else repr(v)

    def double(self, env, depth, lvl) -> str:
        names = self.vars_of(env, "double")
        if not self.spend(depth):
            return self.r.choice(names) if names and self.r.random() < 0.7 else self.double_lit()
        d = depth - 1
        x = lambda: self.double(env, d, lvl)  # noqa: E731
        options = [
            (3, lambda: self.r.choice(names) if names else self.double_lit()),
            (1, self.double_lit),
            (4, lambda: f"({x()} {self.r.choice(['+', '-', '*'])} {x()})"),
            (1, lambda: f"({x()} / (abs {self.atom(x())} + 1.0))"),
            (1, lambda: f"{self.r.choice(['min', 'max'])} {self.atom(x())} {self.atom(x())}"),
            (1, lambda: f"{self.r.choice(['sqrt', 'abs'])} (abs {self.atom(x())})"),
            (1, lambda: f"floor {self.atom(x())}"),
            (2, lambda: f"i2d {self.atom(self.int_(env, d, lvl))}"),
            (2, lambda: self.index(env, "double", d, lvl)),
            (2, lambda: self.fold(env, "double", d, lvl)),
            (1, lambda: f"(if {self.bool_(env, d, lvl)} then {x()} else {x()})"),
            (1, lambda: self.let_scalar(env, "double", d, lvl)),
            (1 if lvl < GRID and self.vars_of(env, "[double]") else 0,
             lambda: self.literal_pick(env, "double", d, lvl)),
        ]
        return self.pick(options)

    def bool_(self, env, depth, lvl) -> str:
        if not self.spend(depth):
            return self.r.choice(["true", "false", f"({self.int_(env, 0, lvl)} > {self.int_lit()})"])
        d = depth - 1
        options = [
            (4, lambda: f"({self.int_(env, d, lvl)} {self.r.choice(['<', '<=', '>', '>=', '==', '!='])} "
                        f"{self.int_(env, d, lvl)})"),
            (1 if self.doubles else 0,
             lambda: f"({self.double(env, d, lvl)} {self.r.choice(['<', '>='])} {self.double(env, d, lvl)})"),
            (1, lambda: f"({self.bool_(env, d, lvl)} {self.r.choice(['&&', '||'])} {self.bool_(env, d, lvl)})"),
            (1, lambda: f"(not {self.atom(self.bool_(env, d, lvl))})"),
            (1, lambda: self.r.choice(["true", "false"])),
        ]
        return self.pick(options)

    def atom(self, text: str) -> str:
        plain = text.replace("_", "").replace("'", "").replace("#", "").replace(".", "")
        if plain.isalnum() or (text.startswith("(") and text.endswith(")") and _balanced(text[1:-1])):
            return text
        return f"({text})"

    def index(self, env, ty, depth, lvl) -> str:
        """An in-range index of a (named) array, when it is not empty."""
        arrays = self.vars_of(env, f"[{ty}]")
        i = self.int_(env, depth, lvl)
        if arrays and self.r.random() < 0.6:
            a = self.r.choice(arrays)
            return f"index {a} (({i} & 1023) % lengthPull {a})"
        q = self.fresh("q")
        arr = self.pull(env, ty, depth, lvl, False)
        return f"(let {q} = {arr} in index {q} (({i} & 1023) % lengthPull {q}))"

    def fold(self, env, ty, depth, lvl) -> str:
        a, x = self.fresh("acc"), self.fresh("x")
        elem = self.elem_type()
        if elem == "int" and self.r.random() < 0.3:     # a loop variable that starts below zero
            self.ids.add(x)
            arr = self.range_(env, lvl)
        else:
            arr = self.pull(env, elem, depth, lvl, False)
        inner = {**env, a: ty, x: elem}
        step = self.scalar(inner, ty, depth, THREAD)
        if self.r.random() < 0.5:     # keep the accumulator in the loop
            op = "+" if ty == "double" else self.r.choice(["+", "^", "-"])
            step = f"{a} {op} {self.atom(step)}"
        init = self.scalar(env, ty, 0, lvl)
        self.features.add("foldl")
        return f"foldl (fn {a} => fn {x} => {step}) {self.atom(init)} {self.atom(arr)}"

    def let_scalar(self, env, ty, depth, lvl) -> str:
        v = self.fresh("s")
        vt = self.r.choice(["int", "int", ty])
        value = self.scalar(env, vt, depth, lvl)
        body = self.scalar({**env, v: vt}, ty, depth, lvl)
        return f"(let {v} = {value} in {body})"

    def literal_pick(self, env, ty, depth, lvl) -> str:
        """An array literal indexed below its last element, which binds an unguarded
        `index` that may be out of range: literals are eager (like `let`), so the
        evaluator reports the error and the compiled code must not differ."""
        a = self.r.choice(self.vars_of(env, f"[{ty}]"))
        n = self.r.randint(1, 3)
        elems = [self.scalar(env, ty, depth, lvl) for _ in range(n)]
        s = self.fresh("s")
        at = self.r.choice(["0", "7", "100000", f"(lengthPull {a})", f"(lengthPull {a} + 3)"])
        elems.append(f"(let {s} = index {a} {at} in {s} * {s})")
        self.features.add("literal element out of range")
        # an index the compiler cannot fold (a length is no static argument), so no
        # optimisation drops the last element's code
        return f"index [{', '.join(elems)}] ((lengthPull {a} + ({self.int_(env, depth, lvl)} & 1023)) % {n})"

    CHAIN_STEPS = ("{v} * {v} + {v}", "({v} ^ ({v} >> 3)) + {v}", "{v} + {v} * 7", "max {v} ({v} - 3) + {v}",
                   "(if {v} > 0 then {v} - 1 else {v} + 2)")

    def chain_step(self, v: str) -> str:
        return self.r.choice(self.CHAIN_STEPS).format(v=v)

    def chain_depth(self) -> int:
        return self.r.choice([6, 9, 12, 16, 24])

    def chain_seed(self, env, lvl) -> tuple[str, str]:
        """(seed, kind): host-computable (arguments' lengths and ints), or not (a foldl)."""
        if self.r.random() < 0.5:
            return self.r.choice(["k + lengthPull arr", "lengthPull arr * 3 - k", "k + #WarpSize"]), "host"
        arrays = self.vars_of(env, "[int]")
        return f"foldl (fn {(a := self.fresh('acc'))} => fn {(x := self.fresh('x'))} => {a} + {x}) 0 " \
               f"{self.r.choice(arrays)}", "device"

    def chain_lets(self, env, lvl, after_seed: str = " "):
        """(`let c1 = seed in let c2 = f c1 in ... in `, cN, the seed's kind): each step
        uses the previous value twice or more."""
        seed, kind = self.chain_seed(env, lvl)
        names = [self.fresh("c") for _ in range(self.chain_depth())]
        text = f"let {names[0]} = {seed}{after_seed}in "
        for prev, v in zip(names, names[1:]):
            text += f"let {v} = {self.chain_step(prev)} in "
        return text, names[-1], kind

    def let_chain(self, env, lvl) -> str:
        """`let c1 = seed in let c2 = f c1 in ... in cN`."""
        text, last, kind = self.chain_lets(env, lvl)
        self.features.add(f"let chain {kind}")
        return f"({text}{last})"

    def map_chain(self, env, lvl, top) -> str:
        """mapPull (fn x => f x) (mapPull (fn x => f x) ... arr): each function's argument used twice or more."""
        out = self.pull(env, "int", 0, lvl, top)
        for _ in range(self.chain_depth()):
            x = self.fresh("x")
            out = f"mapPull (fn {x} => {self.chain_step(x)}) {self.atom(out)}"
        self.features.add("map chain")
        return out

    def elem_type(self) -> str:
        return "double" if self.doubles and self.r.random() < 0.25 else "int"

    # -- sizes

    def size(self, env, depth, lvl, negative: bool = True) -> str:
        """A length; unless not `negative`, now and then one below zero for some arguments."""
        arrays = [n for n, t in env.items() if t.startswith("[")]
        a = self.r.choice(arrays) if arrays else None
        options = [
            (1.5 if negative else 0, lambda: self.negative_size(env, a)),
            (4, lambda: str(self.r.choice([0, 1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 33]))),
            (2 if a else 0, lambda: f"lengthPull {a}"),
            (2 if a else 0, lambda: f"(lengthPull {a} / {self.r.choice([2, 3])})"),
            (1 if a else 0, lambda: f"(lengthPull {a} & {self.r.choice([3, 7, 12])})"),
            (1 if a else 0, lambda: f"(if lengthPull {a} > {self.r.choice([3, 4, 10])} then "
                                    f"{self.r.choice([3, 5])} else {self.r.choice([1, 5, 6])})"),
            (1 if a else 0, lambda: f"({self.r.choice([16, 20])} / (lengthPull {a} + 1))"),
            (1 if "k" in env else 0, lambda: self.r.choice(["k", "(k + 3)", "(k * 2)"])),
            (1, lambda: self.r.choice(["#WarpSize", "(#WarpSize + 1)", "(#BlockSize / 2)"])),
        ]
        return self.pick(options)

    def negative_size(self, env, a) -> str:
        self.features.add("negative length")
        if a and self.r.random() < 0.6:
            return f"(lengthPull {a} - {self.r.choice([3, 10, 40])})"
        return self.r.choice(["(k - 5)", "(3 - k)", "(#WarpSize - 4)"]) if "k" in env else "(4 - #WarpSize)"

    # -- pull arrays

    def pull(self, env, ty, depth, lvl, top) -> str:
        """A pull array of `ty` elements, in code run by a unit of level `lvl`."""
        names = self.vars_of(env, f"[{ty}]")
        if not self.spend(depth):
            if names:
                return self.r.choice(names)
            return self.gen_array(env, ty, 0, lvl)
        d = depth - 1
        p = lambda: self.pull(env, ty, d, lvl, top)  # noqa: E731
        options = [
            (3 if names else 0, lambda: self.r.choice(names)),
            (3, lambda: self.gen_array(env, ty, d, lvl)),
            (3, lambda: self.map_pull(env, ty, d, lvl, top)),
            (1, lambda: f"reverse {self.atom(p())}"),
            (1, lambda: f"{self.r.choice(['take', 'drop'])} {self.atom(self.size(env, 0, lvl))} {self.atom(p())}"),
            (1, lambda: f"{self.r.choice(['fst', 'snd'])} ({self.r.choice(['halve', 'evenOdds'])} {self.atom(p())})"),
            (1, lambda: self.zip_with(env, ty, d, lvl, top)),
            (1, lambda: self.literal(env, ty, d, lvl)),
            (1, lambda: f"(if {self.bool_(env, d, lvl)} then {p()} else {p()})"),
            (2, lambda: self.let_in(env, d, lvl, top, lambda e2: self.pull(e2, ty, d, lvl, top), ty)),
            (2, lambda: f"force {self.atom(self.push(env, ty, d, lvl, top, self.level_upto(lvl, top)))}"),
            (1 if lvl >= WARP or lvl == THREAD else 0, lambda: self.while_(env, ty, d, lvl, top)),
            (0.4 if ty == "int" else 0, lambda: self.map_chain(env, lvl, top)),
            (1.5, lambda: self.map_range(env, ty, d, lvl)),
        ]
        return self.pick(options)

    def level_upto(self, lvl, top) -> int:
        """A level at most `lvl` (grid only at the top of a kernel)."""
        hi = lvl if (lvl < GRID or top) else BLOCK
        return self.r.randint(0, hi) if self.r.random() < 0.5 else hi

    def id_fn(self, env, ty, depth, base: str, p: float) -> str:
        """`fn i => body` whose parameter is an id (an index, an element of a range); with
        probability p the body uses it in arithmetic that goes negative."""
        i = self.fresh(base)
        self.ids.add(i)
        if self.r.random() < p:
            return f"fn {i} => {self.id_body(env, ty, depth, i)}"
        return f"fn {i} => {self.scalar({**env, i: 'int'}, ty, depth, THREAD)}"

    def gen_array(self, env, ty, depth, lvl) -> str:
        fn = self.id_fn(env, ty, depth, "i", 0.5)
        self.features.add("generate")
        return f"generate {self.atom(self.size(env, depth, lvl))} ({fn})"

    def range_(self, env, lvl, n=None) -> str:
        """`range (-c) ((-c) + n)` (n + 1 elements from -c), now and then `iota n`."""
        n = n or self.size(env, 0, lvl, negative=False)
        if self.r.random() < 0.2:
            return f"iota {self.atom(n)}"
        c = self.r.choice([1, 1, 2, 3, 7])
        self.features.add("negative range")
        return f"range (-{c}) ((-{c}) + {self.atom(n)})"

    def map_range(self, env, ty, depth, lvl) -> str:
        """mapPull over a range that starts below zero: its elements are ids moved down."""
        return f"mapPull ({self.id_fn(env, ty, depth, 'z', 0.6)}) ({self.range_(env, lvl)})"

    def map_pull(self, env, ty, depth, lvl, top) -> str:
        src = self.elem_type()
        x = self.fresh("x")
        arr = self.pull(env, src, depth, lvl, top)
        body = self.scalar({**env, x: src}, ty, depth, THREAD)
        return f"mapPull (fn {x} => {body}) {self.atom(arr)}"

    def zip_with(self, env, ty, depth, lvl, top) -> str:
        x, y = self.fresh("x"), self.fresh("y")
        a, b = self.pull(env, "int", depth, lvl, top), self.pull(env, ty, depth, lvl, top)
        body = self.scalar({**env, x: "int", y: ty}, ty, depth, THREAD)
        return f"zipWith (fn {x} => fn {y} => {body}) {self.atom(a)} {self.atom(b)}"

    def literal(self, env, ty, depth, lvl) -> str:
        self.features.add("array literal")
        n = self.r.randint(1, 4)
        return "[" + ", ".join(self.scalar(env, ty, depth, lvl) for _ in range(n)) + "]"

    def let_in(self, env, depth, lvl, top, body, ty="int", push=False) -> str:
        v = self.fresh("v")
        kind = self.r.choice(["int", "int", "[int]", "[int]", "force", self.elem_type()])
        if kind == "force":
            level = self.level_upto(lvl, top)
            value = f"force {self.atom(self.push(env, 'int', depth, lvl, top, level))}"
            kind = "[int]"
            self.features.add(f"force {LEVELS[level]}")
        elif kind.startswith("["):
            value = self.pull(env, "int", depth, lvl, top)
        else:
            value = self.scalar(env, kind, depth, lvl)
        out = body({**env, v: kind})
        if kind == "[int]" and self.r.random() < 0.7:
            # each element plus an element of v at a position that depends on the element:
            # v's code stays live, and its elements are read by other work-items than their writers
            x = self.fresh("x")
            pos = f"({x} & 1023)" if ty == "int" else f"d2i (min 1000.0 (max 0.0 {x}))"
            read = f"(if lengthPull {v} > 0 then index {v} (({pos} + {self.r.randint(1, 9)}) % lengthPull {v}) else 0)"
            if ty == "double":
                read = f"i2d {read}"
            self.features.add("let read back")
            out = f"{'mapPush' if push else 'mapPull'} (fn {x} => {x} + {read}) {self.atom(out)}"
        return f"(let {v} = {value} in {out})"

    def while_(self, env, ty, depth, lvl, top, form=None) -> str:
        """A while at a level up to `lvl`: halving steps, a data-dependent count, or a
        data-dependent length (form < 0.2)."""
        level = self.level_upto(lvl, top) if lvl > THREAD else THREAD
        a, i, x = self.fresh("a"), self.fresh("i"), self.fresh("x")
        init = self.pull(env, "int", depth, lvl, top)
        self.features.add(f"while {LEVELS[level]}")
        L = LEVELS[level]
        form = self.r.random() if form is None else form
        self.ids.add(i)
        # the step's index in arithmetic that goes negative (never zero divisors: the
        # loop must end)
        extra = f" + {self.atom(self.id_op({**env, i: 'int'}, 0, THREAD, safe=True))}" if self.r.random() < 0.4 else ""
        if form < 0.2:      # each step one shorter, while the data says so: a length only the device knows
            bound = self.r.choice([5, 10, 30])
            self.features.add("while shrinking")
            out = (f"while (fn {a} => lengthPull {a} > 0 && index {a} 0 < {bound}) "
                   f"(fn {a} => push <{L}> (generate (lengthPull {a} - 1) (fn {i} => index {a} ({i} + 1) + 1{extra}))) "
                   f"(push <{L}> {self.atom(init)})")
        elif form < 0.6:
            limit = self.r.choice([1, 2, 3, 5])
            op = self.r.choice(["+", "max", "-"])
            comb = (f"max (index {a} (2 * {i})) (index {a} (2 * {i} + 1))" if op == "max"
                    else f"index {a} (2 * {i}) {op} index {a} (2 * {i} + 1)")
            out = (f"while (fn {a} => lengthPull {a} > {limit}) "
                   f"(fn {a} => push <{L}> (generate (lengthPull {a} / 2) (fn {i} => {comb}{extra}))) "
                   f"(push <{L}> {self.atom(init)})")
        else:
            bound = self.r.choice([8, 20, 40])
            out = (f"while (fn {a} => lengthPull {a} > 0 && index {a} 0 < {bound}) "
                   f"(fn {a} => push <{L}> (mapPull (fn {x} => {x} + 1 + ({x} & 3)) {a})) "
                   f"(push <{L}> (mapPull (fn {x} => {x} & 31) {self.atom(init)}))")
        if ty == "int":
            return out
        return f"mapPull (fn {x} => i2d {x}) ({out})"

    # -- push arrays

    def push(self, env, ty, depth, lvl, top, level) -> str:
        """A push array of `level` built by code at level `lvl` (>= level)."""
        if not self.spend(depth):
            return f"push <{LEVELS[level]}> {self.atom(self.pull(env, ty, 0, lvl, top))}"
        d = depth - 1
        q = lambda: self.push(env, ty, d, lvl, False, level)  # noqa: E731
        options = [
            (3, lambda: f"push <{LEVELS[level]}> {self.atom(self.pull(env, ty, d, lvl, top))}"),
            (0.5, lambda: f"{self.helper('pushAt')} <{LEVELS[level]}> {self.atom(self.pull(env, ty, d, lvl, top))}"),
            (4 if level > THREAD else 0, lambda: self.parts(env, ty, d, lvl, top, level)),
            (1, lambda: f"mapPush (fn {(x := self.fresh('x'))} => "
                        f"{self.scalar({**env, x: 'int'}, ty, d, THREAD)}) "
                        f"{self.atom(self.push(env, 'int', d, lvl, top, level))}"),
            (1, lambda: f"zipWithPush (fn {(x := self.fresh('x'))} => fn {(y := self.fresh('y'))} => "
                        f"{self.scalar({**env, x: 'int', y: ty}, ty, d, THREAD)}) "
                        f"{self.atom(self.pull(env, 'int', d, lvl, top))} "
                        f"{self.atom(self.push(env, ty, d, lvl, top, level))}"),
            (1, lambda: f"(if {self.bool_(env, d, lvl)} then {q()} else {q()})"),
            (2, lambda: self.let_in(env, d, lvl, top, lambda e2: self.push(e2, ty, d, lvl, top, level), ty, True)),
            (1 if level == THREAD else 0, lambda: self.seqfor(env, ty, d, lvl, self.size(env, 0, lvl), None)),
        ]
        return self.pick(options)

    def parts(self, env, ty, depth, lvl, top, level) -> str:
        """`concat`/`interleave` at `level` of parts built one level down."""
        m = self.r.choice([1, 2, 3, 4, 5, 8, 16, 7, 32, 13])
        src, p = self.fresh("src"), self.fresh("p")
        arr = self.pull(env, ty, depth, lvl, top)
        if self.r.random() < 0.08:      # empty parts: no elements, but as many parts as src has
            self.features.add(f"empty parts {LEVELS[level]}")
            if ty == "int" and self.r.random() < 0.6:   # as many as only the device knows
                arr = self.while_(env, ty, depth, lvl, top, form=0.0)
            return (f"(let {src} = {arr} in concat 0 "
                    f"(mapPull (fn {p} => push <{LEVELS[level - 1]}> (take 0 {p})) (splitUp {m} {src})))")
        interleaved = self.r.random() < 0.3
        comb = self.combiner("interleave", "weave", level) if interleaved else self.combiner("concat", "place", level)
        penv = {**env, p: f"[{ty}]"}
        if self.r.random() < 0.07:
            part = self.bad_part(penv, ty, depth, level - 1, p, m)
        elif comb.startswith(("place", "weave")) and level - 1 > THREAD and m > 1 and self.r.random() < 0.6:
            # the helper again one level down: `place <block> m (... place <warp> m2 ...)`
            part = self.subparts(penv, ty, depth, level - 1, p, m, [k for k in (1, 2, 4, 8) if m % k == 0 and k < m])
        else:
            part = self.part(penv, ty, depth, level - 1, p, m)
        self.features.add(f"concat {LEVELS[level]}")
        if not interleaved:
            return f"(let {src} = {arr} in {comb} {m} (mapPull (fn {p} => {part}) (splitUp {m} {src})))"
        ij = self.fresh("ij")
        self.features.add(f"interleave {LEVELS[level]}")
        weave = comb
        if weave.startswith("weave") and self.r.random() < 0.9:
            return (f"(let {src} = {arr} in {weave} {m} "
                    f"(mapPull (fn {p} => {part}) (splitUp {m} {src})))")
        count = f"(lengthPull {src} / {m})"
        place = f"snd {ij} * {count} + fst {ij}"
        if self.r.random() < 0.15:      # positions outside the result, written twice, or holes
            self.features.add("bad interleave")
            place = self.r.choice([f"{place} + 1", f"fst {ij}", f"snd {ij} * ({count} + 1) + fst {ij}",
                                   f"({place}) / 2", f"({place}) - 1", f"snd {ij} + fst {ij}"])
        return (f"(let {src} = {arr} in interleave {m} (fn {ij} => {place}) "
                f"(mapPull (fn {p} => {part}) (splitUp {m} {src})))")

    def combiner(self, prim: str, helper: str, level: int) -> str:
        """`concat` (`interleave`), or the helper with a level parameter that is it,
        applied at the parts' level: `place <warp>`, `place <block>`."""
        if helper in self.helpers and self.r.random() < 0.7 or self.r.random() < 0.2:
            return f"{self.helper(helper)} <{LEVELS[level - 1]}>"
        return prim

    def bad_part(self, env, ty, depth, level, p, m) -> str:
        """A part whose length is not the part length m: statically (one more or one
        less) or by the data; the evaluator reports it, the compiled program must too."""
        self.features.add("bad part length")
        L, i = LEVELS[level], self.fresh("i")
        kind = self.r.random()
        if kind < 0.4:
            n = self.r.choice([m + 1, m + 5] + ([m - 1] if m > 1 else []))
            return f"push <{L}> (generate {n} ({self.id_fn(env, ty, depth, 'i', 0.5)}))"
        if kind < 0.6 and m > 1:
            return f"push <{L}> (take {m - 1} {self.atom(self.same_length(env, ty, depth, level, p, m))})"
        n = self.r.choice([f"(if index {p} 0 > 0 then {m} else {m + 1})", f"({m} - b2i (index {p} 0 == 0))"])
        return f"push <{L}> (generate {n} (fn {i} => index {p} ({i} % {m})))"

    def part(self, env, ty, depth, level, p, m) -> str:
        """A `level` push array of exactly m elements, from part `p` (m elements)."""
        if not self.spend(depth):
            return f"push <{LEVELS[level]}> {p}"
        d = depth - 1
        divisors = [k for k in (1, 2, 3, 4, 8) if m % k == 0 and k < m]
        options = [
            (3, lambda: f"push <{LEVELS[level]}> {self.atom(self.same_length(env, ty, d, level, p, m))}"),
            (2 if level > THREAD and divisors else 0, lambda: self.subparts(env, ty, d, level, p, m, divisors)),
            (2, lambda: self.part_let(env, ty, d, level, p, m)),
            (1, lambda: f"mapPush (fn {(x := self.fresh('x'))} => "
                        f"{self.scalar({**env, x: ty}, ty, d, THREAD)}) {self.atom(self.part(env, ty, d, level, p, m))}"),
            (1, lambda: f"(if {self.bool_(env, d, level)} then {self.part(env, ty, d, level, p, m)} "
                        f"else {self.part(env, ty, d, level, p, m)})"),
            (3 if level == WARP else 0, lambda: self.warp_if_force(env, ty, d, p, m)),
            (2 if level == BLOCK and m > 1 else 0, lambda: self.warps_if_force(env, ty, d, p, m)),
            (4 if level in (WARP, BLOCK) and m > 1 else 0, lambda: self.force_read_back(env, ty, d, level, p, m)),
            (2, lambda: self.seq_part(env, ty, d, level, p, m)),
            (1 if level == THREAD else 0, lambda: self.seqfor(env, ty, d, level, str(m), p)),
            (0.7, lambda: f"{self.helper('pushAt')} <{LEVELS[level]}> "
                          f"{self.atom(self.same_length(env, ty, d, level, p, m))}"),
            (0.7 if ty == "int" else 0,
             lambda: f"zipWithPush (fn {(x := self.fresh('x'))} => fn {(y := self.fresh('y'))} => "
                     f"{x} {self.r.choice(['+', '-', '^'])} {y}) {p} ({self.helper('ramp')} <{LEVELS[level]}> {m})"),
        ]
        return self.pick(options)

    def seq_part(self, env, ty, depth, level, p, m) -> str:
        """The part in steps of m2 elements one after another (`seqConcat`), a scalar
        state carried from step to step: the step's elements may read the state, and the
        next state reads the step's chunk, so a state that is not carried in order (or a
        step that overwrites the previous one's local memory early) changes the result."""
        m2 = self.r.choice([k for k in (1, 2, 3, 4, 8) if m % k == 0 and k < m] or [m])
        s, i, j, q = self.fresh("s"), self.fresh("i"), self.fresh("j"), self.fresh("q")
        self.ids.add(i)
        inner_env = {**env, s: ty, i: "int", q: f"[{ty}]"}
        part = self.part(inner_env, ty, depth, level, q, m2)
        op = self.r.choice(["+", "-"]) if ty == "double" else self.r.choice(["+", "-", "^"])
        nxt = f"{s} {op} index {q} {self.r.randint(0, m2 - 1)}"
        init = self.scalar(env, ty, depth, level)
        self.features.add(f"seqConcat {LEVELS[level]}")
        return (f"seqConcat {m2} {m // m2} {self.atom(init)} (fn {s} => fn {i} => "
                f"let {q} = generate {m2} (fn {j} => index {p} ({i} * {m2} + {j})) in ({nxt}, {part}))")

    def seqfor(self, env, ty, depth, lvl, n, p) -> str:
        """A thread's `seqfor` of n elements: a state carried from step to step, the step
        counter in arithmetic that goes negative; element i reads p's element i."""
        s, i = self.fresh("s"), self.fresh("i")
        self.ids.add(i)
        inner = {**env, s: ty, i: "int"}
        elem = self.scalar(inner, ty, depth, THREAD)
        if p is not None:
            elem = f"index {p} {i} {self.r.choice(['+', '-'])} {self.atom(elem)}"
        op = self.r.choice(["+", "-"]) if ty == "double" else self.r.choice(["+", "-", "^"])
        nxt = f"{s} {op} {self.atom(self.scalar(inner, ty, depth, THREAD))}"
        self.features.add("seqfor")
        return f"seqfor {self.atom(n)} {self.atom(self.scalar(env, ty, 0, lvl))} (fn {s} => fn {i} => ({nxt}, {elem}))"

    def force_read_back(self, env, ty, depth, level, p, m) -> str:
        """A part forced at its own level (warp: one slice of local memory per warp; block:
        the block's local memory), then read back reversed and rotated, so that each
        element is read by other work-items than its writer: a missing barrier or slices
        that overlap change the result."""
        f, i = self.fresh("f"), self.fresh("i")
        L = LEVELS[level]
        value = self.same_length(env, ty, depth, level, p, m)
        if self.r.random() < 0.3:
            value = f"generate {m} ({self.id_fn(env, ty, depth, 'i', 0.4)})"
        op = self.r.choice(["+", "-"]) if ty == "double" else self.r.choice(["+", "-", "^"])
        s = self.r.randint(1, m - 1)
        body = f"index {f} ({m} - 1 - {i}) {op} index {f} (({i} + {s}) % {m})"
        self.features.add(f"force read back {L}")
        return f"(let {f} = force (push <{L}> {self.atom(value)}) in push <{L}> (generate {m} (fn {i} => {body})))"

    def warps_if_force(self, env, ty, depth, p, m) -> str:
        """A block's part cut into parts of at most 2 elements, one per warp, each chosen by a
        per-warp `if` with a warp-level force (many warps, different conditions)."""
        m2 = self.r.choice([k for k in (1, 2) if m % k == 0 and m // k >= 2])
        q = self.fresh("p")
        inner = self.warp_if_force({**env, q: f"[{ty}]"}, ty, depth, q, m2)
        self.features.add("concat block")
        return f"concat {m2} (mapPull (fn {q} => {inner}) (splitUp {m2} {p}))"

    def warp_if_force(self, env, ty, depth, p, m) -> str:
        """A warp's part chosen by an `if` on the part's own data (so the warps of a block
        disagree) with a warp-level force in a branch: its barrier must be reached by
        every warp of the block."""
        f = self.fresh("f")
        c = self.r.choice(["(-10)", "0", "10", "40"]) if ty == "int" else self.r.choice(["(-1.5)", "0.0", "2.25"])
        forced = f"force (push <warp> {self.atom(self.same_length(env, ty, depth, WARP, p, m))})"
        with_force = f"(let {f} = {forced} in {self.part({**env, f: f'[{ty}]'}, ty, depth, WARP, f, m)})"
        other = self.part(env, ty, depth, WARP, p, m)
        if self.r.random() < 0.5:
            with_force, other = other, with_force
        self.features.add("warp if force")
        return f"(if index {p} 0 > {c} then {with_force} else {other})"

    def part_let(self, env, ty, depth, level, p, m) -> str:
        v = self.fresh("v")
        if self.r.random() < 0.7:
            at = self.r.randint(0, level)
            self.features.add(f"force {LEVELS[at]} in part")
            value = f"force {self.atom(self.push(env, 'int', depth, level, False, at))}"
            kind = "[int]"
        elif self.r.random() < 0.5:
            value = self.while_(env, "int", depth, level, False)
            kind = "[int]"
        else:
            value, kind = self.int_(env, depth, level), "int"
        body = self.part({**env, v: kind}, ty, depth, level, p, m)
        return f"(let {v} = {value} in {body})"

    def subparts(self, env, ty, depth, level, p, m, divisors) -> str:
        m2 = self.r.choice(divisors)
        q = self.fresh("p")
        inner = self.part({**env, q: f"[{ty}]"}, ty, depth, level - 1, q, m2)
        self.features.add(f"concat {LEVELS[level]}")
        src = self.atom(self.same_length(env, ty, depth, level, p, m))
        return f"{self.combiner('concat', 'place', level)} {m2} (mapPull (fn {q} => {inner}) (splitUp {m2} {src}))"

    def same_length(self, env, ty, depth, lvl, p, m) -> str:
        """A pull array as long as p (m elements)."""
        if not self.spend(depth):
            return p
        d = depth - 1
        i, x, y = self.fresh("i"), self.fresh("x"), self.fresh("y")
        options = [
            (2, lambda: p),
            (3, lambda: f"mapPull (fn {x} => {self.scalar({**env, x: ty}, ty, d, THREAD)}) "
                        f"{self.atom(self.same_length(env, ty, d, lvl, p, m))}"),
            (1, lambda: f"reverse {self.atom(self.same_length(env, ty, d, lvl, p, m))}"),
            (2, lambda: f"generate {self.r.choice([str(m), f'(lengthPull {p})'])} ({self.id_fn(env, ty, d, 'i', 0.4)})"),
            (1, lambda: f"zipWith (fn {x} => fn {y} => {self.scalar({**env, x: ty, y: ty}, ty, d, THREAD)}) "
                        f"{self.atom(self.same_length(env, ty, d, lvl, p, m))} {p}"),
            (1, lambda: f"(if {self.bool_(env, d, lvl)} then {self.same_length(env, ty, d, lvl, p, m)} "
                        f"else {self.same_length(env, ty, d, lvl, p, m)})"),
            (1, lambda: f"force {self.atom(self.part_push(env, ty, d, lvl, p, m))}"),
            (0.4, lambda: f"{self.helper('forceAt')} <{LEVELS[self.r.randint(0, lvl)]}> "
                          f"{self.atom(self.same_length(env, ty, d, lvl, p, m))}"),
        ]
        return self.pick(options)

    def part_push(self, env, ty, depth, lvl, p, m) -> str:
        level = self.r.randint(0, lvl)
        self.features.add(f"force {LEVELS[level]} in part")
        return self.part(env, ty, depth, level, p, m)

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
                self.features.add(f"force {LEVELS[level]}")
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


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


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
