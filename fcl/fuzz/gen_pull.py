"""Pull arrays of generated programs.

`generate`, `mapPull`, `zipWith`, `reverse`, `take`, `drop`, `halve`,
`evenOdds`, ranges that start below zero, `iota`, array literals, `force`,
`while` (halving steps, a data-dependent count or length), `if` and `let`s
whose arrays are read back at positions that depend on the element.

One part of `Gen` (gen.py), which puts the parts together; methods call
the other parts' through `self`.
"""
from __future__ import annotations

from fcl.base.hw import LEVEL_KEYWORDS
from fcl.fuzz.gen_base import THREAD, WARP, GenBase


class PullGen(GenBase):
    """Pull arrays, and the functions of ids they are built from."""

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
            (0.5 if lvl >= WARP or lvl == THREAD else 0, lambda: self.power_(env, ty, d, lvl, top)),
            (0.4 if ty == "int" else 0, lambda: self.map_chain(env, lvl, top)),
            (1.5, lambda: self.map_range(env, ty, d, lvl)),
        ]
        return self.pick(options)

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
            self.features.add(f"force {LEVEL_KEYWORDS[level]}")
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

    def power_(self, env, ty, depth, lvl, top) -> str:
        """A `power` at a level up to `lvl` (`powerDoubleBuffered` half the time), whose step
        forces a tile of a constant length from its state and reads it back reversed: a
        step's reads of the tile and the next step's writes of it meet (the `double_buffer`
        pass gives the loop's steps two copies in turn).  The step count is the length of an array argument's
        (at most 5), so that the loop stays a loop, or a constant (unrolled)."""
        level = self.level_upto(lvl, top) if lvl > THREAD else THREAD
        a, i, q, tile = self.fresh("a"), self.fresh("i"), self.fresh("q"), self.fresh("tile")
        init = self.pull(env, "int", depth, lvl, top)
        prim = self.r.choice(["power", "powerDoubleBuffered"])
        L = LEVEL_KEYWORDS[level]
        self.features.add(f"{prim} {L}")
        self.ids.add(i)
        arrays = [n for n, t in env.items() if t.startswith("[")]
        count = f"min 5 (lengthPull {self.r.choice(arrays)})" if arrays and self.r.random() < 0.7 \
            else str(self.r.choice([0, 1, 2, 3]))
        k = self.r.choice([1, 4, 8, 16])      # the tile's length: a constant (its local memory)
        out = (f"{prim} ({count}) (fn {q} => fn {a} => "
               f"let {tile} = force (push <{L}> (generate {k} (fn {i} => "
               f"if lengthPull {a} > 0 then index {a} ({i} % lengthPull {a}) + {q} else {i}))) "
               f"in push <{L}> (generate (lengthPull {a}) (fn {i} => index {tile} ({k - 1} - {i} % {k}) * 3 - {i}))) "
               f"(push <{L}> {self.atom(init)})")
        if ty == "int":
            return out
        x = self.fresh("x")
        return f"mapPull (fn {x} => i2d {x}) ({out})"

    def while_(self, env, ty, depth, lvl, top, form=None) -> str:
        """A while at a level up to `lvl`: halving steps, a data-dependent count, or a
        data-dependent length (form < 0.2)."""
        level = self.level_upto(lvl, top) if lvl > THREAD else THREAD
        a, i, x = self.fresh("a"), self.fresh("i"), self.fresh("x")
        init = self.pull(env, "int", depth, lvl, top)
        self.features.add(f"while {LEVEL_KEYWORDS[level]}")
        L = LEVEL_KEYWORDS[level]
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
