// Segmented inclusive scan (sums) of n ints: out[i] is the sum of vals[s..i]
// where s is the last position <= i whose flag is set (flags: uchar, non-zero
// starts a segment; element 0 starts one whether flagged or not).
// Reduce-then-scan over (flag, value) pairs with the segmented operator
//   (f1, v1) + (f2, v2) = (f1 | f2, f2 ? v2 : v1 + v2),
// associative but not commutative, in three launches:
//   1. seg_interval_pairs, G work-groups: group g writes the pair of its
//      interval [g * interval, (g + 1) * interval): flag = any flag in it,
//      value = the sum from its last flagged element (or its start) to its end;
//   2. seg_scan_intervals, one work-group: inclusive segmented scan of those
//      G pairs (only the values are written: they are the carries);
//   3. seg_scan_intervals, G work-groups: group g scans its interval tile by
//      tile, starting from carry[g - 1], the value of the pairs before it.
//
// seg_interval_pairs reads its interval backwards, a tile at a time, with
// plain (commutative) sums and coalesced int4 / uchar4 loads: until a tile
// holds a flag, the whole tile counts; in the tile that holds the interval's
// last flag (the work-group finds it with a local atomic_max, one barrier a
// tile) only the elements from that flag on count, and the work-group stops
// there: nothing before the last flag can reach the interval's pair.  So
// with a flag a tile or more (1 flag in 100: about 80 a tile of 8192) it
// reads one tile of its interval; with no flags, all of it.
//
// seg_scan_intervals: a tile of TILE elements is loaded coalesced (int4)
// into local memory (padded one word in 32 against bank conflicts); each
// work-item reads its ITEMS consecutive flags straight from global memory
// (uchar8 loads, contiguous across the work-group) into a bit mask, scans
// its ITEMS consecutive values sequentially, the work-group scans the BS
// per-item pairs (Hillis-Steele with the segmented operator, double-
// buffered, one barrier a step), a work-item's values up to its first flag
// take the pair before it (and the carry), and the tile is stored
// coalesced (int4).
//
// ITEMS is 32, not 8 as in scan.cl: fewer barriers an element.  On an H200
// (kernel times summed, as bench/run.py counts them; one run) n = 2^26 with
// 1 flag in 100 took 0.207 / 0.195 / 0.190 ms with 8 / 16 / 32 items a
// work-item (with no flags, kernel 1 reading everything: 0.290 / 0.266 /
// 0.254 ms), 2^28 0.744 / 0.673 / 0.651 ms; scan.cl there 0.253 ms and
// 0.912 ms, a copy 0.130 and 0.505 ms.  A work-group of seg_scan_intervals
// then takes 38 KB of local memory, more than Oclgrind's 32 KB: tests under
// Oclgrind build it with ITEMS 8 (tiles of 2048).
//
// `interval` must be a multiple of TILE (so intervals and tiles start
// 16-byte aligned) and G at most TILE for the middle pass.  Unsigned
// arithmetic: overflow wraps.  Launch: work-groups of BS work-items.
#define BS 256
#ifndef ITEMS
#define ITEMS 32                  // a multiple of 8, at most 32 (bench/suite.py's SEGSCAN_ITEMS sets it)
#endif
#define TILE (BS * ITEMS)
#define PAD(j) ((j) + ((j) >> 5))

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void seg_interval_pairs(__global const uchar *restrict flags, __global const int *restrict vals,
                        __global uchar *restrict pairFlags, __global int *restrict pairVals,
                        const int n, const int interval)
{
    __local uint part[BS];
    __local int last[2];          // the last flagged position, from start; -1: none (by tile parity)
    const int lid = get_local_id(0);
    const int g = get_group_id(0);
    const int start = g * interval;
    const int end = min(n, start + interval);
    if (lid < 2)
        last[lid] = -1;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint acc = 0;
    int found = -1;
    int parity = 0;
    for (int base = start + (end - start - 1) / TILE * TILE; base >= start; base -= TILE) {
        uint v[ITEMS];
        int mine = -1;                          // my last flagged element of the tile
        if (base + TILE <= end) {
            __global const int4 *v4 = (__global const int4 *)(vals + base);
            __global const uchar4 *f4 = (__global const uchar4 *)(flags + base);
            #pragma unroll
            for (int k = 0; k < ITEMS / 4; k++) {
                const int q = k * BS + lid, j = 4 * q;
                const uint4 x = as_uint4(v4[q]);
                const uchar4 f = f4[q];
                v[4 * k] = x.x;
                v[4 * k + 1] = x.y;
                v[4 * k + 2] = x.z;
                v[4 * k + 3] = x.w;
                mine = f.w ? j + 3 : f.z ? j + 2 : f.y ? j + 1 : f.x ? j : mine;
            }
        } else {
            #pragma unroll
            for (int k = 0; k < ITEMS / 4; k++)
                #pragma unroll
                for (int c = 0; c < 4; c++) {
                    const int j = 4 * (k * BS + lid) + c;
                    const bool in = base + j < end;
                    v[4 * k + c] = in ? (uint)vals[base + j] : 0;
                    if (in && flags[base + j])
                        mine = j;
                }
        }
        if (mine >= 0)
            atomic_max(&last[parity], base - start + mine);
        barrier(CLK_LOCAL_MEM_FENCE);
        found = last[parity];                   // the same for every work-item
        const int p = found - (base - start);   // in this tile, or negative: none
        #pragma unroll
        for (int k = 0; k < ITEMS / 4; k++)
            #pragma unroll
            for (int c = 0; c < 4; c++)
                if (4 * (k * BS + lid) + c >= p)
                    acc += v[4 * k + c];
        if (found >= 0)
            break;
        parity ^= 1;                            // last[parity] was read by others: use the other
    }
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = BS / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            part[lid] += part[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        pairFlags[g] = found >= 0;
        pairVals[g] = (int)part[0];
    }
}

// with_carries: group g > 0 starts from carries[g - 1] (the scanned interval pairs' values)
__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void seg_scan_intervals(__global const uchar *restrict flags, __global const int *restrict vals,
                        __global int *restrict out, const int n, const int interval,
                        __global const int *restrict carries, const int with_carries)
{
    __local uint tile[PAD(TILE)];
    __local uint pv[2][BS];                     // the work-group scan's pairs: values
    __local uint pf[2][BS];                     // and flags
    const int lid = get_local_id(0);
    const int g = get_group_id(0);
    const int start = g * interval;
    const int end = min(n, start + interval);
    uint carry = with_carries && g > 0 ? (uint)carries[g - 1] : 0;
    for (int base = start; base < end; base += TILE) {
        const bool full = base + TILE <= end;
        uint fm = 0;                            // bit c: my element c is flagged
        if (full) {
            __global const int4 *in4 = (__global const int4 *)(vals + base);
            #pragma unroll
            for (int k = 0; k < ITEMS / 4; k++) {
                const int q = k * BS + lid, j = 4 * q;
                const uint4 v = as_uint4(in4[q]);
                tile[PAD(j)] = v.x;
                tile[PAD(j) + 1] = v.y;
                tile[PAD(j) + 2] = v.z;
                tile[PAD(j) + 3] = v.w;
            }
            __global const uchar8 *f8 = (__global const uchar8 *)(flags + base + lid * ITEMS);
            #pragma unroll
            for (int k = 0; k < ITEMS / 8; k++) {
                const uchar8 f = f8[k];
                fm |= ((f.s0 != 0) | (f.s1 != 0) << 1 | (f.s2 != 0) << 2 | (f.s3 != 0) << 3 |
                       (f.s4 != 0) << 4 | (f.s5 != 0) << 5 | (f.s6 != 0) << 6 | (f.s7 != 0) << 7) << (8 * k);
            }
        } else {
            #pragma unroll
            for (int k = 0; k < ITEMS; k++) {
                const int j = k * BS + lid;
                tile[PAD(j)] = base + j < end ? (uint)vals[base + j] : 0;
                const int i = base + lid * ITEMS + k;
                if (i < end && flags[i])
                    fm |= 1u << k;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        uint x[ITEMS];                          // segmented scan of my ITEMS elements
        uint run = 0;
        #pragma unroll
        for (int c = 0; c < ITEMS; c++) {
            const uint v = tile[PAD(lid * ITEMS + c)];
            run = (fm >> c) & 1 ? v : run + v;
            x[c] = run;
        }
        pv[0][lid] = run;
        pf[0][lid] = fm != 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        int src = 0;
        #pragma unroll
        for (int offset = 1; offset < BS; offset *= 2) {
            uint v = pv[src][lid], f = pf[src][lid];
            if (lid >= offset) {                // (earlier pair) + (my pair)
                if (!f)
                    v += pv[src][lid - offset];
                f |= pf[src][lid - offset];
            }
            pv[src ^ 1][lid] = v;
            pf[src ^ 1][lid] = f;
            barrier(CLK_LOCAL_MEM_FENCE);
            src ^= 1;
        }
        uint before = carry;                    // the value that reaches my first element
        if (lid > 0)
            before = pf[src][lid - 1] ? pv[src][lid - 1] : carry + pv[src][lid - 1];
        carry = pf[src][BS - 1] ? pv[src][BS - 1] : carry + pv[src][BS - 1];
        const uint open = fm ? (fm & -fm) - 1 : 0xffffffffu;   // my elements before my first flag
        #pragma unroll
        for (int c = 0; c < ITEMS; c++)         // only I read these words of the tile
            tile[PAD(lid * ITEMS + c)] = (open >> c) & 1 ? x[c] + before : x[c];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (full) {
            __global int4 *out4 = (__global int4 *)(out + base);
            #pragma unroll
            for (int k = 0; k < ITEMS / 4; k++) {
                const int q = k * BS + lid, j = 4 * q;
                out4[q] = as_int4((uint4)(tile[PAD(j)], tile[PAD(j) + 1], tile[PAD(j) + 2], tile[PAD(j) + 3]));
            }
        } else {
            #pragma unroll
            for (int k = 0; k < ITEMS; k++) {
                const int j = k * BS + lid;
                if (base + j < end)
                    out[base + j] = (int)tile[PAD(j)];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
