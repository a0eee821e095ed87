entry revDistribute: 1 kernel, #BlockSize 256, #WarpSize 32, #NumGroups 65536
arguments: chunkSize int -> arg0, arr int[n1] -> in1_1
global buffers:
  in1_1      int[lengthPull arr]  input: argument 2
  bounds     int[6]  bounds: device run-time checks
  out3       int[chunkSize * hs2]  output: result of revDistribute
kernel revDistribute(in1_1, bounds, out3, arg0, n1, hs2): 0 barriers
host program:
  alloc bounds : int[6]
  hs2 := lengthPull arr / chunkSize
  alloc out3 : int[chunkSize * hs2]
  launch revDistribute on min(#NumGroups, max(1, hs2)) work-groups x 256 work-items (in1_1, bounds, out3, arg0, n1, hs2)
  check bounds: no run-time check failed (7 of the program's 9 run-time checks left on the device: `index`, zero divisors, part lengths)
  result: array in out3, length chunkSize * hs2
examples/reverse.fcl:9:3: note: `splitUp` leaves out the last `length mod n` elements (n: the part size); `pad n x` the array first to keep them

#pragma OPENCL FP_CONTRACT OFF

/* FCL integer semantics: 32-bit wrap-around, truncating division (x/0 = 0 here; the
   program's run-time check of the divisor reports it), shift counts masked to 5 bits. */
static inline int fcl_add(int a, int b) { return (int)((uint)a + (uint)b); }
static inline int fcl_sub(int a, int b) { return (int)((uint)a - (uint)b); }
static inline int fcl_mul(int a, int b) { return (int)((uint)a * (uint)b); }
static inline int fcl_neg(int a) { return (int)(0u - (uint)a); }
static inline int fcl_div(int a, int b) { return b == 0 ? 0 : (b == -1 ? fcl_neg(a) : a / b); }
static inline int fcl_mod(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }
static inline int fcl_shl(int a, int b) { return (int)((uint)a << (b & 31)); }
static inline int fcl_shr(int a, int b) { return a >> (b & 31); }
static inline int fcl_abs(int a) { return a < 0 ? fcl_neg(a) : a; }
/* local memory layout: element i of a skewed buffer lives at i + i/32 (no bank conflicts) */
static inline int fcl_skew(int i) { return i + (i >> 5); }
/* a run-time check that failed (see kir.record_failure): set the site's bit in err[0]; the
   first failure also stores its site and values */
static inline void fcl_fail(__global int* err, int site, int a, int b, int c, int d) {
  if (atomic_or(&err[0], 1 << min(site, 30)) == 0) { err[1] = site; err[2] = a; err[3] = b; err[4] = c; err[5] = d; }
}
/* a bounds-checked index (fclc --no-bounds-checks leaves them out): outside [0, n) it
   records a failure with the index and length, and the index becomes 0, so the read stays
   inside the buffer */
static inline int fcl_check(int i, int n, __global int* err, int site) {
  if (i >= 0 && i < n) return i;
  fcl_fail(err, site, i, n, 0, 0);
  return 0;
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void revDistribute(
    __global const int* restrict in1_1  /* argument 2: global, n1 x int */,
    __global int* bounds  /* device run-time checks: global, 6 x int */,
    __global int* out3  /* result of revDistribute: global, (arg0 mul hs2) x int */,
    const int arg0,
    const int n1,
    const int hs2)
{
  const int lid = (int)get_local_id(0);
  const int wid = lid / 32;
  const int lane = lid % 32;
  if (!(fcl_div(n1, arg0 != 0 ? arg0 : fcl_check(n1, 0, bounds, 0)) >= 0)) {
    fcl_fail(bounds, 1, fcl_div(n1, arg0 != 0 ? arg0 : fcl_check(n1, 0, bounds, 0)), 0, 0, 0);
  }
  if (!(hs2 >= 0)) {
    fcl_fail(bounds, 2, hs2, 0, 0, 0);
  }
  if (!(arg0 >= 0)) {
    fcl_fail(bounds, 3, arg0, 0, 0, 0);
  }
  const bool inv3 = !(arg0 >= 0);
  for (int part4 = (int)get_group_id(0); part4 < hs2; part4 += (int)get_num_groups(0)) {
    const int sh6 = hs2 - 1 - part4;
    if (inv3) {
      fcl_fail(bounds, 5, arg0, 0, 0, 0);
    }
    if (inv3) {
      fcl_fail(bounds, 6, arg0, 0, 0, 0);
    }
    const int inv1 = fcl_mul(part4, arg0);
    const int inv2 = fcl_mul(sh6, arg0);
    for (int i7 = lid; i7 < arg0; i7 += 256) {
      out3[fcl_add(inv1, i7)] = in1_1[fcl_check(fcl_add(inv2, arg0 - 1 - i7), n1, bounds, 8)];
    }
  }
}
