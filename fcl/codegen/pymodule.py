"""KPrograms + their OpenCL sources -> a standalone Python module (`fclc compile --emit py`).

The module needs only pyopencl and numpy: it embeds each entry's OpenCL
source and launch plan (sizes as Python expressions over the arguments) and
defines a class `Kernels` with one method per entry point.  It mirrors
fcl.runtime.launch.Launcher; it does not check argument types beyond dtype
conversion (the FCL tools do that).
"""
from __future__ import annotations

from fcl.codegen import kir as K

PY_OPS = {"add": "_wrap({a} + {b})", "sub": "_wrap({a} - {b})", "mul": "_wrap({a} * {b})",
          "div": "_div({a}, {b})", "mod": "_mod({a}, {b})", "lt": "({a} < {b})", "le": "({a} <= {b})",
          "gt": "({a} > {b})", "ge": "({a} >= {b})", "eq": "({a} == {b})", "ne": "({a} != {b})",
          "and": "({a} and {b})", "or": "({a} or {b})", "band": "({a} & {b})", "bor": "({a} | {b})",
          "bxor": "({a} ^ {b})", "shl": "_wrap({a} << ({b} & 31))", "shr": "({a} >> ({b} & 31))"}

RUNTIME = '''
import numpy as np
import pyopencl as cl

_DTYPES = {"int": np.int32, "float": np.float32, "double": np.float64, "bool": np.uint8}


def _wrap(x):
    return ((x + 2**31) % 2**32) - 2**31


def _footprint(b, n):
    return n + (n >> 5) + 1 if b["skew"] else n


def _div(a, b):
    if b == 0:
        raise ZeroDivisionError("a size divides by zero for these arguments")
    q = abs(a) // abs(b)
    return _wrap(-q if (a < 0) != (b < 0) else q)


def _mod(a, b):
    if b == 0:
        raise ZeroDivisionError("a size divides by zero for these arguments")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class Kernels:
    """The compiled entry points; one method each. `context`: a pyopencl Context
    (default: cl.create_some_context(interactive=False))."""

    def __init__(self, context=None):
        self.context = context or cl.create_some_context(interactive=False)
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self._programs = {}
        self.last_times = []

    def _program(self, entry):
        if entry not in self._programs:
            prg = cl.Program(self.context, SOURCES[entry]).build(
                options=["-cl-fp32-correctly-rounded-divide-sqrt"])
            self._programs[entry] = prg
        return self._programs[entry]

    def _run(self, entry, args):
        plan = PLANS[entry]
        env, arrays = {}, {}
        for spec, value in zip(plan["arguments"], args):
            if spec[0] == "scalar":
                env[spec[1]] = value
            else:
                host = np.ascontiguousarray(value, dtype=_DTYPES[spec[3]])
                arrays[spec[1]] = host
                env[spec[2]] = len(host)
        bind = {}
        for loop in plan["loops"]:
            env[loop["length"]] = loop["init_length"](env)
            bind[loop["cur"]], bind[loop["nxt"]] = loop["bind"]
        mf = cl.mem_flags
        bufs = {}
        for b in plan["buffers"]:
            if b["role"] == "alias":
                continue
            if b["name"] in arrays:
                host = arrays[b["name"]] if arrays[b["name"]].size else np.zeros(1, _DTYPES[b["type"]])
                bufs[b["name"]] = cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
            else:
                n = max(1, b["size"](env))
                bufs[b["name"]] = cl.Buffer(self.context, mf.READ_WRITE, n * np.dtype(_DTYPES[b["type"]]).itemsize)
        prg, events = self._program(entry), []
        bs, mult = plan["block_size"], {"": 1, "warp": plan["block_size"] // plan["warp_size"],
                                        "thread": plan["block_size"]}

        def launch(i):
            k = plan["kernels"][i]
            kernel = cl.Kernel(prg, k["name"])
            scalars = [_DTYPES["int" if p[1] == "bool" else p[1]](env[p[0]]) for p in plan["params"]]
            local = [cl.LocalMemory(max(1, _footprint(b, b["size"](env) * mult[b["per"]]))
                                    * np.dtype(_DTYPES[b["type"]]).itemsize) for b in k["dynamic_local"]]
            kernel.set_args(*[bufs[bind.get(b["name"], b["name"])] for b in plan["buffers"]], *scalars, *local)
            groups = max(1, min(plan["num_groups"], max([g(env) for g in k["groups"]], default=1)))
            events.append(cl.enqueue_nd_range_kernel(self.queue, kernel, (groups * bs,), (bs,)))

        loops = {loop["cond"]: loop for loop in plan["loops"]}
        i = 0
        while i < len(plan["kernels"]):
            loop = loops.get(i)
            if loop is None:
                launch(i)
                i += 1
                continue
            flag = np.zeros(1, dtype=np.int32)
            while True:
                launch(loop["cond"])
                cl.enqueue_copy(self.queue, flag, bufs[loop["flag"]])
                if not flag[0]:
                    break
                for j in range(*loop["body"]):
                    launch(j)
                env[loop["length"]] = loop["new_length"](env)
                bind[loop["cur"]], bind[loop["nxt"]] = bind[loop["nxt"]], bind[loop["cur"]]
            i = loop["body"][1]
        out = plan["result"]
        n = out["length"](env)
        host = np.empty(max(n, 1), dtype=_DTYPES[out["type"]])
        cl.enqueue_copy(self.queue, host, bufs[bind.get(out["buffer"], out["buffer"])])
        self.last_times = [(e.profile.end - e.profile.start) * 1e-9 for e in events]
        host = host[:n].astype(bool) if out["type"] == "bool" else host[:n]
        return host[0] if out["kind"] == "scalar" else host
'''


def py_expr(e: K.Expr) -> str:
    """A size expression as Python text over `env` (int32 semantics)."""
    if isinstance(e, K.Const):
        return repr(e.value)
    if isinstance(e, K.Var):
        return f"env[{e.name!r}]"
    if isinstance(e, K.Bin):
        return PY_OPS[e.op].format(a=py_expr(e.a), b=py_expr(e.b))
    if isinstance(e, K.Un):
        return f"(not {py_expr(e.a)})" if e.op == "not" else f"_wrap(-{py_expr(e.a)})"
    if isinstance(e, K.Select):
        return f"({py_expr(e.a)} if {py_expr(e.cond)} else {py_expr(e.b)})"
    if isinstance(e, K.Call) and e.fn in ("min", "max"):
        return f"{e.fn}({py_expr(e.args[0])}, {py_expr(e.args[1])})"
    raise ValueError(f"not a host size expression: {K.format_expr(e)}")


def lam(e: K.Expr) -> str:
    return f"lambda env: {py_expr(e)}"


def plan_literal(kp: K.KProgram) -> str:
    """The launch plan of one entry as a Python literal (sizes as lambdas)."""
    def buf(b):
        return (f'{{"name": {b.name!r}, "type": {b.ty!r}, "per": {b.per!r}, "role": {b.role!r}, '
                f'"skew": {b.layout == "skew32"!r}, '
                f'"size": {lam(b.size)}}}')
    kernels = []
    for k in kp.kernels:
        dynamic = [buf(b) for b in k.locals_ if not isinstance(b.size, K.Const)]
        kernels.append(f'{{"name": {k.name!r}, "groups": [{", ".join(lam(g) for g in k.groups)}], '
                       f'"dynamic_local": [{", ".join(dynamic)}]}}')
    loops = [f'{{"cond": {lp.cond}, "body": {tuple(lp.body)!r}, "flag": {lp.flag!r}, '
             f'"length": {lp.length!r}, "init_length": {lam(lp.init_length)}, '
             f'"new_length": {lam(lp.new_length)}, "cur": {lp.cur!r}, "nxt": {lp.nxt!r}, '
             f'"bind": {tuple(lp.bind)!r}}}' for lp in kp.loops]
    o = kp.output
    return (f'{{"arguments": {list(map(list, kp.arg_layout))!r}, "loops": [{", ".join(loops)}], '
            f'"params": {[(p.name, p.ty) for p in kp.params]!r}, '
            f'"buffers": [{", ".join(buf(b) for b in kp.buffers)}], '
            f'"kernels": [{", ".join(kernels)}], '
            f'"block_size": {kp.block_size}, "warp_size": {kp.warp_size}, "num_groups": {kp.num_groups}, '
            f'"result": {{"kind": {o.kind!r}, "buffer": {o.buf!r}, "type": {o.ty!r}, "length": {lam(o.length)}}}}}')


def emit_module(kprogs, sources, origin: str) -> str:
    """The text of a standalone module running `kprogs` (one method per entry point)."""
    names = [kp.entry for kp in kprogs]
    head = (f'"""OpenCL kernels compiled by fclc from {origin}: entry points {", ".join(names)}.\n\n'
            f'Needs only pyopencl and numpy:\n\n    k = Kernels()\n    out = k.{names[0]}(...)\n"""\n')
    sources_text = "SOURCES = {\n" + "".join(f"    {kp.entry!r}: {src!r},\n" for kp, src in zip(kprogs, sources)) + "}\n"
    plans_text = "PLANS = {\n" + "".join(f"    {kp.entry!r}: {plan_literal(kp)},\n" for kp in kprogs) + "}\n"
    methods = []
    for kp in kprogs:
        args = [f"a{k}" for k in range(len(kp.arg_layout))]
        methods.append(f"\n\ndef _{kp.entry}(self, {', '.join(args)}):\n"
                       f"    return self._run({kp.entry!r}, [{', '.join(args)}])\n\n\n"
                       f"Kernels.{kp.entry} = _{kp.entry}\n")
    return head + RUNTIME + "\n" + sources_text + "\n" + plans_text + "".join(methods)
