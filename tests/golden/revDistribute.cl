entry revDistribute: 1 kernel, #BlockSize 256, #WarpSize 32, #NumGroups 65536
arguments: chunkSize int -> arg0, arr int[n1] -> in1_1
global buffers:
  in1_1      int[lengthPull arr]  input: argument 2
  out2       int[chunkSize * (lengthPull arr / chunkSize)]  output: result of revDistribute
  bounds     int[4]  bounds: device bounds checks
kernel revDistribute(in1_1, out2, bounds, arg0, n1): 0 barriers
host program:
  alloc out2 : int[chunkSize * (lengthPull arr / chunkSize)]
  alloc bounds : int[4]
  launch revDistribute on min(#NumGroups, max(1, lengthPull arr / chunkSize)) work-groups x 256 work-items (in1_1, out2, bounds, arg0, n1)
  check bounds: no index was out of range (3 device checks left of 3 `index`es)
  result: array in out2, length chunkSize * (lengthPull arr / chunkSize)
examples/reverse.fcl:9:3: note: `splitUp` leaves out the last `length mod n` elements (n: the part size); `pad n x` the array first to keep them

#pragma OPENCL FP_CONTRACT OFF

/* FCL integer semantics: 32-bit wrap-around, truncating division (x/0 = 0 here;
   the reference evaluator reports it), shift counts masked to 5 bits. */
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
/* a bounds-checked index (fclc --no-bounds-checks leaves them out): outside [0, n) it sets
   the site's bit in err[0], the first failure also stores its site, index and length,
   and the index becomes 0, so the read stays inside the buffer */
static inline int fcl_check(int i, int n, __global int* err, int site) {
  if (i >= 0 && i < n) return i;
  if (atomic_or(&err[0], 1 << min(site, 30)) == 0) { err[1] = site; err[2] = i; err[3] = n; }
  return 0;
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void revDistribute(
    __global const int* restrict in1_1  /* argument 2: global, n1 x int */,
    __global int* out2  /* result of revDistribute: global, (arg0 mul (n1 div arg0)) x int */,
    __global int* bounds  /* device bounds checks: global, 4 x int */,
    const int arg0,
    const int n1)
{
  const int lid = get_local_id(0);
  const int wid = lid / 32;
  const int lane = lid % 32;
  const int inv4 = fcl_sub(fcl_div(n1, arg0), 1);
  const int inv5 = fcl_div(n1, arg0);
  for (int part3 = get_group_id(0); part3 < inv5; part3 += get_num_groups(0)) {
    const int inv1 = fcl_mul(part3, arg0);
    const int inv2 = fcl_sub(inv4, part3);
    for (int i5 = lid; i5 < arg0; i5 += 256) {
      out2[fcl_add(inv1, i5)] = in1_1[fcl_check(fcl_add(fcl_mul(fcl_check(inv2, inv5, bounds, 0), arg0), fcl_check(fcl_sub(fcl_sub(arg0, 1), i5), arg0, bounds, 1)), n1, bounds, 2)];
    }
  }
}
