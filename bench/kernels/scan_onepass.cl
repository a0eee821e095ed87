// Inclusive scan (prefix sums) of n ints in a single pass with decoupled
// look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", 2016): the input is read once and the output
// written once.
//
// scan_onepass: one work-group of BS work-items per tile of TILE = BS x ITEMS
// elements.  The tile a work-group scans is its ticket from an atomic
// counter, not get_group_id: tickets go out in the order work-groups start,
// so a work-group waits only on work-groups that have started before it and
// therefore make progress, whatever order and however few threads the
// runtime runs work-groups in (no deadlock on CPU runtimes either).  The
// tile is loaded coalesced (int4) into local memory (padded one word in
// 32: no bank conflicts), each work-item scans its ITEMS consecutive
// elements in registers, the work-group scans the BS per-item totals
// (Hillis-Steele, double-buffered, one barrier a step), and the tile's
// aggregate is published at once with flag A.  Then the first W
// work-items look back over the W preceding tiles' status words together,
// each spinning until its tile has published something; the tiles' values
// are added from the nearest back to the first that has published its
// inclusive prefix (flag P); if none of the W has, the window moves W
// further back.  The tile publishes its inclusive prefix (flag P), adds
// the exclusive prefix to its elements and stores them coalesced (int4).
// Tile 0 publishes P at once.
//
// ITEMS is 32, not 16: the look-back is what a tile costs beyond its
// loads and stores, and on an H200 the scan kernel took 0.152 / 0.565 ms
// at 2^26 / 2^28 with 32 items a work-item against 0.175 / 0.667 ms with
// 16 (0.135 ms at 2^26 with no look-back at all, a wrong result).  A
// work-group then takes 35 KB of local memory, more than Oclgrind's 32 KB:
// the tests build it with ITEMS 4.  (Sharing the tile's local memory with
// the work-group scan's buffers, to fit 32 KB, made NVIDIA's compiler use
// 80 registers instead of 63 and the kernel 10% slower; so did keeping
// the elements in local memory instead of registers.)
//
// A status word is a 64-bit value, flag in the high half and value in the
// low half, written (atom_xchg) and read (atom_add of 0) only atomically,
// so a flag and its value are seen together and no memory fence is needed:
// nothing else passes between work-groups.  (cl_khr_int64_base_atomics,
// which NVIDIA, AMD, Intel, PoCL and Oclgrind have.)  Flags: 0 nothing yet,
// A the tile's aggregate, P the inclusive prefix through the tile.
//
// scan_onepass_init zeroes the ticket counter and the status words: it must
// run before every scan (the benchmark times it with the scan).  Launch:
// init over at least `tiles` work-items; scan_onepass with tiles = ceil(n /
// TILE) work-groups of BS.  Unsigned arithmetic: overflow wraps.
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define BS 256
#ifndef ITEMS
#define ITEMS 32                  // a multiple of 4 (bench/suite.py's SCAN1_ITEMS sets it)
#endif
#define TILE (BS * ITEMS)
#define W 32                      // predecessors looked at together
#define PAD(j) ((j) + ((j) >> 5))
#define FLAG_A 1UL
#define FLAG_P 2UL
#define STATUS(flag, v) (((flag) << 32) | (ulong)(uint)(v))
#define FLAG(s) ((s) >> 32)

__kernel void scan_onepass_init(__global ulong *status, __global uint *counter, const int tiles)
{
    const int i = get_global_id(0);
    if (i < tiles)
        status[i] = 0;
    if (i == 0)
        *counter = 0;
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void scan_onepass(__global const int *restrict in, __global int *restrict out, const int n,
                  __global ulong *status, __global uint *counter)
{
    __local uint tile[PAD(TILE)];
    __local uint part[2][BS];
    __local ulong window[W];
    __local uint ticket;
    const int lid = get_local_id(0);
    if (lid == 0)
        ticket = atomic_inc(counter);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = ticket;
    const int base = t * TILE;
    const bool full = base + TILE <= n;

    if (full) {
        __global const int4 *in4 = (__global const int4 *)(in + base);
        #pragma unroll
        for (int k = 0; k < ITEMS / 4; k++) {
            const int q = k * BS + lid, j = 4 * q;
            const uint4 v = as_uint4(in4[q]);
            tile[PAD(j)] = v.x;
            tile[PAD(j) + 1] = v.y;
            tile[PAD(j) + 2] = v.z;
            tile[PAD(j) + 3] = v.w;
        }
    } else {
        #pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            tile[PAD(j)] = base + j < n ? (uint)in[base + j] : 0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    uint x[ITEMS];                              // inclusive scan of my ITEMS elements
    uint run = 0;
    #pragma unroll
    for (int c = 0; c < ITEMS; c++) {
        run += tile[PAD(lid * ITEMS + c)];
        x[c] = run;
    }
    part[0][lid] = run;
    barrier(CLK_LOCAL_MEM_FENCE);
    int src = 0;
    #pragma unroll
    for (int offset = 1; offset < BS; offset *= 2) {
        uint v = part[src][lid];
        if (lid >= offset)
            v += part[src][lid - offset];
        part[src ^ 1][lid] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        src ^= 1;
    }
    const uint through = part[src][lid];        // my elements and all before them in the tile
    const uint aggregate = part[src][BS - 1];
    if (lid == 0)
        atom_xchg(&status[t], STATUS(t == 0 ? FLAG_P : FLAG_A, aggregate));

    uint before = 0;                            // the sum of all tiles before this one
    if (t > 0) {
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
                    before += (uint)s;
                done = done || FLAG(s) == FLAG_P;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (done)
                break;
        }
        if (lid == 0)
            atom_xchg(&status[t], STATUS(FLAG_P, before + aggregate));
    }

    const uint add = before + through - run;    // everything before my elements
    #pragma unroll
    for (int c = 0; c < ITEMS; c++)             // only I read these words of the tile
        tile[PAD(lid * ITEMS + c)] = x[c] + add;
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
