// Inclusive scan (prefix sums) of n ints, reduce-then-scan in three launches:
//   1. interval_sums, G work-groups: group g writes the sum of its interval
//      [g * interval, (g + 1) * interval) of the input;
//   2. scan_intervals, one work-group: inclusive scan of those G sums;
//   3. scan_intervals, G work-groups: group g scans its interval tile by
//      tile, starting from the scanned sum of the intervals before it.
// A tile of TILE elements is loaded coalesced into local memory (padded one
// word in 32 against bank conflicts), each work-item scans ITEMS consecutive
// elements sequentially, the work-group scans the BS per-item totals
// (Hillis-Steele), and the tile is stored coalesced.  `interval` must be a
// multiple of TILE (so intervals start 16-byte aligned).  Unsigned
// arithmetic: overflow wraps.  Launch: work-groups of BS work-items.
#define BS 256
#define ITEMS 8
#define TILE (BS * ITEMS)
#define PAD(j) ((j) + ((j) >> 5))

// the inclusive scan of x over the work-group, in `part`
uint group_scan(__local uint *part, const uint x)
{
    const int lid = get_local_id(0);
    part[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 1; offset < BS; offset *= 2) {
        const uint v = lid >= offset ? part[lid - offset] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        part[lid] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return part[lid];
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void interval_sums(__global const int *restrict in, __global int *restrict sums, const int n,
                   const int interval)
{
    __local uint part[BS];
    const int lid = get_local_id(0);
    const int start = get_group_id(0) * interval;
    const int end = min(n, start + interval);
    __global const int4 *in4 = (__global const int4 *)in;
    uint acc = 0;
    for (int i = start / 4 + lid; i < end / 4; i += BS) {
        const uint4 v = as_uint4(in4[i]);
        acc += (v.x + v.y) + (v.z + v.w);
    }
    const int tail = end / 4 * 4 + lid;
    if (tail < end)
        acc += (uint)in[tail];
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = BS / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            part[lid] += part[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        sums[get_group_id(0)] = (int)part[0];
}

// with_carries: group g > 0 starts from carries[g - 1] (the scanned interval sums)
__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void scan_intervals(__global const int *restrict in, __global int *restrict out, const int n,
                    const int interval, __global const int *restrict carries, const int with_carries)
{
    __local uint tile[PAD(TILE)];
    __local uint part[BS];
    const int lid = get_local_id(0);
    const int g = get_group_id(0);
    const int start = g * interval;
    const int end = min(n, start + interval);
    uint carry = with_carries && g > 0 ? (uint)carries[g - 1] : 0;
    for (int base = start; base < end; base += TILE) {
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            tile[PAD(j)] = base + j < end ? (uint)in[base + j] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint run = 0;
        for (int k = 0; k < ITEMS; k++) {
            const int j = lid * ITEMS + k;
            run += tile[PAD(j)];
            tile[PAD(j)] = run;
        }
        const uint through = group_scan(part, run);     // inclusive: my items and all before
        const uint before = carry + through - run;
        for (int k = 0; k < ITEMS; k++)
            tile[PAD(lid * ITEMS + k)] += before;
        carry += part[BS - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            if (base + j < end)
                out[base + j] = (int)tile[PAD(j)];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
