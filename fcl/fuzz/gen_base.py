"""The fuzz generator's vocabulary: the state of one program's generator and its small tools.

`GenBase` holds the random source, the fuel that bounds a program's size, the
names bound so far (fresh names, ids, the top-level helpers the entry calls)
and the features a case exercises; its tools choose by weight, name fresh
variables, parenthesise, and draw levels, element types and lengths.  The
expression families build on it: gen_scalars.py, gen_pull.py, gen_push.py.
"""
from __future__ import annotations

import random

THREAD, WARP, BLOCK, GRID = 0, 1, 2, 3


class GenBase:
    """One program's generator state; `depth` bounds nesting, `fuel` the total size."""

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
        """A new name: `base` and the next number."""
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
        """The names of type `ty` in `env`."""
        return [n for n, t in env.items() if t == ty]

    def atom(self, text: str) -> str:
        """`text` in parentheses, unless it is a name, a literal or parenthesised already."""
        plain = text.replace("_", "").replace("'", "").replace("#", "").replace(".", "")
        if plain.isalnum() or (text.startswith("(") and text.endswith(")") and _balanced(text[1:-1])):
            return text
        return f"({text})"

    def elem_type(self) -> str:
        """An element type: int, or now and then double (when the case has doubles)."""
        return "double" if self.doubles and self.r.random() < 0.25 else "int"

    def level_upto(self, lvl, top) -> int:
        """A level at most `lvl` (grid only at the top of a kernel)."""
        hi = lvl if (lvl < GRID or top) else BLOCK
        return self.r.randint(0, hi) if self.r.random() < 0.5 else hi

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
        """The text of the helpers used, in order of first use."""
        return "".join(self.helpers.values())

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
        """A length below zero for some arguments (`a`: an array in scope, or None)."""
        self.features.add("negative length")
        if a and self.r.random() < 0.6:
            return f"(lengthPull {a} - {self.r.choice([3, 10, 40])})"
        return self.r.choice(["(k - 5)", "(3 - k)", "(#WarpSize - 4)"]) if "k" in env else "(4 - #WarpSize)"


def _balanced(text: str) -> bool:
    """Whether the parentheses of `text` close in order."""
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0
