// Segmented inclusive scan (sums) of n ints in a single pass with decoupled
// look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", 2016): out[i] is the sum of vals[s..i] where s is
// the last position <= i whose flag is set (flags: uchar, non-zero starts a
// segment; element 0 starts one whether flagged or not).  A scan over
// (flag, value) pairs with the segmented operator
//   (f1, v1) + (f2, v2) = (f1 | f2, f2 ? v2 : v1 + v2),
// associative but not commutative.  The flags and values are read once and
// the output written once.
//
// segscan_onepass: one work-group of BS work-items per tile of TILE = BS x
// ITEMS elements.  The tile a work-group scans is its ticket from an atomic
// counter, not get_group_id: tickets go out in the order work-groups start,
// so a work-group waits only on work-groups that have started before it and
// therefore make progress, whatever order and however few threads the
// runtime runs work-groups in (no deadlock on CPU runtimes either).  The
// tile's values are loaded coalesced (int4) into local memory (padded one
// word in 32: no bank conflicts); each work-item reads its ITEMS
// consecutive flags straight from global memory (uchar8 loads, or uchar4
// where ITEMS is not a multiple of 8; contiguous across the work-group)
// into a bit mask, scans its ITEMS consecutive values sequentially in
// registers, and the work-group scans the BS per-item pairs (Hillis-Steele
// with the segmented operator, double-buffered, one barrier a step).
//
// The tile's aggregate pair is published at once.  A tile whose aggregate
// holds a flag publishes it as its inclusive prefix (state P): whatever
// comes before the tile, the pair through it is (1, its aggregate's value).
// So the state is all a status word needs beyond the value, and a
// predecessor's flag ends the look-back as P does.  Any other tile
// publishes its aggregate with state A (tile 0: P).  Then, unless the
// tile's first element is flagged (no element of it then takes anything
// from before it), the first W work-items look back over the W preceding
// tiles' status words together, each spinning until its tile has published
// something; the tiles' values are added from the nearest back to the
// first with state P (the tiles between hold no flag: their pairs combine
// by plain addition); if none of the W has P, the window moves W further
// back.  A tile without a flag then publishes its inclusive prefix (state
// P).  A work-item's elements up to its first flag take the pair before it
// (the work-group's exclusive pair, and the predecessors' value where that
// pair holds no flag); the tile is stored coalesced (int4).  A work-item
// reads that exclusive pair from local memory before the look-back, not
// after: read after it (under `if (lid > 0)`), PoCL 3.0-rc2's optimiser
// (LLVM 14) gave every work-item of a tile that looked back work-item 0's
// result; Oclgrind and PoCL at -cl-opt-disable ran it right.
//
// ITEMS is 32: on an NVIDIA H200 (OpenCL 3.0, driver 580.159.04; n = 2^26,
// a flag in 64; median of 30, L2 flushed; init and scan together) it took
// 0.170 ms with 32 items a work-item, 0.201 with 24, 0.190 with 16 and
// 0.227 with 8, against 0.180 for the reduce-then-scan of segscan.cl.
//
// A work-group takes 38 KB of local memory with ITEMS 32, more than
// Oclgrind's 32 KB: the tests build it with ITEMS 4 (tiles of 1024, so
// that their small sizes look back).
//
// A status word is a 64-bit value, state in the high half and value in the
// low half, written (atom_xchg) and read (atom_add of 0) only atomically,
// so a state and its value are seen together and no memory fence is
// needed: nothing else passes between work-groups.
// (cl_khr_int64_base_atomics, which NVIDIA, AMD, Intel, PoCL and Oclgrind
// have.)  States: 0 nothing yet, A the tile's aggregate value (the tile
// holds no flag), P the value of the inclusive prefix through the tile.
//
// segscan_onepass_init zeroes the ticket counter and the status words: it
// must run before every scan (the benchmark times it with the scan).
// Launch: init over at least `tiles` work-items; segscan_onepass with tiles
// = ceil(n / TILE) work-groups of BS (at least one).  Unsigned arithmetic:
// overflow wraps.
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define BS 256
#ifndef ITEMS
#define ITEMS 32                  // a multiple of 4, at most 32 (bench/suite.py's SEGSCAN1_ITEMS sets it)
#endif
#define TILE (BS * ITEMS)
#define W 32                      // predecessors looked at together
#define PAD(j) ((j) + ((j) >> 5))
#define FLAG_A 1UL
#define FLAG_P 2UL
#define STATUS(flag, v) (((flag) << 32) | (ulong)(uint)(v))
#define FLAG(s) ((s) >> 32)

__kernel void segscan_onepass_init(__global ulong *status, __global uint *counter, const int tiles)
{
    const int i = get_global_id(0);
    if (i < tiles)
        status[i] = 0;
    if (i == 0)
        *counter = 0;
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void segscan_onepass(__global const uchar *restrict flags, __global const int *restrict vals,
                     __global int *restrict out, const int n,
                     __global ulong *status, __global uint *counter)
{
    __local uint tile[PAD(TILE)];
    __local uint pv[2][BS];                     // the work-group scan's pairs: values
    __local uint pf[2][BS];                     // and flags
    __local ulong window[W];
    __local uint ticket;
    __local uint head;                          // the tile's first element is flagged
    const int lid = get_local_id(0);
    if (lid == 0)
        ticket = atomic_inc(counter);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = ticket;
    const int base = t * TILE;
    const bool full = base + TILE <= n;

    uint fm = 0;                                // bit c: my element c is flagged
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
#if ITEMS % 8 == 0
        __global const uchar8 *f8 = (__global const uchar8 *)(flags + base + lid * ITEMS);
        #pragma unroll
        for (int k = 0; k < ITEMS / 8; k++) {
            const uchar8 f = f8[k];
            fm |= (uint)((f.s0 != 0) | (f.s1 != 0) << 1 | (f.s2 != 0) << 2 | (f.s3 != 0) << 3 |
                         (f.s4 != 0) << 4 | (f.s5 != 0) << 5 | (f.s6 != 0) << 6 | (f.s7 != 0) << 7) << (8 * k);
        }
#else
        __global const uchar4 *f4 = (__global const uchar4 *)(flags + base + lid * ITEMS);
        #pragma unroll
        for (int k = 0; k < ITEMS / 4; k++) {
            const uchar4 f = f4[k];
            fm |= (uint)((f.s0 != 0) | (f.s1 != 0) << 1 | (f.s2 != 0) << 2 | (f.s3 != 0) << 3) << (4 * k);
        }
#endif
    } else {
        #pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            tile[PAD(j)] = base + j < n ? (uint)vals[base + j] : 0;
            const int i = base + lid * ITEMS + k;
            if (i < n && flags[i])
                fm |= 1u << k;
        }
    }
    if (lid == 0)
        head = fm & 1;
    barrier(CLK_LOCAL_MEM_FENCE);

    uint x[ITEMS];                              // segmented scan of my ITEMS elements
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
        if (lid >= offset) {                    // (earlier pair) + (my pair)
            if (!f)
                v += pv[src][lid - offset];
            f |= pf[src][lid - offset];
        }
        pv[src ^ 1][lid] = v;
        pf[src ^ 1][lid] = f;
        barrier(CLK_LOCAL_MEM_FENCE);
        src ^= 1;
    }
    const uint aggFlag = pf[src][BS - 1], aggregate = pv[src][BS - 1];
    const uint exFlag = lid > 0 ? pf[src][lid - 1] : 0;   // the pair of the tile's elements before mine
    const uint exValue = lid > 0 ? pv[src][lid - 1] : 0;
    if (lid == 0)
        atom_xchg(&status[t], STATUS(t == 0 || aggFlag ? FLAG_P : FLAG_A, aggregate));

    uint carry = 0;                             // the value the tiles before this one pass on
    if (t > 0 && !head) {                       // the same for every work-item
        for (int end = t - 1;; end -= W) {      // the window: tiles end, end - 1, ..., end - W + 1
            if (lid < W) {
                const int j = end - lid;
                ulong s = STATUS(FLAG_P, 0);    // before tile 0
                if (j >= 0)
                    do
                        s = atom_add(&status[j], 0UL);
                    while (FLAG(s) == 0);
                window[lid] = s;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            bool done = false;                  // every work-item alike: the loop stays uniform
            #pragma unroll
            for (int l = 0; l < W; l++) {
                const ulong s = window[l];
                if (!done)
                    carry += (uint)s;
                done = done || FLAG(s) == FLAG_P;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (done)
                break;
        }
        if (lid == 0 && !aggFlag)
            atom_xchg(&status[t], STATUS(FLAG_P, carry + aggregate));
    }

    const uint before = exFlag ? exValue : carry + exValue;   // the value that reaches my first element
    const uint open = fm ? (fm & -fm) - 1 : 0xffffffffu;   // my elements before my first flag
    #pragma unroll
    for (int c = 0; c < ITEMS; c++)             // only I read these words of the tile
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
            if (base + j < n)
                out[base + j] = (int)tile[PAD(j)];
        }
    }
}
