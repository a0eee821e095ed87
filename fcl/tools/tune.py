"""`fclc tune`: the fastest settings of an entry point on the device in use, found and kept.

A setting gives values to the parameters searched: the entry's int arguments named with
`--vary NAME=V1,V2,...` (by parameter name or 1-based position: tile sizes, chunks, run
lengths), `#BlockSize` (the powers of two from 32 that the device allows, or the values of
`--vary '#BlockSize=...'`), `#NumGroups` (only with `--vary '#NumGroups=...'`) and the
optional pass `double_buffer`, off and on (from the command line's `--pass`; whether two
steps a round on two copies of a loop's tiles pay depends on the kernel and the device),
where it changes the entry's kernels.

Each setting is compiled and run once; its result must be the default setting's (equal
ints, floats within 1e-6 relative, as compiled kernels and the evaluator agree), else it is
not taken: a tile that drops a tail changes the result, so it is no candidate.  A setting
that cannot run (too much local memory, a block larger than the device allows) is skipped
with the reason.  The others are timed: the median kernel time of `repeat` runs (profiling
events, every kernel of a run summed).

The search is coordinate descent from the default setting: each parameter in turn over all
of its values with the others held, moving to the fastest, round after round until a round
finds nothing faster or `--time` seconds are spent.  A round tries the sum of the
parameters' value counts, not their product (the local searches of Kernel Tuner and
CLTune; Futhark's `futhark autotune` tunes its thresholds one at a time too).

The best setting is kept on disk per device, program, entry and the arguments' types and
shapes (array lengths, int values: fcl.runtime.tuned): `fclc run` and `fclc bench` of
the same arguments take its #BlockSize, #NumGroups and optional passes when the command
line gives none of them, and say so; `Program.tuned(name, *args)` gives them to the Python API.  The command
line that reproduces the best setting is printed (`--block-size`, `--num-groups`,
`--static NAME=VALUE`, `--pass`).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from fcl.api.literals import values_equal
from fcl.base.errors import ArgumentError, FCLError
from fcl.base.hw import DEFAULT_HW
from fcl.runtime.device import choose_device, describe_device, device_limits
from fcl.runtime.tuned import HARDWARE, PASSES, Tuned, keep
from fcl.tools.bench import format_seconds

BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
BETTER = 0.99                  # a setting must be 1% faster to replace the best


@dataclass(frozen=True)
class Space:
    """The parameters searched: name -> the values tried (the first is the default)."""
    values: dict[str, tuple[int, ...]]
    positions: dict[str, int]                 # argument name -> its position in the entry's arguments

    def neighbours(self, setting: dict) -> list[dict]:
        return [{**setting, name: v} for name, vs in self.values.items() for v in vs if v != setting[name]]


@dataclass
class Trial:
    setting: dict
    seconds: float | None = None
    why: str = ""                              # why it was not taken


# ---------------------------------------------------------------- the search space

def parse_vary(texts: list[str], names: list[str], values: list) -> tuple[dict, dict]:
    """`--vary NAME=V1,V2` options -> ({name: values}, {argument name: position})."""
    space, positions = {}, {}
    for text in texts:
        name, eq, rest = text.partition("=")
        try:
            choices = tuple(int(v) for v in rest.split(",") if v.strip())
        except ValueError:
            choices = ()
        if not eq or not choices:
            raise ArgumentError(f"--vary {text}: expected NAME=V1,V2,... with int values, for example "
                                f"--vary tileDim=16,32,64 or --vary '#BlockSize=64,128,256'")
        if name not in HARDWARE:
            k = argument_position(name, names)
            if not isinstance(values[k], int) or isinstance(values[k], bool):
                raise ArgumentError(f"--vary {text}: argument {k + 1} ({names[k]}) is not an int")
            name = names[k]
            positions[name] = k
        space[name] = choices
    return space, positions


def argument_position(name: str, names: list[str]) -> int:
    if name.isdigit() and 1 <= int(name) <= len(names):
        return int(name) - 1
    if name in names:
        return names.index(name)
    raise ArgumentError(f"--vary {name}=...: the entry has no parameter {name} (its parameters: "
                        f"{', '.join(names)}; a position 1..{len(names)} works too)")


def search_space(varied: dict, positions: dict, values: list, hw: dict, max_block: int) -> Space:
    """Each parameter's values with the default first: the command line's argument or
    hardware value (an optional pass: whether the command line names it), then the others."""
    space = dict(varied)
    if "#BlockSize" not in space:
        space["#BlockSize"] = tuple(b for b in BLOCK_SIZES if b <= max_block)
    for name in PASSES:
        space.setdefault(name, (0, 1))
    out = {}
    for name, choices in space.items():
        start = values[positions[name]] if name in positions else hw.get(name)
        out[name] = tuple(dict.fromkeys(([start] if start is not None else []) + list(choices)))
    return Space(out, positions)


def without_idle_passes(space: Space, program, entry: str, values: list, options: dict) -> Space:
    """The space without the optional passes that change nothing in this entry's kernels for
    these arguments (compiled both ways at the default setting), so that no trial is spent on them."""
    base = {k: v for k, v in options.items() if k != "with_pass"}
    idle = []
    try:
        plain = program.compile(entry, **base).build_for(*values).source
        for name, p in PASSES.items():
            if program.compile(entry, **base, with_pass=(p,)).build_for(*values).source == plain:
                idle.append(name)
    except FCLError:
        pass                        # the trials say why
    return Space({name: vs for name, vs in space.values.items() if name not in idle}, space.positions)


# ---------------------------------------------------------------- measuring

class Runner:
    """Compiles, checks and times settings of one entry on one device."""

    def __init__(self, program, entry: str, values: list, options: dict, repeat: int):
        self.program, self.entry, self.values = program, entry, values
        self.options, self.repeat = options, repeat
        self.expected = None

    def arguments(self, setting: dict, positions: dict) -> list:
        out = list(self.values)
        for name, k in positions.items():
            out[k] = setting[name]
        return out

    def measure(self, setting: dict, positions: dict) -> Trial:
        hw = {"block_size": setting.get("#BlockSize"), "num_groups": setting.get("#NumGroups"),
              "with_pass": tuple(p for name, p in PASSES.items() if setting.get(name))}
        try:
            kernel = self.program.compile(self.entry, **{**self.options, **hw})
            args = self.arguments(setting, positions)
            result, _ = kernel.run(*args)
            if self.expected is None:
                self.expected = result
            elif not values_equal(self.expected, result):
                return Trial(setting, why="its result differs from the default setting's")
            runs = [sum(t for _, t in kernel.run(*args)[1]) for _ in range(self.repeat)]
        except FCLError as e:
            return Trial(setting, why=e.message)
        return Trial(setting, statistics.median(runs))


def coordinate_descent(space: Space, runner: Runner, budget: float, report) -> list[Trial]:
    """Trials from the default setting, moving to the fastest neighbour along one parameter
    at a time, until a round finds nothing faster or `budget` seconds are spent."""
    deadline = time.monotonic() + budget
    setting = {name: vs[0] for name, vs in space.values.items()}
    first = runner.measure(setting, space.positions)
    report(first)
    trials, seen = [first], {_key(setting)}
    for candidate in space.neighbours(setting):      # a default that cannot run: the first that can
        if first.seconds is not None:
            break
        seen.add(_key(candidate))
        first = runner.measure(candidate, space.positions)
        report(first)
        trials.append(first)
    if first.seconds is None:
        raise ArgumentError(f"no setting one parameter away from the default runs: {trials[0].why}")
    best = first
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for name, choices in space.values.items():
            centre = best
            for v in choices:
                candidate = {**centre.setting, name: v}
                if _key(candidate) in seen or time.monotonic() >= deadline:
                    continue
                seen.add(_key(candidate))
                trial = runner.measure(candidate, space.positions)
                report(trial)
                trials.append(trial)
                if trial.seconds is not None and trial.seconds < best.seconds * BETTER:
                    best, improved = trial, True
    return trials


def _key(setting: dict) -> tuple:
    return tuple(sorted(setting.items()))


def best_of(trials: list[Trial]) -> Trial:
    """The fastest trial, unless it is within 1% of the first that ran (the default, or the
    setting that stood in for it)."""
    start = next(t for t in trials if t.seconds is not None)
    faster = [t for t in trials if t.seconds is not None and t.seconds < start.seconds * BETTER]
    return min(faster, key=lambda t: t.seconds) if faster else start


# ---------------------------------------------------------------- words

def describe(setting: dict) -> str:
    return ", ".join(f"{name} {('off', 'on')[v] if name in PASSES else v}" for name, v in setting.items())


def reproduce(path: str, entry: str, texts: list[str], setting: dict, positions: dict) -> str:
    """The `fclc run` command line that runs `setting`: hardware flags, the varied
    arguments as --static, the other arguments as given."""
    flags = []
    if "#BlockSize" in setting:
        flags.append(f"--block-size {setting['#BlockSize']}")
    if "#NumGroups" in setting:
        flags.append(f"--num-groups {setting['#NumGroups']}")
    flags += [name for name in PASSES if setting.get(name)]
    flags += [f"--static {name}={setting[name]}" for name in positions]
    rest = [t for k, t in enumerate(texts) if k not in positions.values()]
    return " ".join(["fclc run", path, "-e", entry, *flags, *rest])


# ---------------------------------------------------------------- the command

def tune_command(args, program, values: list, options: dict):
    """`fclc tune FILE -e NAME ARG ... [--vary ...] [--time S] [--repeat N]`."""
    from fcl.api.literals import rejoin
    device = choose_device(options.get("device"))
    names = program.param_names(args.entry)
    varied, positions = parse_vary(args.vary, names, values)
    hw = {"#BlockSize": options.get("block_size") or DEFAULT_HW["#BlockSize"],
          "#NumGroups": options.get("num_groups"),
          **{name: int(p in options.get("with_pass", ())) for name, p in PASSES.items()}}
    if "#NumGroups" not in varied:
        hw.pop("#NumGroups")
    space = search_space(varied, positions, values, hw, device_limits(device)["max_work_group_size"])
    space = without_idle_passes(space, program, args.entry, values, options)
    runner = Runner(program, args.entry, values, {k: v for k, v in options.items()
                                                  if k not in ("block_size", "num_groups", "with_pass")}, args.repeat)
    print(f"tuning {args.entry} on {describe_device(device)}: " +
          "; ".join(f"{name} in {', '.join(map(str, vs))}" for name, vs in space.values.items()))
    trials = coordinate_descent(space, runner, args.time, lambda t: print(_trial_line(t), flush=True))
    best = best_of(trials)
    start = next(t for t in trials if t.seconds is not None)
    which = "the default setting's" if start is trials[0] else f"{describe(start.setting)}'s (the default does not run)"
    print(f"best: {describe(best.setting)}: {format_seconds(best.seconds)}, "
          f"{start.seconds / best.seconds:.2f}x {which} {format_seconds(start.seconds)} "
          f"({len(trials)} settings tried of {_product(space)})")
    texts = rejoin(args.args)
    print("reproduce: " + reproduce(args.file, args.entry, texts, best.setting, positions))
    keep(program.tuning_key(args.entry, values, options.get("device"), options.get("static")),
         Tuned(best.setting, best.seconds, start.seconds, describe_device(device), " ".join(texts),
               [(t.setting, t.seconds, t.why) for t in trials]))


def _trial_line(t: Trial) -> str:
    if t.seconds is None:
        return f"  {describe(t.setting)}: not taken: {t.why}"
    return f"  {describe(t.setting)}: {format_seconds(t.seconds)}"


def _product(space: Space) -> int:
    n = 1
    for vs in space.values.values():
        n *= len(vs)
    return n
