"""Push arrays of generated programs, at every level.

`push`, `mapPush`, `zipWithPush`, `if`, `let`; `concat` and `interleave` (or
the helpers with a level parameter that are them) of parts built one level
down, each part exactly as long as its slice of the source (`part`), or not
(`bad_part`, a run-time error both sides must report); within parts:
`seqConcat` and `seqfor` with a carried state, forces at the part's own level
read back by other work-items, and per-warp `if`s with a warp-level force.

One part of `Gen` (gen.py), which puts the parts together; methods call
the other parts' through `self`.
"""
from __future__ import annotations

from fcl.base.hw import LEVEL_KEYWORDS
from fcl.fuzz.gen_base import BLOCK, GRID, THREAD, WARP, GenBase

# associative operators of each element type whose every order of combination gives the same
# value (scanConcat's device may combine in another order than the evaluator's fold)
CHAIN_OPS = {"int": ["+", "^", "max", "min", "*"], "double": ["max", "min"], "float": ["max", "min"],
             "bool": ["||", "&&"]}
CHAIN_NE = {("int", "+"): "0", ("int", "^"): "0", ("int", "max"): "(0 - 2147483647 - 1)",
            ("int", "min"): "2147483647", ("int", "*"): "1", ("double", "max"): "(0.0 - 1.0e300)",
            ("double", "min"): "1.0e300", ("float", "max"): "(0.0f - 1.0e30f)", ("float", "min"): "1.0e30f",
            ("bool", "||"): "false", ("bool", "&&"): "true"}


class PushGen(GenBase):
    """Push arrays and the parts of delayed concatenations."""

    def push(self, env, ty, depth, lvl, top, level) -> str:
        """A push array of `level` built by code at level `lvl` (>= level)."""
        if not self.spend(depth):
            return f"push <{LEVEL_KEYWORDS[level]}> {self.atom(self.pull(env, ty, 0, lvl, top))}"
        d = depth - 1
        q = lambda: self.push(env, ty, d, lvl, False, level)  # noqa: E731
        options = [
            (3, lambda: f"push <{LEVEL_KEYWORDS[level]}> {self.atom(self.pull(env, ty, d, lvl, top))}"),
            (0.5, lambda: f"{self.helper('pushAt')} <{LEVEL_KEYWORDS[level]}> {self.atom(self.pull(env, ty, d, lvl, top))}"),
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
        """`concat`/`interleave` at `level` of parts built one level down (at grid level also
        `scanConcat` and `packConcat`: `chained`)."""
        m = self.r.choice([1, 2, 3, 4, 5, 8, 16, 7, 32, 13])
        src, p = self.fresh("src"), self.fresh("p")
        arr = self.pull(env, ty, depth, lvl, top)
        if level == GRID and self.r.random() < 0.15:
            return self.chained(env, ty, depth, src, p, m, arr)
        if self.r.random() < 0.08:      # empty parts: no elements, but as many parts as src has
            self.features.add(f"empty parts {LEVEL_KEYWORDS[level]}")
            if ty == "int" and self.r.random() < 0.6:   # as many as only the device knows
                arr = self.while_(env, ty, depth, lvl, top, form=0.0)
            return (f"(let {src} = {arr} in concat 0 "
                    f"(mapPull (fn {p} => push <{LEVEL_KEYWORDS[level - 1]}> (take 0 {p})) (splitUp {m} {src})))")
        interleaved = self.r.random() < 0.4
        if interleaved and self.r.random() < 0.6:    # several parts, so a place can be written twice
            k, a = self.fresh("k"), self.fresh("a")
            arr = (f"(let {a} = {arr} in generate ({self.r.choice([2, 3, 4])} * {m}) (fn {k} => "
                   f"if lengthPull {a} > 0 then index {a} ({k} % lengthPull {a}) else "
                   f"{ {'int': k, 'double': f'i2d {k}', 'float': f'i2f {k}'}.get(ty, 'false')}))")
        comb = self.combiner("interleave", "weave", level) if interleaved else self.combiner("concat", "place", level)
        penv = {**env, p: f"[{ty}]"}
        if self.r.random() < 0.07:
            part = self.bad_part(penv, ty, depth, level - 1, p, m)
        elif comb.startswith(("place", "weave")) and level - 1 > THREAD and m > 1 and self.r.random() < 0.6:
            # the helper again one level down: `place <block> m (... place <warp> m2 ...)`
            part = self.subparts(penv, ty, depth, level - 1, p, m, [k for k in (1, 2, 4, 8) if m % k == 0 and k < m])
        else:
            part = self.part(penv, ty, depth, level - 1, p, m)
        self.features.add(f"concat {LEVEL_KEYWORDS[level]}")
        if not interleaved:
            return f"(let {src} = {arr} in {comb} {m} (mapPull (fn {p} => {part}) (splitUp {m} {src})))"
        ij = self.fresh("ij")
        self.features.add(f"interleave {LEVEL_KEYWORDS[level]}")
        weave = comb
        if weave.startswith("weave") and self.r.random() < 0.5:
            return (f"(let {src} = {arr} in {weave} {m} "
                    f"(mapPull (fn {p} => {part}) (splitUp {m} {src})))")
        place = self.position(src, ij, m)
        if self.r.random() < 0.3:       # the same places carried by the elements: placeConcat
            self.features.add(f"placeConcat {LEVEL_KEYWORDS[level]}")
            i, j, x = self.fresh("i"), self.fresh("j"), self.fresh("x")
            return (f"(let {src} = {arr} in placeConcat {m} (generate (lengthPull {src} / {m}) (fn {i} => "
                    f"let {p} = generate {m} (fn {j} => index {src} ({i} * {m} + {j})) in "
                    f"zipWithPush (fn {j} => fn {x} => (let {ij} = ({i}, {j}) in {place}, {x})) (iota {m}) ({part}))))")
        return (f"(let {src} = {arr} in interleave {m} (fn {ij} => {place}) "
                f"(mapPull (fn {p} => {part}) (splitUp {m} {src})))")

    def chained(self, env, ty, depth, src, p, m, arr) -> str:
        """Parts of `src` (m elements each) that learn what the parts before them hold: a
        `scanConcat` whose part gives `prefix` one of its elements (or their combination) and
        combines the exclusive prefix it gets back into its elements; or a `packConcat` whose
        part g keeps a data-dependent number of its elements (at most m, or sometimes one more:
        the run-time error both sides must report)."""
        g, j, before, pre = self.fresh("g"), self.fresh("j"), self.fresh("before"), self.fresh("prefix")
        count = f"(lengthPull {src} / {m})"
        slice_ = f"generate {m} (fn {j} => index {src} ({g} * {m} + {j}))"
        penv = {**env, p: f"[{ty}]", g: "int"}
        if self.r.random() < 0.5:
            op = self.r.choice(CHAIN_OPS[ty])
            fn = (f"(fn {(a := self.fresh('a'))} => fn {(b := self.fresh('b'))} => "
                  + (f"{op} {a} {b})" if op in ("max", "min") else f"{a} {op} {b})"))
            value = self.r.choice([f"index {p} {self.r.randint(0, m - 1)}",
                                   f"foldl {fn} {CHAIN_NE[ty, op]} {p}"])
            part = self.part(penv, ty, depth, BLOCK, p, m)
            x = self.fresh("x")
            self.features.add("scanConcat")
            return (f"(let {src} = {arr} in scanConcat {m} {count} {fn} {CHAIN_NE[ty, op]} "
                    f"(fn {g} => fn {pre} => let {p} = {slice_} in let {before} = {pre} ({value}) "
                    f"in mapPush (fn {x} => {fn} {before} {x}) ({part})))")
        zero = {"double": "0.0", "float": "0.0f"}.get(ty)
        bound = m + 1 if self.r.random() < 0.1 else m
        keep = (f"(abs (index {p} 0) % {bound + 1})" if ty == "int" else
                f"(if index {p} 0 then {bound} else {m // 2})" if ty == "bool" else
                f"(if index {p} 0 > {zero} then {bound} else {m // 2})")
        self.features.add("packConcat")
        return (f"(let {src} = {arr} in packConcat {m} {count} (fn {g} => let {p} = {slice_} "
                f"in push <block> (generate (min {keep} {bound}) (fn {j} => index {p} ({j} % {m})))))")

    def position(self, src: str, ij: str, m: int) -> str:
        """An interleave's position of element `snd ij` of part `fst ij` (m elements, as many
        parts as `src` has m-runs): strided, concatenated, or reordered inside the part by
        digits (j % a) * b + j / a, each a bijection the compiler may prove; or one that is
        not (outside the result, a place twice, holes), some of them near misses of a proof."""
        i, j, count = f"fst {ij}", f"snd {ij}", f"(lengthPull {src} / {m})"
        splits = [(a, m // a) for a in (2, 3, 4, 8) if m % a == 0 and a < m]
        good = [f"{j} * {count} + {i}", f"{i} * {m} + {j}", f"({m} - 1 - {j}) * {count} + {i}"]
        bad = [f"{j} * {count} + {i} + 1", i, f"{j} * ({count} + 1) + {i}", f"({j} * {count} + {i}) / 2",
               f"{j} * {count} + {i} - 1", f"{j} + {i}", f"{i} * ({m} - 1) + {j}", f"{j} * {count} + {i} * 2"]
        if splits:
            a, b = self.r.choice(splits)
            good.append(f"{i} * {m} + ({j} % {a}) * {b} + {j} / {a}")
            bad += [f"{i} * {m} + ({j} % {a}) * {a} + {j} / {a}" if a != b else f"{i} * {m} + ({j} % {a}) * {b}",
                    f"{i} * {m} + ({j} % {a}) * {b} + {j} / {b}" if a != b else f"{i} * {m} + {j} / {a}"]
        if self.r.random() < 0.4:      # positions outside the result, written twice, or holes
            self.features.add("bad interleave")
            return self.r.choice(bad)
        return self.r.choice(good)

    def combiner(self, prim: str, helper: str, level: int) -> str:
        """`concat` (`interleave`), or the helper with a level parameter that is it,
        applied at the parts' level: `place <warp>`, `place <block>`."""
        if helper in self.helpers and self.r.random() < 0.7 or self.r.random() < 0.2:
            return f"{self.helper(helper)} <{LEVEL_KEYWORDS[level - 1]}>"
        return prim

    def bad_part(self, env, ty, depth, level, p, m) -> str:
        """A part whose length is not the part length m: statically (one more or one
        less) or by the data; the evaluator reports it, the compiled program must too."""
        self.features.add("bad part length")
        L, i = LEVEL_KEYWORDS[level], self.fresh("i")
        kind = self.r.random()
        if kind < 0.4:
            n = self.r.choice([m + 1, m + 5] + ([m - 1] if m > 1 else []))
            return f"push <{L}> (generate {n} ({self.id_fn(env, ty, depth, 'i', 0.5)}))"
        if kind < 0.6 and m > 1:
            return f"push <{L}> (take {m - 1} {self.atom(self.same_length(env, ty, depth, level, p, m))})"
        zero = {"double": "0.0", "float": "0.0f"}.get(ty, "0")
        n = self.r.choice([f"(if index {p} 0 > {zero} then {m} else {m + 1})", f"({m} - b2i (index {p} 0 == {zero}))"])
        return f"push <{L}> (generate {n} (fn {i} => index {p} ({i} % {m})))"

    def part(self, env, ty, depth, level, p, m) -> str:
        """A `level` push array of exactly m elements, from part `p` (m elements)."""
        if not self.spend(depth):
            return f"push <{LEVEL_KEYWORDS[level]}> {p}"
        d = depth - 1
        divisors = [k for k in (1, 2, 3, 4, 8) if m % k == 0 and k < m]
        options = [
            (3, lambda: f"push <{LEVEL_KEYWORDS[level]}> {self.atom(self.same_length(env, ty, d, level, p, m))}"),
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
            (0.7, lambda: f"{self.helper('pushAt')} <{LEVEL_KEYWORDS[level]}> "
                          f"{self.atom(self.same_length(env, ty, d, level, p, m))}"),
            (0.7 if ty == "int" else 0,
             lambda: f"zipWithPush (fn {(x := self.fresh('x'))} => fn {(y := self.fresh('y'))} => "
                     f"{x} {self.r.choice(['+', '-', '^'])} {y}) {p} ({self.helper('ramp')} <{LEVEL_KEYWORDS[level]}> {m})"),
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
        self.features.add(f"seqConcat {LEVEL_KEYWORDS[level]}")
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
        L = LEVEL_KEYWORDS[level]
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
            self.features.add(f"force {LEVEL_KEYWORDS[at]} in part")
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
        self.features.add(f"concat {LEVEL_KEYWORDS[level]}")
        src = self.atom(self.same_length(env, ty, depth, level, p, m))
        return f"{self.combiner('concat', 'place', level)} {m2} (mapPull (fn {q} => {inner}) (splitUp {m2} {src}))"

    def same_length(self, env, ty, depth, lvl, p, m) -> str:
        """A pull array as long as p (m elements)."""
        if not self.spend(depth):
            return p
        d = depth - 1
        self.fresh("i")         # not used; drawing it keeps the names of every seed
        x, y = self.fresh("x"), self.fresh("y")
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
            (0.4, lambda: f"{self.helper('forceAt')} <{LEVEL_KEYWORDS[self.r.randint(0, lvl)]}> "
                          f"{self.atom(self.same_length(env, ty, d, lvl, p, m))}"),
        ]
        return self.pick(options)

    def part_push(self, env, ty, depth, lvl, p, m) -> str:
        level = self.r.randint(0, lvl)
        self.features.add(f"force {LEVEL_KEYWORDS[level]} in part")
        return self.part(env, ty, depth, level, p, m)
