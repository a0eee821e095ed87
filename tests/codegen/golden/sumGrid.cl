entry sumGrid: 1 kernel, #BlockSize 256, #WarpSize 32, #NumGroups 65536
arguments: arr int[n0] -> in0_1
global buffers:
  in0_1      int[lengthPull arr]  input: argument 1
  out2       int[lengthPull arr / 512]  output: result of sumGrid
kernel sumGrid(in0_1, out2, n0): 10 barriers
  local   l5     int[256]  (block level, while at examples/reduce.fcl:16)
  local   l6     int[256]  (block level, while at examples/reduce.fcl:16)
  local memory: 2048 bytes per work-group
host program:
  alloc out2 : int[lengthPull arr / 512]
  launch sumGrid on min(#NumGroups, max(1, lengthPull arr / 512)) work-groups x 256 work-items (in0_1, out2, n0)
  result: array in out2, length lengthPull arr / 512
examples/reduce.fcl:10:11: note: `halve` splits an odd length unevenly (the second half is one longer): `zipWith` of the halves leaves out the last element
examples/reduce.fcl:24:6: note: `splitUp` leaves out the last `length mod n` elements (n: the part size); `pad n x` the array first to keep them

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

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void sumGrid(
    __global const int* restrict in0_1  /* argument 1: global, n0 x int */,
    __global int* out2  /* result of sumGrid: global, (n0 div 512) x int */,
    const int n0)
{
  const int lid = (int)get_local_id(0);
  const int wid = lid / 32;
  const int lane = lid % 32;
  __local int l5[256];  /* while at examples/reduce.fcl:16: local, 256 x int */
  __local int l6[256];  /* while at examples/reduce.fcl:16: local, 256 x int */
  const int inv1 = n0 >> 9;
  for (int part3 = (int)get_group_id(0); part3 < inv1; part3 += (int)get_num_groups(0)) {
    const int sh8 = in0_1[part3 * 512 + lid];
    const int sh9 = in0_1[part3 * 512 + (lid + 256)];
    l5[lid] = fcl_add(sh8, sh9);
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 128) {
      l6[lid] = fcl_add(l5[lid], l5[lid + 128]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 64) {
      l5[lid] = fcl_add(l6[lid], l6[lid + 64]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 32) {
      l6[lid] = fcl_add(l5[lid], l5[lid + 32]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 16) {
      l5[lid] = fcl_add(l6[lid], l6[lid + 16]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 8) {
      l6[lid] = fcl_add(l5[lid], l5[lid + 8]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 4) {
      l5[lid] = fcl_add(l6[lid], l6[lid + 4]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 2) {
      l6[lid] = fcl_add(l5[lid], l5[lid + 2]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 1) {
      l5[lid] = fcl_add(l6[lid], l6[lid + 1]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* while at examples/reduce.fcl:16 */
    if (lid < 1) {
      out2[part3 + lid] = l5[lid];
    }
    if (part3 + (int)get_num_groups(0) < inv1) {
      barrier(CLK_LOCAL_MEM_FENCE);  /* the next part reuses local memory */
    }
  }
}
