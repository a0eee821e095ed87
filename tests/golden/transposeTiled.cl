entry transposeTiled: 1 kernel, #BlockSize 256, #WarpSize 32, #NumGroups 65536
arguments: tileDim int -> arg0, cols int -> arg1, rows int -> arg2, mat int[n3] -> in3_1
global buffers:
  in3_1      int[lengthPull mat]  input: argument 4
  bounds     int[6]  bounds: device run-time checks
  out4       int[tileDim * tileDim * (cols / tileDim * (rows / tileDim))]  output: result of transposeTiled
kernel transposeTiled(in3_1, bounds, out4, arg0, arg1, arg2, n3, hs2, hs3): 2 barriers
  local   l8     int[tileDim * tileDim]  (block level, force at examples/transpose.fcl:14)
  local memory: 4 * (tileDim * tileDim + tileDim * tileDim / 32 + 1) bytes per work-group
host program:
  alloc bounds : int[6]
  hs2 := cols / tileDim
  hs3 := rows / tileDim
  alloc out4 : int[tileDim * tileDim * (cols / tileDim * (rows / tileDim))]
  launch transposeTiled on min(#NumGroups, max(1, cols / tileDim * (rows / tileDim))) work-groups x 256 work-items (in3_1, bounds, out4, arg0, arg1, arg2, n3, hs2, hs3)
  check bounds: no run-time check failed (34 device checks left of 21 in the program: `index`, zero divisors, part lengths)
  result: array in out4, length tileDim * tileDim * (cols / tileDim * (rows / tileDim))
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
void transposeTiled(
    __global const int* restrict in3_1  /* argument 4: global, n3 x int */,
    __global int* bounds  /* device run-time checks: global, 6 x int */,
    __global int* out4  /* result of transposeTiled: global, ((arg0 mul arg0) mul ((arg1 div ((arg0 ne 0) ? arg0 : check#2(arg1 < 0))) mul (arg2 div ((arg0 ne 0) ? arg0 : check#3(arg2 < 0))))) x int */,
    const int arg0,
    const int arg1,
    const int arg2,
    const int n3,
    const int hs2,
    const int hs3,
    __local int* l8  /* force at examples/transpose.fcl:14: local, (arg0 mul arg0) x int, skewed layout; size set by the host */)
{
  const int lid = (int)get_local_id(0);
  const int wid = lid / 32;
  const int lane = lid % 32;
  const int inv2 = fcl_mul(arg0, arg0);
  for (int part5 = (int)get_group_id(0); part5 < fcl_mul(fcl_div(arg1, arg0 != 0 ? arg0 : fcl_check(arg1, 0, bounds, 2)), fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3))); part5 += (int)get_num_groups(0)) {
    const int sh7 = fcl_check(fcl_add(fcl_mul(fcl_mod(part5, fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3)) != 0 ? fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3)) : fcl_check(part5, 0, bounds, 5)), fcl_div(arg1, arg0 != 0 ? arg0 : fcl_check(arg1, 0, bounds, 2))), fcl_div(part5, fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3)) != 0 ? fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3)) : fcl_check(part5, 0, bounds, 6))), fcl_mul(fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 1)), hs2), bounds, 7);
    for (int i9 = lid; i9 < inv2; i9 += 256) {
      l8[fcl_skew(i9)] = in3_1[fcl_check(fcl_add(fcl_add(fcl_mul(fcl_add(fcl_mul(fcl_div(sh7, hs2 != 0 ? hs2 : fcl_check(sh7, 0, bounds, 8)), arg0), fcl_div(i9, arg0 != 0 ? arg0 : fcl_check(i9, 0, bounds, 9))), arg1), fcl_mul(fcl_mod(sh7, hs2 != 0 ? hs2 : fcl_check(sh7, 0, bounds, 10)), arg0)), fcl_mod(i9, arg0 != 0 ? arg0 : fcl_check(i9, 0, bounds, 11))), n3, bounds, 12)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* force at examples/transpose.fcl:14 */
    for (int i10 = lid; i10 < inv2; i10 += 256) {
      const int pos11 = fcl_add(fcl_add(fcl_mul(fcl_add(fcl_mul(fcl_div(part5, hs3 != 0 ? hs3 : fcl_check(part5, 0, bounds, 16)), arg0), fcl_div(i10, arg0 != 0 ? arg0 : fcl_check(i10, 0, bounds, 17))), arg2), fcl_mul(fcl_mod(part5, hs3 != 0 ? hs3 : fcl_check(part5, 0, bounds, 18)), arg0)), fcl_mod(i10, arg0 != 0 ? arg0 : fcl_check(i10, 0, bounds, 19)));
      if (0 <= pos11 && pos11 < fcl_mul(inv2, fcl_mul(fcl_div(arg1, arg0 != 0 ? arg0 : fcl_check(arg1, 0, bounds, 2)), fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3))))) {
        out4[pos11] = l8[fcl_skew(fcl_check(fcl_add(fcl_mul(fcl_mod(i10, arg0 != 0 ? arg0 : fcl_check(i10, 0, bounds, 13)), arg0), fcl_div(i10, arg0 != 0 ? arg0 : fcl_check(i10, 0, bounds, 14))), inv2, bounds, 15))];
      } else {
        fcl_fail(bounds, 20, part5, i10, pos11, fcl_mul(inv2, fcl_mul(fcl_div(arg1, arg0 != 0 ? arg0 : fcl_check(arg1, 0, bounds, 2)), fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3)))));
      }
    }
    if (fcl_add(part5, (int)get_num_groups(0)) < fcl_mul(fcl_div(arg1, arg0 != 0 ? arg0 : fcl_check(arg1, 0, bounds, 2)), fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 3)))) {
      barrier(CLK_LOCAL_MEM_FENCE);  /* the next part reuses local memory */
    }
  }
}
