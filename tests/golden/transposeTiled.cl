entry transposeTiled: 1 kernel, #BlockSize 256, #WarpSize 32, #NumGroups 65536
arguments: tileDim int -> arg0, cols int -> arg1, rows int -> arg2, mat int[n3] -> in3_1
global buffers:
  in3_1      int[lengthPull mat]  input: argument 4
  out2       int[tileDim * tileDim * (cols / tileDim * (rows / tileDim))]  output: result of transposeTiled
  bounds     int[4]  bounds: device bounds checks
kernel transposeTiled(in3_1, out2, bounds, arg0, arg1, arg2, n3): 2 barriers
  local   l6     int[tileDim * tileDim]  (block level, force at examples/transpose.fcl:14)
  local memory: 4 * (tileDim * tileDim + tileDim * tileDim / 32 + 1) bytes per work-group
host program:
  alloc out2 : int[tileDim * tileDim * (cols / tileDim * (rows / tileDim))]
  alloc bounds : int[4]
  launch transposeTiled on min(#NumGroups, max(1, cols / tileDim * (rows / tileDim))) work-groups x 256 work-items (in3_1, out2, bounds, arg0, arg1, arg2, n3)
  check bounds: no index was out of range (3 device checks left of 3 `index`es)
  result: array in out2, length tileDim * tileDim * (cols / tileDim * (rows / tileDim))
examples/transpose.fcl:13:3: note: `split2DGrid` leaves out the rows and columns past the last whole t x t tile

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
void transposeTiled(
    __global const int* restrict in3_1  /* argument 4: global, n3 x int */,
    __global int* out2  /* result of transposeTiled: global, ((arg0 mul arg0) mul ((arg1 div arg0) mul (arg2 div arg0))) x int */,
    __global int* bounds  /* device bounds checks: global, 4 x int */,
    const int arg0,
    const int arg1,
    const int arg2,
    const int n3,
    __local int* l6  /* force at examples/transpose.fcl:14: local, (arg0 mul arg0) x int, skewed layout; size set by the host */)
{
  const int lid = get_local_id(0);
  const int wid = lid / 32;
  const int lane = lid % 32;
  const int inv6 = fcl_div(arg2, arg0);
  const int inv7 = fcl_div(arg1, arg0);
  const int inv8 = fcl_mul(fcl_div(arg2, arg0), fcl_div(arg1, arg0));
  const int inv9 = fcl_mul(arg0, arg0);
  const int inv10 = fcl_mul(fcl_div(arg1, arg0), fcl_div(arg2, arg0));
  for (int part3 = get_group_id(0); part3 < inv10; part3 += get_num_groups(0)) {
    const int sh5 = fcl_check(fcl_add(fcl_mul(fcl_mod(part3, inv6), inv7), fcl_div(part3, inv6)), inv8, bounds, 0);
    const int inv1 = fcl_mul(fcl_div(sh5, inv7), arg0);
    const int inv2 = fcl_mul(fcl_mod(sh5, inv7), arg0);
    for (int i7 = lid; i7 < inv9; i7 += 256) {
      l6[fcl_skew(i7)] = in3_1[fcl_check(fcl_add(fcl_add(fcl_mul(fcl_add(inv1, fcl_div(i7, arg0)), arg1), inv2), fcl_mod(i7, arg0)), n3, bounds, 1)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* force at examples/transpose.fcl:14 */
    const int inv3 = fcl_mul(fcl_div(part3, inv6), arg0);
    const int inv4 = fcl_mul(fcl_mod(part3, inv6), arg0);
    for (int i8 = lid; i8 < inv9; i8 += 256) {
      out2[fcl_add(fcl_add(fcl_mul(fcl_add(inv3, fcl_div(i8, arg0)), arg2), inv4), fcl_mod(i8, arg0))] = l6[fcl_skew(fcl_check(fcl_add(fcl_mul(fcl_mod(i8, arg0), arg0), fcl_div(i8, arg0)), inv9, bounds, 2))];
    }
    if (fcl_add(part3, get_num_groups(0)) < inv10) {
      barrier(CLK_LOCAL_MEM_FENCE);  /* the next part reuses local memory */
    }
  }
}
