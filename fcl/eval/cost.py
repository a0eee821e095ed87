"""Cost counters of the reference evaluator and their report.

The machine (machine.py) increments plain lists indexed by level
(0 thread, 1 warp, 2 block, 3 grid); `CostReport` freezes them into a table.
What each figure means is documented in docs/evaluator.md ("Cost model").
"""
from __future__ import annotations

from fcl.base.hw import LEVEL_KEYWORDS, Space

SPACES = tuple(Space)
GLOBAL, LOCAL, PRIVATE = SPACES
# force at thread -> private, warp/block -> local, grid -> global (language.md section 7)
SPACE_OF_LEVEL = (PRIVATE, LOCAL, LOCAL, GLOBAL)


class Counters:
    """Mutable per-level counters filled in while a program runs."""

    def __init__(self):
        self.work = [0, 0, 0, 0]
        self.barriers = [0, 0, 0, 0]
        self.reads = {s: [0, 0, 0, 0] for s in SPACES}
        self.writes = {s: [0, 0, 0, 0] for s in SPACES}
        self.forces = [0, 0, 0, 0]
        self.while_iterations = [0, 0, 0, 0]

    def report(self, span: list[int]) -> "CostReport":
        return CostReport(self, list(span))


_COLUMNS = (
    ("work", "work"), ("span", "span"),
    ("global_reads", "glob.rd"), ("global_writes", "glob.wr"),
    ("local_reads", "loc.rd"), ("local_writes", "loc.wr"),
    ("private_reads", "priv.rd"), ("private_writes", "priv.wr"),
    ("barriers", "barriers"),
)


class CostReport:
    """Work, span, memory traffic and barriers of one run, per level.

    `as_dict()` gives ``{"levels": {level: {figure: n}}, "total": {figure: n},
    "kernels": n, "forces": {...}, "while_iterations": {...}}``; at the grid
    level "barriers" are kernel boundaries, so ``kernels = grid barriers + 1``.
    """

    def __init__(self, counters: Counters, span: list[int]):
        self.rows: dict[str, dict[str, int]] = {}
        for lv, name in enumerate(LEVEL_KEYWORDS):
            row = {"work": counters.work[lv], "span": span[lv]}
            for s in SPACES:
                row[f"{s}_reads"] = counters.reads[s][lv]
                row[f"{s}_writes"] = counters.writes[s][lv]
            row["barriers"] = counters.barriers[lv]
            self.rows[name] = row
        self.total = {key: sum(r[key] for r in self.rows.values()) for key, _ in _COLUMNS}
        self.kernels = counters.barriers[3] + 1
        self.forces = dict(zip(LEVEL_KEYWORDS, counters.forces))
        self.while_iterations = dict(zip(LEVEL_KEYWORDS, counters.while_iterations))

    def __getitem__(self, level: str) -> dict[str, int]:
        return self.rows[level]

    def as_dict(self) -> dict:
        return {"levels": {k: dict(v) for k, v in self.rows.items()},
                "total": dict(self.total), "kernels": self.kernels,
                "forces": dict(self.forces), "while_iterations": dict(self.while_iterations)}

    def format(self) -> str:
        """A table: one row per level and a total row, then kernels and forces."""
        heads = ["level"] + [h for _, h in _COLUMNS]
        body = [[name] + [str(self.rows[name][k]) for k, _ in _COLUMNS] for name in LEVEL_KEYWORDS]
        body.append(["total"] + [str(self.total[k]) for k, _ in _COLUMNS])
        widths = [max(len(r[i]) for r in [heads] + body) for i in range(len(heads))]

        def line(cells):
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

        out = [line(heads), line(["-" * w for w in widths])]
        out += [line(r) for r in body]
        forces = ", ".join(f"{k} {v}" for k, v in self.forces.items() if v) or "none"
        loops = ", ".join(f"{k} {v}" for k, v in self.while_iterations.items() if v) or "none"
        out.append(f"kernels: {self.kernels}   forces: {forces}   while iterations: {loops}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return f"CostReport(work={self.total['work']}, span={self.total['span']})"
