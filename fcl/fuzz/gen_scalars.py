"""Scalar expressions of generated programs: int, double and bool.

Arithmetic with wrap-around, truncating `/` and `%`, shifts, conversions and
hardware parameters; `index`, `lengthPull` and `foldl` over arrays; ids and
loop variables moved below zero (`id_op`) and run-time data (`data_op`) in
`/`, `%`, `abs` and shifts; array literals indexed out of range; chains of
`let`s and `mapPull`s whose every step uses the previous value twice or more.

One part of `Gen` (gen.py), which puts the parts together; methods call
the other parts' through `self`.
"""
from __future__ import annotations

from fcl.fuzz.gen_base import GRID, THREAD, GenBase


class ScalarGen(GenBase):
    """Scalars, and the chains and folds that compute them."""

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

    # -- chains

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
