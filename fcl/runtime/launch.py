"""The interpreter of host plans: a `plan.Plan` run on an OpenCL device through pyopencl.

Consumes a `plan.Plan` and its OpenCL source; `Launcher.run(args)` takes
numpy/Python arguments already checked against the entry's types, binds them
to the plan's host scalars and input buffers, runs the host program (allocate,
launch, read flags, loop, swap) and returns the result as numpy, with each
launch's time from OpenCL profiling events.  Before each launch it sizes the
work-groups and the host-sized local memory and checks them against the device.
This is the only code that gives a plan its meaning on a device.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fcl.base.errors import ArgumentError, CompileError, CompilerBug, EvalError
from fcl.base.hw import STORAGE_DTYPES
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.lower.entry import site_key
from fcl.codegen.opencl import kernel_symbol
from fcl.runtime import calling as C
from fcl.runtime import platforms
from fcl.runtime import device as D

MAX_HOST_ITERATIONS = 1 << 20


def never_ends(length: int) -> str:
    """Why a while whose condition and steps read only its length never ends: the
    length came back to `length` with the condition still holding."""
    if length == 0:
        return ("while never terminates: the array is empty and the condition still holds "
                "(the step of an empty array is empty again)")
    return (f"while never terminates: the array's length comes back to {length} "
            "and the condition still holds")


def local_words(b: K.Buffer, n: int, copies: int, size: int, total: int) -> str:
    """What local buffer `b` holds, in the program's terms: `the force at f.fcl:4 stores its
    array of 100000 ints there (400000 bytes)`, with one copy per warp or work-item and the
    kernel's other local arrays said."""
    elems = f"{n} {b.ty}{'s' if n != 1 else ''}"
    what = {"force": f"the {b.origin} stores its array of {elems}",
            "while": f"the {b.origin} keeps one of its two arrays of {elems}"}.get(
        b.role, f"the {b.origin} keeps {elems}")
    per = {"warp": f" for each of the {copies} warps of a work-group",
           "thread": f" for each of the {copies} work-items of a work-group"}.get(b.per, "")
    others = f", with {total - size} bytes of the kernel's other local arrays" if total > size else ""
    return f"{what} there{per} ({size} bytes{others})"


class _Recheck(Exception):
    """A grid-level interleave's coverage check failed (P.RECHECK): run the plan again."""


@dataclass
class State:
    """One run: host scalars, device buffers, alias bindings, launch events."""
    env: dict
    bufs: dict = field(default_factory=dict)
    bind: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    inputs: set = field(default_factory=set)     # buffers that are the caller's pyopencl arrays
    on_device: bool = False                      # leave an array result on the device

    def buffer(self, name: str):
        return self.bufs[self.bind.get(name, name)]


class Launcher:
    """One Plan built for one device (on FCL's context of the device, or on `context`: that of
    the caller's pyopencl arrays)."""

    def __init__(self, plan: P.Plan, source: str, device, spans: dict | None = None, context=None):
        import pyopencl as cl
        self.cl = cl
        self.plan = plan
        self.source = source
        self.device = device
        self.spans = spans or {}
        self.context = context or D.get_context(device)
        self.queue = D.get_queue(device, self.context)
        options = D.build_options(device)
        self.limits = D.device_limits(device)
        # what every launch of a kernel would compute again (a sort's 48 launches a run): the
        # scalar parameters' numpy types, the sizes of kernels whose local buffers all have
        # constant sizes, and the (kernel, sizes) whose local memory the device has accepted
        self._scalar_types = {p.name: STORAGE_DTYPES["int" if p.ty == "bool" else p.ty].type for p in plan.params}
        self._static_sizes: dict[str, list] = {}
        self._local_ok: set = set()
        for k in plan.kernels:      # before the build: a device compiler refuses oversized static arrays
            self.local_sizes(k, {}, static_only=True)
        self.program = D.build_program(self.context, source, options)
        self.kernels = {k.name: cl.Kernel(self.program, kernel_symbol(k.name)) for k in plan.kernels}
        self._flags: dict = {}          # bounds and while-guard buffers: name -> (buffer, words)
        self._dirty: set = set()        # those a kernel may have set a flag in since a check read zero
        self._zeros: dict = {}          # (length, dtype) -> zeros for claims buffers

    # ------------------------------------------------------------ sizes

    def size_of(self, e: K.Expr, env: dict, what: str, span=None, in_kernel: bool = False) -> int:
        """The host's value of size `e`; a negative one is a run-time error of the program
        (the evaluator reports the `generate`, `take`... whose length is negative), located
        at `span`, the array's own place, where there is one.  `in_kernel`: the size of
        something a kernel computes (a local buffer, the length a device `while` ends with),
        perhaps in a branch or loop that does not run for these arguments, where the
        evaluator reports nothing: a negative one is 0 here, and the kernel's own check of
        that `generate` or `take` reports it where it does run (as the emitted Python module
        does, `fclc compile --emit py`)."""
        try:
            n = K.eval_host(e, env)
        except ZeroDivisionError:
            raise ArgumentError(f"the size of {what} divides by zero for these arguments") from None
        except LookupError:
            raise CompilerBug(f"size of {what} is not computable on the host: {K.format_expr(e)}") from None
        if in_kernel:
            return max(0, int(n))
        if n < 0 and span is not None:
            raise EvalError(f"the length of the {what} is negative ({n}) for these arguments",
                            span, ["a length in it (of a `generate`, say) is negative: `fclc eval` says which"])
        if n < 0:
            raise ArgumentError(f"the size of {what} is negative ({n}) for these arguments")
        return int(n)

    def check_block_size(self):
        bs = self.plan.block_size
        if bs > self.limits["max_work_group_size"]:
            raise CompileError(f"#BlockSize {bs} is larger than the largest work-group of "
                               f"{self.limits['name']} ({self.limits['max_work_group_size']}); "
                               f"compile with a smaller --block-size")

    def slices(self, s: P.Launch, env: dict):
        """The work-groups of each launch that runs `s` (plan.slices), `env` holding that
        launch's first_group and group_total as each is yielded.  A grid size is a count of
        parts the kernel runs, perhaps in a branch that does not run for these arguments: a
        negative one is 0 (at least one work-group runs, whose checks report it where it
        does run), as in the emitted Python module."""
        want = [self.size_of(g, env, f"the grid of {s.kernel}", in_kernel=True) for g in s.groups]
        try:
            parts = P.slices(self.plan.num_groups, self.plan.block_size, s.uses, want)
        except ValueError as e:
            raise ArgumentError(f"the grid of {s.kernel} is too large for these arguments: {e}") from None
        total = sum(groups for _, groups in parts)
        for first, groups in parts:
            env[P.FIRST_GROUP], env[P.GROUP_TOTAL] = first, total
            yield groups

    def local_sizes(self, k: K.Kernel, env: dict, static_only: bool = False) -> list[tuple[K.Buffer, int]]:
        """(buffer, bytes) of each local buffer (only those of constant size with
        `static_only`); CompileError when they do not fit the device."""
        if k.name in self._static_sizes:
            return self._static_sizes[k.name]
        total, out = 0, []
        limit = self.limits["local_mem_size"]
        for b in k.locals_:
            if static_only and not isinstance(b.size, K.Const):
                continue
            n = self.size_of(b.size, env, b.origin, self.spans.get(b.name), in_kernel=True)
            copies = K.copies(b, self.plan.block_size, self.plan.warp_size)
            size = max(1, K.footprint(b, n * copies))
            out.append((b, size * STORAGE_DTYPES[b.ty].itemsize))
            total += out[-1][1]
            if total > limit:
                raise CompileError(
                    f"the kernel needs {total} bytes of local memory, more than {self.limits['name']} has "
                    f"({limit} bytes per work-group): {local_words(b, n, copies, out[-1][1], total)}",
                    self.spans.get(b.name),
                    ["use smaller parts (chunk size) or a smaller --block-size"])
        if not static_only and all(isinstance(b.size, K.Const) for b in k.locals_):
            self._static_sizes[k.name] = out
        return out

    def check_device_local(self, k: K.Kernel, kernel, sizes: list[tuple[K.Buffer, int]]):
        """CompileError where the device counts more local memory for `kernel` (its arguments
        set) than it has: located at its largest local array, as local_sizes' error is
        (Oclgrind counts a kernel's arrays twice when its unchecked version follows it)."""
        cl = self.cl
        key = (k.name, tuple(n for _, n in sizes))
        if key in self._local_ok:
            return
        need = kernel.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, self.device)
        limit = self.limits["local_mem_size"]
        if need <= limit or not sizes:
            self._local_ok.add(key)
            return
        b, size = max(sizes, key=lambda x: x[1])
        raise CompileError(
            f"the kernel needs {need} bytes of local memory as {self.limits['name']} counts them, more "
            f"than it has ({limit} bytes per work-group; FCL counts {sum(n for _, n in sizes)}): its "
            f"largest local array ({size} bytes) is that of the {b.origin}", self.spans.get(b.name),
            ["use smaller parts (chunk size) or a smaller --block-size"])

    # ------------------------------------------------------------ running

    def run(self, args: list):
        """(result, [(kernel name, seconds), ...]) for arguments already type-checked."""
        result, profile = self.start(args)
        return result, profile.kernels

    def start(self, args: list, on_device: bool = False):
        """(result, calling.Profile) for arguments already type-checked (numpy, Python values
        or pyopencl arrays); with `on_device` an array result is a pyopencl array left on the
        device, and nothing waits for the kernels.  Where a grid-level interleave's coverage
        check fails (P.RECHECK), the plan runs again with its atomic claims (P.EXACT_CLAIMS),
        for the evaluator's error."""
        self.check_block_size()
        exact = self.exact_claims()
        while True:
            st = self.bind_args(args)
            st.on_device = on_device
            st.env[P.EXACT_CLAIMS] = exact
            try:
                result = self.exec(self.plan.body, st)
            except _Recheck:
                if exact:
                    raise CompilerBug("an interleave's coverage check failed with exact claims") from None
                exact = 1
                continue
            except BaseException as e:      # a run stopped anywhere: tags may be left set
                self._dirty.update(n for n in self._flags if self.plan.buffer(n).role == "tags")
                if isinstance(e, K.CheckFailed):    # a run-time check in a host expression (a size)
                    raise self.check_error(e.site, e.values) from None
                raise
            return result, C.Profile(st.events)

    def exact_claims(self) -> int:
        """P.EXACT_CLAIMS for a plan's first run: 1 on Oclgrind (two tags written at once, in
        a program that writes a place twice, would be reported as a race), else 0."""
        return int(platforms.is_oclgrind(self.device))

    def bind_args(self, args: list) -> State:
        """The state a plan starts from: each argument split into its leaves (an array's
        buffer and length, a scalar's value), arrays stored by `bind_array`."""
        st = State({})
        leaves = []
        for k, (spec, value) in enumerate(zip(self.plan.args, args)):
            parts, shape = C.split_arg(spec, value, k + 1)
            leaves += parts
            st.env.update(shape)
        for spec, value in leaves:
            if isinstance(spec, P.ArrayArg):
                self.bind_array(spec, value, st)
            elif spec.value is None:
                st.env[spec.param] = int(value) if spec.ty in ("int", "bool") else value
        return st

    def bind_array(self, spec: P.ArrayArg, value, st: State):
        cl = self.cl
        if C.is_device_array(value):
            st.env[spec.length] = value.size
            buf = C.device_buffer(value, self.queue, f"the array `{spec.name or spec.buffer}`")
            st.bufs[spec.buffer] = buf or cl.Buffer(self.context, cl.mem_flags.READ_ONLY, 4)
            st.inputs.add(spec.buffer)
            return
        host = np.ascontiguousarray(value, dtype=STORAGE_DTYPES[spec.ty])
        st.env[spec.length] = len(host)
        if host.size == 0:
            host = np.zeros(1, dtype=STORAGE_DTYPES[spec.ty])
        st.bufs[spec.buffer] = cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                                         hostbuf=host)

    def exec(self, stmts, st: State):
        """Run host statements; the value of the plan's Result, if reached."""
        for s in stmts:
            if isinstance(s, P.Result):
                return self.read_result(s, st)
            if isinstance(s, P.Loop):
                self.loop(s, st)
            else:
                getattr(self, "do_" + type(s).__name__)(s, st)
        return None

    def do_Alloc(self, s: P.Alloc, st: State):
        b = self.plan.buffer(s.buffer)
        n = max(1, self.size_of(b.size, st.env, b.origin, self.spans.get(b.name)))
        fill = b.role in ("claims", "tags")     # zeroed on the device, where not empty
        if b.role in ("guard", "bounds") or fill and K.eval_host(b.size, st.env, total=True):
            st.bufs[b.name] = self.flags(b.name, n, STORAGE_DTYPES[b.ty], fill=fill, events=st.events)
            return
        st.bufs[b.name] = D.memory_pool(self.queue).allocate(n * STORAGE_DTYPES[b.ty].itemsize)

    def zero(self, buf, n: int, dtype):
        """Zeros into buf, and the event of the fill: filled on the device (a radix sort's
        claims buffer of 256 MB a pass at 2^26 keys took the host link when copied in), except
        on Oclgrind, which takes a filled buffer for uninitialised memory: there copied in from
        one host array."""
        if not platforms.is_oclgrind(self.device):
            return self.cl.enqueue_fill_buffer(self.queue, buf, np.zeros(1, dtype=dtype), 0, n * dtype.itemsize)
        zeros = self._zeros.get((n, dtype.str))
        if zeros is None:
            zeros = self._zeros[(n, dtype.str)] = np.zeros(n, dtype=dtype)
        return self.cl.enqueue_copy(self.queue, buf, zeros)

    def flags(self, name: str, n: int, dtype, fill: bool = False, events=None):
        """The launcher's own buffer of n flags for a bounds or while-guard buffer, all zero
        here (CheckBounds/CheckSteps read it): made once, and zeroed again only where a kernel
        may have set a flag since a check last read zero (a failed check, or a run that
        stopped between a launch and its check).  A buffer made or zeroed from host memory
        before every run made the first kernel after it take 0-6% longer on an H100, by an
        amount that changed from process to process (sumAll at 2^26: 94.4-99.7 us; the same
        build launched by hand: 93.8-95.3 us).  Like the kernels' arguments, this makes one
        Launcher serve one run at a time.  A claims or tags buffer (`fill`) is zeroed on the
        device, the fill's event added to `events` as `fill NAME` (device time of the run,
        profiled with its kernels)."""
        buf, size = self._flags.get(name, (None, 0))
        if fill:            # a claims buffer (as long as a result), zeroed on the device
            if buf is None or size != n:
                buf = self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, n * dtype.itemsize)
                self._flags[name] = (buf, n)
                self._dirty.add(name)
            if name in self._dirty and n:
                event = self.zero(buf, n, dtype)
                if events is not None:
                    events.append((f"fill {name}", event))
        elif buf is None or size != n:
            buf = self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE | self.cl.mem_flags.COPY_HOST_PTR,
                                 hostbuf=np.zeros(n, dtype=dtype))
            self._flags[name] = (buf, n)
        elif name in self._dirty:
            self.cl.enqueue_copy(self.queue, buf, np.zeros(n, dtype=dtype))
        self._dirty.discard(name)
        return buf

    def read_flags(self, name: str, st: State, n: int) -> list[int]:
        """The n words of flag buffer `name` (clean again where they are all zero)."""
        words = self.read_ints(st.buffer(name), n)
        if not any(words):
            self._dirty.discard(name)
        return words

    def do_CheckSteps(self, s: P.CheckSteps, st: State):
        bits = self.read_flags(s.buffer, st, 1)[0]
        if bits:
            k = min(k for k in range(len(s.loops)) if bits >> min(k, 29) & 1)
            span = self.spans.get(s.loops[k])
            if bits & P.CAPPED:
                raise EvalError(f"this while ran {P.MAX_DEVICE_STEPS} steps on the device without its "
                                f"condition becoming false; it does not seem to terminate for these "
                                f"arguments", span, [f"the device stops a while after {P.MAX_DEVICE_STEPS} steps"])
            raise EvalError("while never terminates: the array is empty and the condition still holds "
                            "(the step of an empty array is empty again)", span)

    def do_CheckBounds(self, s: P.CheckBounds, st: State):
        bits, site, *values = self.read_flags(s.buffer, st, K.BOUNDS_WORDS)
        if bits and self.plan.check_kind(site) == P.RECHECK:
            raise _Recheck()
        if bits:
            raise self.check_error(site, values)

    def check_error(self, site: int, values) -> EvalError:
        """The error of run-time check number `site` that failed with `values` (the
        evaluator's words, at the evaluator's place)."""
        kind = self.plan.check_kind(site)
        what = "bounds check" if kind == "index" else "run-time check"
        return EvalError(P.failure_message(kind, values), self.spans.get(site_key(site)),
                         [f"found by the compiled program's {what}, for these arguments"])

    def read_ints(self, buf, n: int) -> list[int]:
        host = np.zeros(n, dtype=np.int32)
        self.cl.enqueue_copy(self.queue, host, buf)
        return [int(x) for x in host]

    def do_SetVar(self, s: P.SetVar, st: State):
        if s.size:
            st.env[s.var] = self.size_of(s.expr, st.env, "array a step of this loop gives", self.spans.get(s.var),
                                         in_kernel=True)
            return
        st.env[s.var] = K.eval_host(s.expr, st.env, total=True)     # as the kernels would compute it

    def do_Bind(self, s: P.Bind, st: State):
        st.bind[s.alias] = s.buffer

    def do_Swap(self, s: P.Swap, st: State):
        st.bind[s.a], st.bind[s.b] = st.bind[s.b], st.bind[s.a]

    def do_ReadScalar(self, s: P.ReadScalar, st: State):
        if s.expr is None:
            st.env[s.var] = self.read_ints(st.buffer(s.buffer), 1)[0]
        else:
            st.env[s.var] = K.eval_host(s.expr, st.env, total=True,
                                        load=lambda buf, ty, i: self.read_element(st.buffer(buf), ty, i))

    def read_element(self, buf, ty: str, i: int) -> int:
        """Element i of a global buffer of `ty` (int or long) elements."""
        dtype = STORAGE_DTYPES[ty]
        host = np.zeros(1, dtype=dtype)
        self.cl.enqueue_copy(self.queue, host, buf, src_offset=i * dtype.itemsize)
        return int(host[0])

    def do_Launch(self, s: P.Launch, st: State):
        cl = self.cl
        k = self.plan.kernel(P.chosen(s, st.env))
        sizes = self.local_sizes(k, st.env)
        dynamic = [cl.LocalMemory(nbytes) for b, nbytes in sizes if not isinstance(b.size, K.Const)]
        kernel = self.kernels[k.name]
        # it may set a flag (not a tag: the kernel after the tags' writes clears them)
        self._dirty.update(b for b in s.uses.buffers if b in self._flags and self.plan.buffer(b).role != "tags")
        bs = self.plan.block_size
        for n, groups in enumerate(self.slices(s, st.env)):
            scalars = [self._scalar_types[p](st.env[p]) for p in s.uses.params]
            kernel.set_args(*[st.buffer(b) for b in s.uses.buffers], *scalars, *dynamic)
            if n == 0:
                self.check_device_local(k, kernel, sizes)
            st.events.append((k.name, cl.enqueue_nd_range_kernel(self.queue, kernel, (groups * bs,), (bs,))))

    def loop(self, s: P.Loop, st: State):
        seen = set()
        for _ in range(MAX_HOST_ITERATIONS):
            self.exec(s.head, st)
            if not K.eval_host(s.cond, st.env):
                return
            if s.length:
                n = st.env[s.length]
                if n in seen:
                    raise EvalError(never_ends(n), self.spans.get(s.origin))
                seen.add(n)
            self.exec(s.body, st)
        raise ArgumentError(f"a grid-level while ran {MAX_HOST_ITERATIONS} steps without its condition "
                            f"becoming false; it does not seem to terminate for these arguments")

    def read_result(self, s: P.Result, st: State):
        if s.kind == "pair":
            return tuple(self.read_result(p, st) for p in s.parts)
        if s.kind == "zip":       # an array of pairs: its components on the device, else one array
            parts = [self.read_result(p, st) for p in s.parts]
            return tuple(parts) if st.on_device else C.zipped(*parts)
        n = self.size_of(s.length, st.env, "the result", self.spans.get(s.buffer))
        if st.on_device and s.kind != "scalar":
            name = st.bind.get(s.buffer, s.buffer)
            buf = st.bufs[name]
            if name in st.inputs:       # the caller's own array: never hand it back as the result
                nbytes = max(n, 1) * STORAGE_DTYPES[s.ty].itemsize
                buf = D.memory_pool(self.queue).allocate(nbytes)
                if n:
                    self.cl.enqueue_copy(self.queue, buf, st.bufs[name], byte_count=nbytes)
            return C.device_result(self.queue, buf, n, bool if s.ty == "bool" else STORAGE_DTYPES[s.ty])
        host = np.empty(max(n, 1), dtype=STORAGE_DTYPES[s.ty])
        self.cl.enqueue_copy(self.queue, host, st.buffer(s.buffer))
        host = host[:n]
        if s.ty == "bool":
            host = host.astype(bool)
        if s.kind == "scalar":
            return {"int": int, "double": float, "bool": bool}.get(s.ty, np.float32)(host[0])
        return host

    def time(self, args: list, repeat: int = 10) -> list[float]:
        """Total kernel seconds of each of `repeat` runs (one warm-up run first)."""
        self.run(args)
        return [sum(t for _, t in self.run(args)[1]) for _ in range(repeat)]
