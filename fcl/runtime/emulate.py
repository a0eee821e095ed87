"""A host plan run on the kernel-IR interpreter instead of a device.

`Emulator(plan)` has the `Launcher` interface (`run(args)`): the host program
is the Launcher's own interpreter (one meaning of a plan); only memory and
launches differ: buffers are numpy arrays and each `Launch` runs
`fcl.codegen.interp` over the kernel's work-groups.  Kernels receive only the
buffers and host scalars their launch lists, so a missing use is caught.
For tests of passes without OpenCL; slow (a Python generator per work-item),
so meant for small inputs.
"""
from __future__ import annotations

import numpy as np

from fcl.base.hw import STORAGE_DTYPES
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen import interp
from fcl.runtime import calling as C
from fcl.runtime.launch import Launcher, State


class Emulator(Launcher):
    """A plan after every pass (mapped kernels), run without a device."""

    def __init__(self, plan: P.Plan, spans: dict | None = None):          # no device, no OpenCL build
        self.plan = plan
        self.spans = spans or {}
        self.launches = 0
        self._flags, self._dirty = {}, set()    # unused: every run allocates its flag buffers anew

    def check_block_size(self):
        pass

    def exact_claims(self) -> int:
        return 0

    def bind_array(self, spec: P.ArrayArg, value, st: State):
        host = np.array(value, dtype=STORAGE_DTYPES[spec.ty]).reshape(-1)
        st.env[spec.length] = len(host)
        st.bufs[spec.buffer] = host if host.size else np.zeros(1, STORAGE_DTYPES[spec.ty])

    def do_Alloc(self, s: P.Alloc, st: State):
        b = self.plan.buffer(s.buffer)
        st.bufs[b.name] = np.zeros(max(1, self.size_of(b.size, st.env, b.origin)), STORAGE_DTYPES[b.ty])

    def read_ints(self, buf, n: int) -> list[int]:
        return [int(x) for x in buf[:n]]

    def read_element(self, buf, ty: str, i: int) -> int:
        return int(buf[i])

    def do_Launch(self, s: P.Launch, st: State):
        k = self.plan.kernel(P.chosen(s, st.env))
        arrays = {b: st.buffer(b) for b in s.uses.buffers}
        sizes = {b.name: K.footprint(b, self.size_of(b.size, st.env, b.origin, in_kernel=True)
                                     * K.copies(b, self.plan.block_size, self.plan.warp_size))
                 for b in k.locals_}
        for groups in self.slices(s, st.env):
            env = {p: st.env[p] for p in s.uses.params}
            interp.KernelRun(k, groups, self.plan.block_size, self.plan.warp_size, arrays, env, sizes).run()
            self.launches += 1

    def read_result(self, s: P.Result, st: State):
        if s.kind == "pair":
            return tuple(self.read_result(p, st) for p in s.parts)
        if s.kind == "zip":
            return C.zipped(*(self.read_result(p, st) for p in s.parts))
        n = self.size_of(s.length, st.env, "the result")
        host = st.buffer(s.buffer)[:n].copy()
        if s.ty == "bool":
            host = host.astype(bool)
        if s.kind == "scalar":
            return {"int": int, "double": float, "bool": bool}.get(s.ty, np.float32)(host[0])
        return host
