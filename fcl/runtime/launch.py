"""Launch plans: a compiled `KProgram` run on an OpenCL device through pyopencl.

Consumes a `kir.KProgram` and its OpenCL source; `Launcher.run(args)` takes
numpy/Python arguments already checked against the entry's types, sizes every
buffer on the host from the argument values, checks work-group size and local
memory against the device before anything is launched, runs the kernels in
order and returns the result as numpy, with each kernel's time from OpenCL
profiling events.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fcl.codegen import kir as K
from fcl.errors import ArgumentError, CompileError, CompilerBug
from fcl.runtime import device as D

DTYPES = {"int": np.int32, "float": np.float32, "double": np.float64, "bool": np.uint8}
BUILD_OPTIONS = ("-cl-fp32-correctly-rounded-divide-sqrt",)
MAX_HOST_ITERATIONS = 1 << 20


@dataclass(frozen=True)
class LaunchStep:
    """One kernel launch, sized for particular arguments."""
    kernel: str
    groups: int
    block_size: int
    local_bytes: int


class Launcher:
    """One KProgram built for one device."""

    def __init__(self, kprog: K.KProgram, source: str, device, spans: dict | None = None):
        import pyopencl as cl
        self.cl = cl
        self.kprog = kprog
        self.source = source
        self.device = device
        self.spans = spans or {}
        self.context = D.get_context(device)
        self.queue = D.get_queue(device)
        options = BUILD_OPTIONS
        if "oclgrind" in device.platform.name.lower():
            # Oclgrind cannot run some intrinsics clang's optimiser emits (llvm.abs)
            # and its uninitialised-value check trips on `freeze`: build unoptimised.
            options = options + ("-cl-opt-disable",)
        self.program = D.build_program(self.context, source, options)
        self.kernels = {k.name: cl.Kernel(self.program, k.name) for k in kprog.kernels}
        self.limits = D.device_limits(device)

    # ------------------------------------------------------------ planning

    def host_env(self, args: list) -> dict:
        """Values of every scalar parameter (argument scalars, array lengths, and the
        lengths of grid-level while loops at their start)."""
        env = {}
        for spec, value in zip(self.kprog.arg_layout, args):
            if spec[0] == "scalar":
                env[spec[1]] = int(value) if spec[2] in ("int", "bool") else value
            else:
                env[spec[2]] = len(value)
        for loop in self.kprog.loops:
            env[loop.length] = self.size_of(loop.init_length, env, "a while loop")
        return env

    def size_of(self, e: K.Expr, env: dict, what: str) -> int:
        try:
            n = K.eval_host(e, env)
        except ZeroDivisionError:
            raise ArgumentError(f"the size of {what} divides by zero for these arguments") from None
        except LookupError:
            raise CompilerBug(f"size of {what} is not computable on the host: {K.format_expr(e)}") from None
        if n < 0:
            raise ArgumentError(f"the size of {what} is negative ({n}) for these arguments")
        return int(n)

    def check_block_size(self):
        bs = self.kprog.block_size
        if bs > self.limits["max_work_group_size"]:
            raise CompileError(f"#BlockSize {bs} is larger than the largest work-group of "
                               f"{self.limits['name']} ({self.limits['max_work_group_size']}); "
                               f"compile with a smaller --block-size")

    def step(self, k: K.Kernel, env: dict) -> LaunchStep:
        """Launch size of kernel k for the current host values."""
        want = [self.size_of(g, env, f"the grid of {k.name}") for g in k.groups]
        groups = max(1, min(self.kprog.num_groups, max(want, default=1)))
        return LaunchStep(k.name, groups, self.kprog.block_size, self.local_bytes(k, env))

    def plan(self, args: list) -> list[LaunchStep]:
        """Launch sizes for these arguments (loops at their first iteration); CompileError
        if the device cannot run them."""
        self.check_block_size()
        env = self.host_env(args)
        return [self.step(k, env) for k in self.kprog.kernels]

    def local_bytes(self, k: K.Kernel, env: dict) -> int:
        total = 0
        limit = self.limits["local_mem_size"]
        for b in k.locals_:
            total += self.local_elems(b, env) * np.dtype(DTYPES[b.ty]).itemsize
            if total > limit:
                raise CompileError(
                    f"the kernel needs {total} bytes of local memory at the {b.origin} "
                    f"(buffer {b.name}), more than {self.limits['name']} has ({limit} bytes per work-group)",
                    self.spans.get(b.name),
                    ["use smaller parts (chunk size) or a smaller --block-size"])
        return total

    def local_elems(self, b: K.Buffer, env: dict) -> int:
        n = self.size_of(b.size, env, b.origin)
        return max(1, K.footprint(b, n * K.copies(b, self.kprog.block_size, self.kprog.warp_size)))

    # ------------------------------------------------------------ running

    def run(self, args: list):
        """(result, [(kernel name, seconds), ...]) for arguments already type-checked."""
        self.plan(args)
        env = self.host_env(args)
        bufs = self.global_buffers(args, env)
        bind = {}
        for loop in self.kprog.loops:
            bind[loop.cur], bind[loop.nxt] = loop.bind
        events = []
        loops = {loop.cond: loop for loop in self.kprog.loops}
        i = 0
        while i < len(self.kprog.kernels):
            loop = loops.get(i)
            if loop is None:
                events.append(self.launch(i, env, bufs, bind))
                i += 1
                continue
            self.host_loop(loop, env, bufs, bind, events)
            i = loop.body[1]
        result = self.read_output(bufs, env, bind)
        times = [(name, (e.profile.end - e.profile.start) * 1e-9) for name, e in events]
        return result, times

    def launch(self, i: int, env: dict, bufs: dict, bind: dict):
        cl = self.cl
        k = self.kprog.kernels[i]
        step = self.step(k, env)
        kernel = self.kernels[k.name]
        scalars = [self.scalar_arg(p, env) for p in self.kprog.params]
        dynamic = [cl.LocalMemory(self.local_elems(b, env) * np.dtype(DTYPES[b.ty]).itemsize)
                   for b in k.locals_ if not isinstance(b.size, K.Const)]
        kernel.set_args(*[bufs[bind.get(b.name, b.name)] for b in self.kprog.buffers], *scalars, *dynamic)
        event = cl.enqueue_nd_range_kernel(self.queue, kernel, (step.groups * step.block_size,),
                                           (step.block_size,))
        return k.name, event

    def host_loop(self, loop: K.HostLoop, env: dict, bufs: dict, bind: dict, events: list):
        """A grid-level while: condition kernel, read the flag, step kernels, swap."""
        bind[loop.cur], bind[loop.nxt] = loop.bind
        env[loop.length] = self.size_of(loop.init_length, env, "a while loop")
        flag = np.zeros(1, dtype=np.int32)
        for _ in range(MAX_HOST_ITERATIONS):
            events.append(self.launch(loop.cond, env, bufs, bind))
            self.cl.enqueue_copy(self.queue, flag, bufs[loop.flag])
            if not flag[0]:
                return
            for j in range(*loop.body):
                events.append(self.launch(j, env, bufs, bind))
            env[loop.length] = self.size_of(loop.new_length, env, "a while loop")
            bind[loop.cur], bind[loop.nxt] = bind[loop.nxt], bind[loop.cur]
        raise ArgumentError(f"a grid-level while ran {MAX_HOST_ITERATIONS} steps without its condition "
                            f"becoming false; it does not seem to terminate for these arguments")

    def scalar_arg(self, p: K.Param, env: dict):
        ty = "int" if p.ty == "bool" else p.ty
        return DTYPES[ty](env[p.name])

    def global_buffers(self, args: list, env: dict) -> dict:
        cl = self.cl
        mf = cl.mem_flags
        out = {}
        arrays = {spec[1]: value for spec, value in zip(self.kprog.arg_layout, args) if spec[0] == "array"}
        for b in self.kprog.buffers:
            if b.role == "alias":
                continue
            if b.name in arrays:
                host = np.ascontiguousarray(arrays[b.name], dtype=DTYPES[b.ty])
                if host.size == 0:
                    host = np.zeros(1, dtype=DTYPES[b.ty])
                out[b.name] = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
            else:
                n = max(1, self.size_of(b.size, env, b.origin))
                out[b.name] = cl.Buffer(self.context, mf.READ_WRITE, n * np.dtype(DTYPES[b.ty]).itemsize)
        return out

    def read_output(self, bufs: dict, env: dict, bind: dict):
        spec = self.kprog.output
        n = self.size_of(spec.length, env, "the result")
        host = np.empty(max(n, 1), dtype=DTYPES[spec.ty])
        self.cl.enqueue_copy(self.queue, host, bufs[bind.get(spec.buf, spec.buf)])
        host = host[:n]
        if spec.ty == "bool":
            host = host.astype(bool)
        if spec.kind == "scalar":
            v = host[0]
            return {"int": int, "double": float, "bool": bool}.get(spec.ty, np.float32)(v)
        return host

    def time(self, args: list, repeat: int = 10) -> list[float]:
        """Total kernel seconds of each of `repeat` runs (one warm-up run first)."""
        self.run(args)
        return [sum(t for _, t in self.run(args)[1]) for _ in range(repeat)]
