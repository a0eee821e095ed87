"""A distributed run: every MPI rank runs the entry on its block on its own OpenCL device,
and only partial results cross between ranks (docs/distributed.md).

`run(program, entry, *args)` is called by every rank of `comm` with its own block of each split
argument (numpy arrays) and the whole of each other argument.  Ranks choose devices by their
rank on their host (`rank_device`), halos and partial results travel through MPI as small
host arrays, and the operators of `reduce` and `scan` combine them through the evaluator on
the host (the ranks' results are a handful of values: one a rank) or, for a scan's carry, a
kernel of their own on each rank's block.
"""
from __future__ import annotations

import numpy as np

from fcl.base.errors import ArgumentError, EnvironmentProblem, FCLError
from fcl.distributed.plan import Distribution, distribution
from fcl.syntax import ast as A
from fcl.syntax import parse_program
from fcl.types import terms as T

# declarations added to the program (plan.COMBINING: the prelude's functions they call)
OP, CARRY = "distributedOp'", "distributedCarry'"


class RankFailed(Exception):
    """Another rank failed (it reports the error); this one stops too."""


def mpi_world():
    """MPI.COMM_WORLD, or an EnvironmentProblem saying how to get MPI.  Where MPICH came
    from PyPI (`fcl[mpi]`), mpi4py is pointed at its library, whose `mpiexec` launched us,
    rather than at another MPI the machine may have (an Open MPI library under MPICH's
    mpiexec makes every rank a world of its own); not under Open MPI's mpirun (which sets
    OMPI_COMM_WORLD_SIZE), whose library mpi4py finds; MPI4PY_LIBMPI set by hand wins."""
    import os
    if not {"MPI4PY_LIBMPI", "MPI4PY_MPIABI", "OMPI_COMM_WORLD_SIZE"} & set(os.environ):
        lib = _pypi_mpich()
        if lib:
            os.environ["MPI4PY_LIBMPI"] = lib
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise EnvironmentProblem(f"a distributed run needs mpi4py and an MPI library ({e}): "
                                 f"`pip install 'fcl[mpi]'` installs both (mpi4py and MPICH)") from None
    return MPI.COMM_WORLD


def _pypi_mpich() -> str | None:
    """The path of the MPI library of PyPI's `mpich` package, if it is installed."""
    from importlib import metadata
    try:
        dist = metadata.distribution("mpich")
    except metadata.PackageNotFoundError:
        return None
    found = [dist.locate_file(f) for f in dist.files or () if f.name == "libmpi.so.12"]
    return str(found[0].resolve()) if found and found[0].exists() else None


def agree(comm, work):
    """work() on every rank; if it fails on any, every rank stops: the lowest failing rank
    raises its own error, the others RankFailed (so that no rank waits forever for a
    collective that a failed rank never reaches)."""
    try:
        out, failure = work(), None
    except (FCLError, EnvironmentProblem) as e:
        out, failure = None, e
    failed = comm.allgather(failure is not None)
    if any(failed):
        if failure is not None and failed.index(True) == comm.Get_rank():
            raise failure
        raise RankFailed()
    return out


def rank_device(comm, spec: str | None):
    """The OpenCL device of this rank: among the usable devices that `spec` matches (the
    default device when there is no spec), the one at this rank's position on its host,
    modulo their number (two ranks on a host of two GPUs take one each)."""
    from fcl.runtime import device as D
    from fcl.runtime import platforms
    key = (comm.py2f(), spec)
    if key in _devices:
        return _devices[key]
    if spec is None:
        dev = D.choose_device(None)
    else:
        matching = [d for d in D.all_devices() if platforms.matches(d, spec) and D.usable(d) is None]
        if not matching:
            return D.choose_device(spec)          # its error says why
        local = comm.Split_type(_shared_type(), key=comm.Get_rank())
        dev = matching[local.Get_rank() % len(matching)]
        local.Free()
    _devices[key] = dev
    return dev


_devices: dict = {}       # (communicator, --device) -> the rank's device


def _shared_type():
    from mpi4py import MPI
    return MPI.COMM_TYPE_SHARED


def blocks(n: int, size: int) -> list[tuple[int, int]]:
    """The contiguous blocks [lo, hi) of n elements over `size` ranks (lengths differ by 1 at most)."""
    return [(n * r // size, n * (r + 1) // size) for r in range(size)]


def block_arg(text: str, rank: int, size: int, seed: int | None = None, position: int | None = None):
    """This rank's block of the array that argument text `text` gives (fclc's literals, with
    `iota:N` made and `@file.npy` read for the block alone)."""
    from fcl.api.literals import parse_arg
    t = text.strip()
    if t.startswith("iota:") and t[5:].isdigit():
        lo, hi = blocks(int(t[5:]), size)[rank]
        return np.arange(lo, hi, dtype=np.int32)
    if t.startswith("@"):
        try:
            whole = np.load(t[1:], mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            whole = None            # parse_arg below says what is wrong with it
        if whole is not None and whole.ndim == 1:
            lo, hi = blocks(len(whole), size)[rank]
            return np.array(whole[lo:hi])
    whole = parse_arg(text, seed=seed, position=position)
    if not isinstance(whole, np.ndarray):
        raise ArgumentError(f"argument {position} `{text}` is split over the ranks, so it must be an array")
    lo, hi = blocks(len(whole), size)[rank]
    return whole[lo:hi]


def run(program, entry: str, *args, halo: int | None = None, replicate=(), comm=None, device=None,
        gather: bool = False, result: str = "host", **compile_options):
    """The result of `entry` over the ranks of `comm` (MPI.COMM_WORLD by default), as the run
    on the whole data gives it: each rank passes its block of every split argument (every
    array argument not named in `replicate`: a numpy array, or a pyopencl array on the
    rank's device, where it stays) and the whole of the others.  A reduction's result comes
    back whole on every rank; a scan's or a local entry's as this rank's block (a pyopencl
    array on its device with `result="device"`), or with `gather` whole on rank 0 (None on
    the others).  `halo`: the entry is local, each element of its result depending on
    `halo` elements of the split arguments on each side (plan.py).  `device`: as `fclc
    --device`; each rank takes the one at its position on its host among those that match."""
    comm = comm or mpi_world()
    dist, values = agree(comm, lambda: _setup(program, entry, args, halo, replicate, comm))
    queue = _queue(agree(comm, lambda: rank_device(comm, device)), values)
    kernel = _compiled(program, entry, dict(compile_options, result=result))
    if dist.kind == "local":
        out = _local(comm, dist, kernel, values, queue)
    elif dist.kind == "reduce":
        part = agree(comm, lambda: _array(kernel(*_on(queue, values)), entry))
        out = _reduce(comm, program, dist, values, part)
    else:
        out = _scan(comm, program, dist, values, kernel, queue, dict(compile_options, result=result))
    if gather and dist.kind != "reduce":
        parts = comm.gather(_host(out), root=0)
        return np.concatenate(parts) if comm.Get_rank() == 0 else None
    return out


def _compiled(program, entry: str, options: dict):
    """program.compile(entry, **options), kept: a Kernel keeps its builds, so that a run
    after the first finds them without going to the disk cache."""
    return _kept((entry, repr(sorted(options.items()))), program, lambda: program.compile(entry, **options))


_memo: dict = {}          # (id of a program, key) -> (the program, what was made from it)


def _kept(key, program, make):
    """make(), made once for `program` and key (kept beside the program, so that a new program
    at a freed one's address is not taken for it)."""
    full = (id(program), key)
    if full not in _memo or _memo[full][0] is not program:
        _memo[full] = (program, make())
    return _memo[full][1]


def _setup(program, entry: str, args, halo, replicate, comm):
    dist = distribution(program, entry, halo, replicate)
    host = program.coerce(entry, [np.empty(0, a.dtype) if _on_device(a) else a for a in args])
    values = [a if _on_device(a) else h for a, h in zip(args, host)]
    mine = [len(values[k]) for k in dist.split]
    if len(set(mine)) > 1:
        names = ", ".join(f"`{dist.params[k]}` {n}" for k, n in zip(dist.split, mine))
        raise ArgumentError(f"the split arguments of `{dist.entry}` must have blocks of one length on each "
                            f"rank, but rank {comm.Get_rank()} has {names}")
    return dist, values


def _on_device(v) -> bool:
    from fcl.runtime import calling
    return calling.is_device_array(v)


def _host(v):
    return v.get() if _on_device(v) else v


def _queue(dev, values):
    """The queue of the rank's device (that of its arrays already there, if any)."""
    from fcl.runtime import device as D
    there = [v.queue for v in values if _on_device(v) and v.queue is not None]
    return there[0] if there else D.get_queue(dev)


def _on(queue, values) -> list:
    """The arguments with their arrays on this rank's device (the kernel runs where they are)."""
    import pyopencl.array as cla
    return [cla.to_device(queue, np.ascontiguousarray(v)) if isinstance(v, np.ndarray) and v.size else v
            for v in values]


def _array(result, entry: str):
    if not (isinstance(result, np.ndarray) or _on_device(result)):
        raise ArgumentError(f"a distributed run of `{entry}` gives an array, not {type(result).__name__}")
    return result


def _last(part):
    """The last element of a result on the host (None if it has none)."""
    return _host(part[len(part) - 1:])[0] if len(part) else None


def _reduce(comm, program, dist: Distribution, values, part) -> np.ndarray:
    """The ranks' one-element results combined with the reduce's operator in rank order."""
    parts = comm.allgather(_last(part))
    op, light = _host_op(program, dist), _light(dist, values)
    acc = parts[0]
    for p in parts[1:]:
        acc = op(light, acc, p)
    return np.asarray([acc], dtype=part.dtype)


def _scan(comm, program, dist: Distribution, values, kernel, queue, options):
    """This rank's block of the scan: its own scan, then `op carry x` for every element x,
    carry the combination, in rank order, of the last elements of the ranks before it
    (ranks with empty blocks left out): one more pass over the block.  (Reducing the blocks
    first and scanning from the carry, the first element made `op carry x`, reads the block
    once less but costs the scan its vector loads: 9.0 against 8.8 ms at 2^30 ints a GPU on
    two H200s.)"""
    part = agree(comm, lambda: _array(kernel(*_on(queue, values)), dist.entry))
    before = [x for x in comm.allgather(_last(part))[:comm.Get_rank()] if x is not None]

    def carried():
        if not before or not len(part):
            return part
        op, light = _host_op(program, dist), _light(dist, values)
        carry = before[0]
        for x in before[1:]:
            carry = op(light, carry, x)
        extended = _with(program, dist, CARRY, ("carry", "xs"),
                         lambda c, xs: _apps(A.Var("mapPull"), _apps(dist.op, c), xs), "{t} -> [{t}] -> [{t}]")
        return _array(_compiled(extended, CARRY, options)(*_on(queue, light), carry, _on(queue, [part])[0]),
                      dist.entry)

    return agree(comm, carried)      # every rank, so that a failure anywhere stops them all


def _local(comm, dist: Distribution, kernel, values, queue):
    """This rank's block of a local entry.  Its first and last `halo` elements need the
    `halo` elements of the ranks before and after it (which travel as small host arrays):
    the entry runs on the block alone, and again on two small pieces, the halo before it
    with the block's first 2 halo elements and the block's last 2 halo with the halo after
    it, whose middle elements replace the block's ends (a block shorter than 2 halo runs
    once, with the halos beside it).  No block is copied: on the device it stays where it is."""
    h, rank = dist.halo, comm.Get_rank()
    n = len(values[dist.split[0]])
    halos = {}
    for k in dist.split:
        v = values[k]
        ends = comm.allgather((_host(v[:h]), _host(v[n - h:]) if h else _host(v[:0])))
        empty = ends[rank][0][:0]
        before = np.concatenate([tail for _, tail in ends[:rank]] + [empty])
        after = np.concatenate([head for head, _ in ends[rank + 1:]] + [empty])
        halos[k] = before[max(0, len(before) - h):], after[:h]
    left, right = (len(halos[dist.split[0]][0]), len(halos[dist.split[0]][1])) if halos else (0, 0)

    def on(make) -> list:
        return [make(k, v) if k in halos else v for k, v in enumerate(values)]

    def apply(args, length: int):
        out = _array(kernel(*_on(queue, args)), dist.entry)
        if len(out) != length:
            raise ArgumentError(f"--halo {h}: `{dist.entry}` gave {len(out)} elements for a block of {length}; "
                                f"a local entry's result is as long as its split arguments")
        return out

    def block():
        if not (left or right):
            return apply(values, n)
        if n < 2 * h:
            whole = apply(on(lambda k, v: np.concatenate([halos[k][0], _host(v), halos[k][1]])), left + n + right)
            return whole[left:left + n]
        out = apply(values, n)
        if left:
            piece = apply(on(lambda k, v: np.concatenate([halos[k][0], _host(v[:2 * h])])), left + 2 * h)
            out[:h] = piece[left:left + h]
        if right:
            piece = apply(on(lambda k, v: np.concatenate([_host(v[n - 2 * h:]), halos[k][1]])), 2 * h + right)
            out[n - h:] = piece[h:2 * h]
        return out

    return agree(comm, block)


def _host_op(program, dist: Distribution):
    """op(values, a, b): the reduce's or scan's operator applied by the evaluator."""
    extended = _with(program, dist, OP, ("a", "b"), lambda a, b: _apps(dist.op, a, b), "{t} -> {t} -> {t}")
    return lambda values, a, b: _scalar(extended.evaluate(OP, *values, a, b))


def _light(dist: Distribution, values) -> list:
    """The arguments with the split ones empty: what the operator, which never reads them
    (plan.py), is evaluated and compiled with."""
    return [np.empty(0, v.dtype) if k in dist.split else _host(v) for k, v in enumerate(values)]


def _scalar(v):
    return v.item() if isinstance(v, np.generic) else v


def _with(program, dist: Distribution, name: str, extra: tuple, body, typed: str):
    """`program` with `fun name p1 .. pk x y = body x y` of type `P1 -> .. -> Pk -> typed`,
    p1 .. pk the entry's parameters and P1 .. Pk their types (so that the operator, an
    expression over them, means and types what it means in the entry: `fn x => fn y => x +
    y` is a float operator in a reduce of floats), `{t}` in `typed` the element type of the
    entry's result; made once a program and entry."""
    def make():
        t, namer, params = program.scheme(dist.entry).body, T.Namer(), []     # one naming of 'a, 'b
        while isinstance(t, T.TFunT):
            params.append(T.format_type(t.arg, namer))
            t = t.res
        sig = " -> ".join(params + [typed.format(t=T.format_type(t.elem, namer))])   # the entry's [t]
        taken = set(dist.params) | {v.name for v in A.free_uses(dist.op)}
        names = tuple(_fresh(x, taken) for x in extra)
        e = body(*(A.Var(x) for x in names))
        for p in reversed(dist.params + names):
            e = A.Lam(p, e)
        return program.extend((*parse_program(f"sig {name} : {sig}").decls, A.Val(name, e, is_fun=True)))

    return _kept((dist.entry, name), program, make)


def _fresh(name: str, taken) -> str:
    while name in taken:
        name += "'"
    return name


def _apps(f, *args):
    for a in args:
        f = A.App(f, a)
    return f
