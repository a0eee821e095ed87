// Stream compaction (select) of n ints in a single pass with decoupled
// look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", 2016; CUB's DeviceSelect::If): the elements x for
// which KEEP(x) holds, in their order, at out[0 .. count - 1], and count at
// out[n].  The input is read once and the kept elements written once.
//
// compact: one work-group of BS work-items per tile of TILE = BS x ITEMS
// elements.  The tile a work-group compacts is its ticket from an atomic
// counter, not get_group_id: tickets go out in the order work-groups start,
// so a work-group waits only on work-groups that have started before it and
// therefore make progress, whatever order and however few threads the
// runtime runs work-groups in (no deadlock on CPU runtimes either).  The
// tile is loaded coalesced (int4) into local memory (padded one word in
// 32: no bank conflicts), each work-item takes its ITEMS consecutive
// elements into registers, with a bit mask of those it keeps and their
// count; the work-group scans the BS counts (Hillis-Steele,
// double-buffered, one barrier a step) and publishes the tile's count at
// once with flag A.  Then the first W work-items look back over the W
// preceding tiles' status words together, each spinning until its tile
// has published something; the nearest of them that has published its
// inclusive prefix (flag P) is found with a local atomic_min, and the
// counts from the nearest tile back to that one are added with local
// atomic_adds; if none of the W has, all W counts are added and the window
// moves W further back.  The tile publishes its inclusive prefix (flag P),
// and the last tile (n - base <= TILE: the ticket tiles - 1) stores it,
// the total count, at out[n].  Tile 0 publishes P at once.
//
// The kept elements are not stored from registers, where a work-item's
// run of them would go out as scattered words, but staged: each work-item
// writes its kept elements at their rank in the tile into the tile's
// local memory (free again: every work-item has read its elements before
// the scan's first barrier), and the work-group then stores the tile's
// kept elements contiguously, consecutive work-items to consecutive words.
// The stores start from the 32-word boundary below the tile's global
// offset, so that a warp's 32 words fill one 128-byte line (int4 stores
// would need the offset to be a multiple of 4; the alignment itself made
// no measurable difference).
//
// Measured on an NVIDIA H200 (OpenCL 3.0, CUDA 13.0, driver 580.159.04;
// median of 25, L2 flushed; init and compact together; half kept), at
// 2^26 / 2^28: 0.132 / 0.475 ms with ITEMS 32, 0.142 / 0.528 ms with 16
// (copy: 0.129 / 0.512 ms for 8 bytes an element where this moves 6).
// ITEMS 32 is the most that fits NVIDIA's 48 KB of local memory with the
// mask a uint; 24, 28, 36 and 40 (a ulong mask) were all slower than 32.
// The look-back as in scan_onepass.cl (every work-item adding the W words
// one by one) took 0.150 / 0.556 ms.  A window of 16 tiles was no faster
// than 32; 64, 128 and 256 were slower (256: 18% on an H100, where all W
// work-items poll: more atomics on the same words), and so were 8 and 4.
// Without any look-back (a wrong result) 0.104 ms at 2^26.  A work-group
// takes 35 KB of local memory with ITEMS 32, more than Oclgrind's 32 KB:
// the tests build it with ITEMS 4 (and W 4 makes a few tiles look back
// over more than one window).
//
// A status word is a 64-bit value, flag in the high half and count in the
// low half, written (atom_xchg) and read (atom_add of 0) only atomically,
// so a flag and its count are seen together and no memory fence is needed:
// nothing else passes between work-groups.  (cl_khr_int64_base_atomics,
// which NVIDIA, AMD, Intel, PoCL and Oclgrind have.)  Flags: 0 nothing yet,
// A the tile's count, P the count through the tile.
//
// compact_init zeroes the ticket counter and the status words: it must run
// before every compaction (the benchmark times it with the compaction).
// Launch: init over at least `tiles` work-items; compact with exactly
// tiles = max(1, ceil(n / TILE)) work-groups of BS (at n = 0 the one tile
// stores the count 0 at out[0]).  Counts are uints: n < 2^31.
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#ifndef KEEP
#define KEEP(x) ((x) < 50)
#endif
#define BS 256
#ifndef ITEMS
#define ITEMS 32                  // a multiple of 4, at most 32 (bench/suite.py's COMPACT_ITEMS sets it)
#endif
#if ITEMS % 4 != 0 || ITEMS > 32
#error "ITEMS must be a multiple of 4 and at most 32"
#endif
#define TILE (BS * ITEMS)
#ifndef W
#define W 32                      // predecessors looked at together (at most BS)
#endif
#define PAD(j) ((j) + ((j) >> 5))
#define FLAG_A 1UL
#define FLAG_P 2UL
#define STATUS(flag, v) (((flag) << 32) | (ulong)(uint)(v))
#define FLAG(s) ((s) >> 32)

__kernel void compact_init(__global ulong *status, __global uint *counter, const int tiles)
{
    const int i = get_global_id(0);
    if (i < tiles)
        status[i] = 0;
    if (i == 0)
        *counter = 0;
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void compact(__global const int *restrict in, __global int *restrict out, const int n,
             __global ulong *status, __global uint *counter)
{
    __local int tile[PAD(TILE)];                // the tile's elements, then its kept ones
    __local uint part[2][BS];
    __local int nearest;                        // in the window, the nearest tile with P, else W
    __local uint sum;                           // the counts looked back over so far
    __local uint ticket;
    const int lid = get_local_id(0);
    if (lid == 0) {
        ticket = atomic_inc(counter);
        nearest = W;
        sum = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = ticket;
    const int base = t * TILE;
    const int left = n - base;                  // elements from base on (> TILE but in the last tile)

    if (left >= TILE) {
        __global const int4 *in4 = (__global const int4 *)(in + base);
        #pragma unroll
        for (int k = 0; k < ITEMS / 4; k++) {
            const int q = k * BS + lid, j = 4 * q;
            const int4 v = in4[q];
            tile[PAD(j)] = v.x;
            tile[PAD(j) + 1] = v.y;
            tile[PAD(j) + 2] = v.z;
            tile[PAD(j) + 3] = v.w;
        }
    } else {
        #pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            tile[PAD(j)] = j < left ? in[base + j] : 0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    int x[ITEMS];                               // my ITEMS elements
    uint keep = 0;                              // bit c: x[c] is kept
    #pragma unroll
    for (int c = 0; c < ITEMS; c++) {
        const int j = lid * ITEMS + c;
        x[c] = tile[PAD(j)];
        keep |= (uint)(j < left && KEEP(x[c])) << c;
    }
    const uint count = popcount(keep);
    part[0][lid] = count;
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
    const uint through = part[src][lid];        // kept elements of mine and before them in the tile
    const uint aggregate = part[src][BS - 1];   // kept elements of the tile
    if (lid == 0)
        atom_xchg(&status[t], STATUS(t == 0 ? FLAG_P : FLAG_A, aggregate));

    uint before = 0;                            // kept elements of all tiles before this one
    if (t > 0) {
        for (int end = t - 1;; end -= W) {      // the window: tiles end, end - 1, ..., end - W + 1
            uint v = 0;
            if (lid < W) {
                const int j = end - lid;
                ulong s = STATUS(FLAG_P, 0);    // before tile 0
                if (j >= 0)
                    do
                        s = atom_add(&status[j], 0UL);
                    while (FLAG(s) == 0);
                if (FLAG(s) == FLAG_P)
                    atomic_min(&nearest, lid);
                v = (uint)s;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            const int stop = nearest;           // add the counts of tiles end .. end - stop
            if (lid < W && lid <= stop)
                atomic_add(&sum, v);
            barrier(CLK_LOCAL_MEM_FENCE);
            before = sum;                       // (read by all before the next window's adds)
            if (stop < W)
                break;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            atom_xchg(&status[t], STATUS(FLAG_P, before + aggregate));
    }
    if (lid == 0 && left <= TILE)               // the last tile: the total count
        out[n] = (int)(before + aggregate);

    uint rank = through - count;                // where my first kept element goes in the tile
    #pragma unroll
    for (int c = 0; c < ITEMS; c++)
        if (keep & (1u << c)) {
            tile[PAD(rank)] = x[c];
            rank++;
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int lead = before & 31;               // out + before - lead: a 128-byte boundary
    for (int k = 0; k * BS < (int)aggregate + lead; k++) {
        const int j = k * BS + lid - lead;
        if (j >= 0 && j < (int)aggregate)
            out[before + j] = tile[PAD(j)];
    }
}
