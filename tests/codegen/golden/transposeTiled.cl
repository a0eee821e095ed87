entry transposeTiled: 1 kernel, #BlockSize 256, #WarpSize 32, #NumGroups 65536
arguments: tileDim int -> arg0, cols int -> arg1, rows int -> arg2, mat int[n3] -> in3_1
global buffers:
  in3_1      int[lengthPull mat]  input: argument 4
  bounds     int[6]  bounds: device run-time checks
  out6       int[tileDim * tileDim * (hs3 * hs4)]  output: result of transposeTiled
  claims13   int[tileDim * tileDim * (hs3 * hs4) * (1 - b2i(rows / tileDim > 0 && tileDim > 0 && rows >= 0))]  claims: claims of the interleave at prelude/prelude.fcl:110
kernel transposeTiled(in3_1, bounds, out6, claims13, arg0, arg1, arg2, n3, hs2, hs3, hs4, hs5, first_group, group_total): 2 barriers
  local   l10    int[tileDim * tileDim]  (block level, force at examples/transpose.fcl:14)
  local memory: 4 * (tileDim * tileDim + tileDim * tileDim / 32 + 1) bytes per work-group
host program:
  alloc bounds : int[6]
  hs2 := cols / tileDim
  hs3 := cols / tileDim
  hs4 := rows / tileDim
  hs5 := rows / tileDim
  alloc out6 : int[tileDim * tileDim * (hs3 * hs4)]
  alloc claims13 : int[tileDim * tileDim * (hs3 * hs4) * (1 - b2i(rows / tileDim > 0 && tileDim > 0 && rows >= 0))]
  launch transposeTiled on max(1, hs3 * hs4) (a part each, first_group the first of a launch) work-groups x 256 work-items (in3_1, bounds, out6, claims13, arg0, arg1, arg2, n3, hs2, hs3, hs4, hs5, first_group, group_total)
  check bounds: no run-time check failed (27 of the program's 27 run-time checks left on the device: `index`, zero divisors, part lengths)
  result: array in out6, length tileDim * tileDim * (hs3 * hs4)
examples/transpose.fcl:13:3: note: `split2DGrid` leaves out the rows and columns past the last whole t x t tile

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
/* A grid loop over parts whose launch gives each work-group one part at most (a launch in
   slices, the unvirtualise pass) is an `if` on a GPU: NVIDIA's compiler hoists out of a loop
   everything a part computes from the work-item's id and keeps it in registers across the
   whole part (a scan's chunk of 4096: 80 registers for 32).  On a CPU it stays a loop, as
   PoCL's barrier handling needs (it ran some barriers under a uniform `if` wrongly); Intel's
   CPU runtime and Oclgrind (SPIR, not x86) take the `if`, which Oclgrind checks. */
#if defined(__NV_CL_C_VERSION) || defined(__AMD__) || (defined(__SPIR__) && !defined(__x86_64__))
#define FCL_ONE_PART 1
#else
#define FCL_ONE_PART 0
#endif
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
    __global int* out6  /* result of transposeTiled: global, ((arg0 mul arg0) mul (hs3 mul hs4)) x int */,
    __global int* claims13  /* claims of the interleave at prelude/prelude.fcl:110: global, (((arg0 mul arg0) mul (hs3 mul hs4)) mul (1 sub b2i(((((arg2 div arg0) gt 0) and (arg0 gt 0)) and (arg2 ge 0))))) x int */,
    const int arg0,
    const int arg1,
    const int arg2,
    const int n3,
    const int hs2,
    const int hs3,
    const int hs4,
    const int hs5,
    const int first_group,
    const int group_total,
    __local int* l10  /* force at examples/transpose.fcl:14: local, (arg0 mul arg0) x int, skewed layout; size set by the host */)
{
  const int lid = (int)get_local_id(0);
  const int wid = lid / 32;
  const int lane = lid % 32;
  if (!(fcl_mul(fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 1)), hs2) >= 0)) {
    fcl_fail(bounds, 2, fcl_mul(fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 1)), hs2), 0, 0, 0);
  }
  if (!(fcl_mul(hs3, hs4) >= 0)) {
    fcl_fail(bounds, 5, fcl_mul(hs3, hs4), 0, 0, 0);
  }
  if (!(fcl_mul(arg0, arg0) >= 0)) {
    fcl_fail(bounds, 7, fcl_mul(arg0, arg0), 0, 0, 0);
  }
  const bool inv5 = !(fcl_mul(arg0, arg0) >= 0);
  const int inv6 = fcl_mul(arg0, arg0);
  const int inv7 = fcl_mul(fcl_mul(arg0, arg0), fcl_mul(hs3, hs4));
  const bool inv8 = fcl_div(arg2, arg0) > 0 && arg0 > 0 && arg2 >= 0;
  const int inv9 = fcl_mul(hs3, hs4);
#if FCL_ONE_PART
  if ((int)get_group_id(0) + first_group < inv9) { const int part7 = (int)get_group_id(0) + first_group;
#else
  for (int part7 = (int)get_group_id(0) + first_group; part7 < inv9; part7 += group_total) {
#endif
    const int sh9 = fcl_check(fcl_add(fcl_mul(fcl_mod(part7, hs4 != 0 ? hs4 : fcl_check(part7, 0, bounds, 8)), hs3), fcl_div(part7, hs4 != 0 ? hs4 : fcl_check(part7, 0, bounds, 9))), fcl_mul(fcl_div(arg2, arg0 != 0 ? arg0 : fcl_check(arg2, 0, bounds, 1)), hs2), bounds, 10);
    if (inv5) {
      fcl_fail(bounds, 11, inv6, 0, 0, 0);
    }
    for (int i11 = lid; i11 < inv6; i11 += 256) {
      l10[fcl_skew(i11)] = in3_1[fcl_check(fcl_add(fcl_add(fcl_mul(fcl_add(fcl_mul(fcl_div(sh9, hs2 != 0 ? hs2 : fcl_check(sh9, 0, bounds, 12)), arg0), fcl_div(i11, arg0 != 0 ? arg0 : fcl_check(i11, 0, bounds, 13))), arg1), fcl_mul(fcl_mod(sh9, hs2 != 0 ? hs2 : fcl_check(sh9, 0, bounds, 14)), arg0)), fcl_mod(i11, arg0 != 0 ? arg0 : fcl_check(i11, 0, bounds, 15))), n3, bounds, 16)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* force at examples/transpose.fcl:14 */
    if (inv5) {
      fcl_fail(bounds, 17, inv6, 0, 0, 0);
    }
    for (int i12 = lid; i12 < inv6; i12 += 256) {
      const int pos14 = fcl_add(fcl_add(fcl_mul(fcl_add(fcl_mul(fcl_div(part7, hs5 != 0 ? hs5 : fcl_check(part7, 0, bounds, 21)), arg0), fcl_div(i12, arg0 != 0 ? arg0 : fcl_check(i12, 0, bounds, 22))), arg2), fcl_mul(fcl_mod(part7, hs5 != 0 ? hs5 : fcl_check(part7, 0, bounds, 23)), arg0)), fcl_mod(i12, arg0 != 0 ? arg0 : fcl_check(i12, 0, bounds, 24)));
      if (0 <= pos14 && pos14 < inv7) {
        if (inv8) {
          out6[pos14] = l10[fcl_skew(fcl_check(fcl_add(fcl_mul(i12 % arg0, arg0), i12 / arg0), inv6, bounds, 20))];
        } else {
          const int old15 = atomic_xchg(&claims13[pos14], part7 + 1);
          if (old15 == 0) {
            out6[pos14] = l10[fcl_skew(fcl_check(fcl_add(fcl_mul(fcl_mod(i12, arg0 != 0 ? arg0 : fcl_check(i12, 0, bounds, 18)), arg0), fcl_div(i12, arg0 != 0 ? arg0 : fcl_check(i12, 0, bounds, 19))), inv6, bounds, 20))];
          } else {
            fcl_fail(bounds, 26, pos14, fcl_sub(old15, 1), part7, 0);
          }
        }
      } else {
        fcl_fail(bounds, 25, part7, i12, pos14, inv7);
      }
    }
    if (fcl_add(part7, group_total) < inv9) {
      barrier(CLK_LOCAL_MEM_FENCE);  /* the next part reuses local memory */
    }
  }
}
