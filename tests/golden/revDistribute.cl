entry revDistribute: 1 kernel, #BlockSize 256, #WarpSize 32, #NumGroups 65536
arguments: chunkSize int -> arg0, arr int[n1] -> in1_1
global buffers:
  in1_1      int[lengthPull arr]  input: argument 2
  out2       int[chunkSize * (lengthPull arr / chunkSize)]  output: result of revDistribute
kernel revDistribute(in1_1, out2, arg0, n1): 0 barriers
host program:
  alloc out2 : int[chunkSize * (lengthPull arr / chunkSize)]
  launch revDistribute on min(#NumGroups, max(1, lengthPull arr / chunkSize)) work-groups x 256 work-items (in1_1, out2, arg0, n1)
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

__kernel void revDistribute(
    __global const int* restrict in1_1  /* argument 2: global, n1 x int */,
    __global int* out2  /* result of revDistribute: global, (arg0 mul (n1 div arg0)) x int */,
    const int arg0,
    const int n1)
{
  const int lid = get_local_id(0);
  const int wid = lid / 32;
  const int lane = lid % 32;
  const int inv3 = fcl_sub(fcl_div(n1, arg0), 1);
  for (int part3 = get_group_id(0); part3 < fcl_div(n1, arg0); part3 += get_num_groups(0)) {
    const int inv1 = fcl_mul(part3, arg0);
    const int inv2 = fcl_mul(fcl_sub(inv3, part3), arg0);
    for (int i5 = lid; i5 < arg0; i5 += 256) {
      out2[fcl_add(inv1, i5)] = in1_1[fcl_add(inv2, fcl_sub(fcl_sub(arg0, 1), i5))];
    }
  }
}
