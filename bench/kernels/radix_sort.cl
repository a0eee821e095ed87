// LSD radix sort of n signed ints, ascending (as np.sort), 4 bits a pass,
// 8 passes of three launches each: upsweep, scan, downsweep, in the classic
// form (Satish, Harris and Garland, "Designing Efficient Sorting Algorithms
// for Manycore GPUs", 2009; CUB's DeviceRadixSort before onesweep).  A
// key's digit is 4 bits of its bits with bit 31 flipped (x ^ 0x80000000),
// so that negative keys come first; the keys themselves move unchanged.
// Each pass reads a source and writes a destination: the first reads the
// input (never written), then the passes go back and forth between a
// scratch buffer and `out`, the eighth writing `out`.
//
// A tile is TILE = BS x ITEMS consecutive keys.  Work-group g of a pass
// takes `per_group` consecutive tiles, the same in all three kernels: the
// launch makes per_group 1 (a work-group a tile) up to SORT_GROUPS tiles
// (bench/suite.py), and past that as few tiles a work-group as keep the
// work-groups at most SORT_GROUPS ("even share", as CUB).  The histogram
// is then at most 16 x 1024 counts, which one work-group scans in 12 us;
// with a work-group a tile, 16 x 16384 counts at 2^26, the 8 scans took
// 1.08 ms of the sort's 5.66 ms (with an earlier downsweep).
//
// radix_upsweep: work-group g counts the 16 digits of its keys and writes
// count[d][g] to hist[d * groups + g] (digit-major: the exclusive scan of
// hist is where group g's keys of digit d start in the destination).  The
// keys are read coalesced (int4) in any order, and each work-item counts in
// registers, eight bits a digit in four words (no local atomics: with many
// equal keys they would all hit one counter); after each tile the bytes are
// added to sixteen 32-bit counts, which the work-group then adds up in
// local memory.
//
// radix_scan: one work-group scans the 16 x groups counts in place,
// exclusive, BS x 8 at a time (each work-item scans 8 consecutive counts,
// the work-group the BS totals, Hillis-Steele).
//
// radix_downsweep: work-group g re-reads its tiles in order.  A tile is
// loaded coalesced (int4) into local memory, and work-item i takes its keys
// i * ITEMS .. i * ITEMS + ITEMS - 1 into registers (the order of
// (work-item, item) is the keys' order: the ranking is stable).  Each
// work-item counts its digits in registers (as the upsweep), keeping for
// each key its digit (4 bits) and how many of its keys before it have that
// digit (8 bits); its 16 counts go to its column of local memory, two
// 16-bit counts a word (digits L and L + 8 in word L), and the work-group
// scans the 8 x BS words, exclusive, in the order (word, work-item): the
// low halves then count, for digit L < 8 and work-item i, the keys of
// digits below L and those of digit L in work-items before i; the high
// halves the same among digits 8..15, to which the count of digits 0..7 is
// added.  A key's rank in the tile is its digit's half of its word plus its
// count within its work-item.  The keys are written to local memory at
// their ranks and read back in order, so that the key at rank j, of digit
// d, goes to offset[d] + j - start[d], where offset[d] is the scanned
// histogram plus the group's earlier tiles' counts and start[d] where digit
// d starts in the ranked tile: a digit's keys go to consecutive addresses
// (coalesced).  A partial last tile is filled with INT_MAX, whose digit is
// always 15: those keys rank last and are not written.
//
// radix_pairs_downsweep: the same, also moving a value (an int) with each
// key, from vsrc to vdst: the values go through the same local memory
// after the keys, to the same places.  (Not radix_downsweep_pairs: Oclgrind
// counts the local memory of kernels whose names begin with a kernel's name
// as the kernel's own.)
//
// Every local access whose place does not depend on the keys is a
// work-item's base address plus a constant (the layouts below, padded
// against bank conflicts).  With those addresses computed per access
// (j + j / 32 of a computed j), NVIDIA's compiler gave the downsweep 128
// registers at ITEMS 16 (188 with values; 2 or 1 work-groups a
// multiprocessor) instead of 64 (128), and the sort took 3.12 ms, not 2.64.
//
// On an H200 (2026-11-27, OpenCL 3.0), 2^26 random keys, SORT_GROUPS 1024:
// ITEMS 16: 2.64 ms (25.4 Gkeys/s; upsweeps 0.68 ms, scans 0.10, downsweeps
// 1.87), ITEMS 8: 2.92, ITEMS 32: 2.78; SORT_GROUPS 512 or 2048: within 2%.
// With values: 4.48 ms at ITEMS 16 (128 registers), 4.39 at ITEMS 8.
// Ranking from one local tile into a second instead of through registers
// ran as fast (2.63 / 4.35 ms) with 45 KB of local memory, not 27.
//
// ITEMS (a power of two from 4; bench/suite.py's SORT_ITEMS sets it):
// local memory, downsweep (ITEMS + 11.3) KB, upsweep 17 KB, scan 10 KB, so
// NVIDIA's 48 KB takes ITEMS <= 32 and Oclgrind's 32 KB ITEMS <= 16; tests
// take 4, so that small sizes
// make several tiles.  A work-item's count of a digit must fit 8 bits, a
// tile's 16 (ITEMS < 256).  Offsets are ints: n < 2^31 - TILE x per_group.
#define BS 256
#ifndef ITEMS
#define ITEMS 16                  // bench/suite.py's SORT_ITEMS sets it
#endif
#if ITEMS % 4 != 0 || BS % ITEMS != 0
#error "ITEMS must be 4, 8, 16, 32, 64 or 128"
#endif
#define TILE (BS * ITEMS)
#define RADIX 16
#define SCAN_ITEMS 8              // counts a work-item scans in radix_scan
#define PAD(j) ((j) + ((j) >> 5))
#define DIGIT(k, shift) (((uint)(k) ^ 0x80000000u) >> (shift) & (RADIX - 1))
#define FILL 0x7fffffff           // digit 15 at every shift

// four words of eight 8-bit counts: digit d is byte d & 3 of word d >> 2
uint4 count_digit(const uint4 c, const uint d)
{
    const uint w = d >> 2, one = 1u << (d & 3) * 8;
    return c + (uint4)(w == 0 ? one : 0, w == 1 ? one : 0, w == 2 ? one : 0, w == 3 ? one : 0);
}

uint digit_count(const uint4 c, const uint d)
{
    const uint w = d >> 2;
    const uint v = w == 0 ? c.x : w == 1 ? c.y : w == 2 ? c.z : c.w;
    return v >> (d & 3) * 8 & 0xff;
}

// inclusive scan of x over the work-group (Hillis-Steele, double-buffered in
// part[2 * BS]); *total gets the sum of all.  Callers put a barrier between
// the last read of *total and the next call.
uint group_scan(__local uint *part, const uint x, uint *total)
{
    const int lid = get_local_id(0);
    part[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    int src = 0;
    #pragma unroll
    for (int offset = 1; offset < BS; offset *= 2) {
        uint v = part[src * BS + lid];
        if (lid >= offset)
            v += part[src * BS + lid - offset];
        part[(src ^ 1) * BS + lid] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        src ^= 1;
    }
    *total = part[src * BS + BS - 1];
    return part[src * BS + lid];
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void radix_upsweep(__global const int *restrict src, __global uint *restrict hist, const int n,
                   const int shift, const int per_group)
{
    __local uint red[RADIX][BS + 1];
    __local uint part[BS];
    const int lid = get_local_id(0), g = get_group_id(0), groups = get_num_groups(0);
    const int start = g * per_group * TILE;
    const int end = min(n, start + per_group * TILE);
    uint acc[RADIX];
    #pragma unroll
    for (int d = 0; d < RADIX; d++)
        acc[d] = 0;
    for (int base = start; base < end; base += TILE) {
        uint4 c = 0;
        if (base + TILE <= end) {
            __global const int4 *src4 = (__global const int4 *)(src + base);
            #pragma unroll
            for (int k = 0; k < ITEMS / 4; k++) {
                const int4 v = src4[k * BS + lid];
                c = count_digit(c, DIGIT(v.x, shift));
                c = count_digit(c, DIGIT(v.y, shift));
                c = count_digit(c, DIGIT(v.z, shift));
                c = count_digit(c, DIGIT(v.w, shift));
            }
        } else {
            for (int k = 0; k < ITEMS; k++) {
                const int j = base + k * BS + lid;
                if (j < end)
                    c = count_digit(c, DIGIT(src[j], shift));
            }
        }
        #pragma unroll
        for (int b = 0; b < 4; b++) {
            acc[b] += c.x >> 8 * b & 0xff;
            acc[4 + b] += c.y >> 8 * b & 0xff;
            acc[8 + b] += c.z >> 8 * b & 0xff;
            acc[12 + b] += c.w >> 8 * b & 0xff;
        }
    }
    #pragma unroll
    for (int d = 0; d < RADIX; d++)
        red[d][lid] = acc[d];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int d = lid & (RADIX - 1), p = lid / RADIX;     // digit d, work-items 16p .. 16p + 15
    uint s = 0;
    #pragma unroll
    for (int i = 0; i < BS / RADIX; i++)
        s += red[d][p * (BS / RADIX) + i];
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < RADIX) {
        uint t = 0;
        #pragma unroll
        for (int q = 0; q < BS / RADIX; q++)
            t += part[q * RADIX + lid];
        hist[lid * groups + g] = t;
    }
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void radix_scan(__global uint *hist, const int count)
{
    __local uint buf[PAD(BS * SCAN_ITEMS)];
    __local uint part[2 * BS];
    const int lid = get_local_id(0);
    uint carry = 0;
    for (int base = 0; base < count; base += BS * SCAN_ITEMS) {
        #pragma unroll
        for (int k = 0; k < SCAN_ITEMS; k++) {
            const int j = k * BS + lid;
            buf[PAD(j)] = base + j < count ? hist[base + j] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint x[SCAN_ITEMS];                     // exclusive scan of my SCAN_ITEMS counts
        uint run = 0;
        #pragma unroll
        for (int c = 0; c < SCAN_ITEMS; c++) {
            x[c] = run;
            run += buf[PAD(lid * SCAN_ITEMS + c)];
        }
        uint total;
        const uint before = carry + group_scan(part, run, &total) - run;
        #pragma unroll
        for (int c = 0; c < SCAN_ITEMS; c++)    // only I read these words of buf
            buf[PAD(lid * SCAN_ITEMS + c)] = x[c] + before;
        carry += total;
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int k = 0; k < SCAN_ITEMS; k++) {  // and these I wrote above
            const int j = k * BS + lid;
            if (base + j < count)
                hist[base + j] = buf[PAD(j)];
        }
    }
}

// Local layouts of the downsweep, so that a work-item's addresses are one base
// plus constants (see the header):
//   tile: element j of the tile at TPAD(j) = j + j / ITEMS, a pad word after each
//         work-item's ITEMS keys (the blocked reads, stride ITEMS + 1, hit 32 banks);
//   cnt:  word L of work-item i at L * CROW + i + i / 32; the scan reads words
//         8 i + c, c < 8, of the (word, work-item) order, at 8 i + i / 4 + c.
#define TPAD(j) ((j) + (j) / ITEMS)
#define TSIZE (TILE + BS)
#define CROW (BS + BS / 32)
#define STRIDE (BS + BS / ITEMS)              // TPAD(j + BS) - TPAD(j)

// the `valid` elements of src striped into tile, fill after them
void load_tile(__local uint *tile, __global const int *src, const int valid, const uint fill)
{
    const int lid = get_local_id(0);
    if (valid == TILE) {
        __global const int4 *src4 = (__global const int4 *)src;
        __local uint *t = tile + TPAD(4 * lid);  // elements 4 lid .. 4 lid + 3 (ITEMS % 4 == 0)
        #pragma unroll
        for (int k = 0; k < ITEMS / 4; k++) {
            const uint4 v = as_uint4(src4[k * BS + lid]);
            t[4 * k * STRIDE] = v.x;
            t[4 * k * STRIDE + 1] = v.y;
            t[4 * k * STRIDE + 2] = v.z;
            t[4 * k * STRIDE + 3] = v.w;
        }
    } else {
        __local uint *t = tile + TPAD(lid);
        #pragma unroll
        for (int k = 0; k < ITEMS; k++)
            t[k * STRIDE] = k * BS + lid < valid ? (uint)src[k * BS + lid] : fill;
    }
}

// counts my digits (the ITEMS blocked keys of tile at my row): dg gets the digit of
// my key c (4 bits c % 8 of word c / 8), before how many of my keys before it have its
// digit (byte c % 4 of word c / 4); my column of cnt my 16 counts (see the header)
#define COUNT_ROW(row)                                                              \
    uint dg[(ITEMS + 7) / 8], before[ITEMS / 4];                                    \
    {                                                                               \
        uint4 w = 0;                                                                \
        _Pragma("unroll")                                                           \
        for (int c = 0; c < ITEMS; c++) {                                           \
            const uint d = DIGIT((row)[c], shift);                                  \
            if (c % 8 == 0)                                                         \
                dg[c / 8] = 0;                                                      \
            dg[c / 8] |= d << c % 8 * 4;                                            \
            if (c % 4 == 0)                                                         \
                before[c / 4] = 0;                                                  \
            before[c / 4] |= digit_count(w, d) << c % 4 * 8;                        \
            w = count_digit(w, d);                                                  \
        }                                                                           \
        _Pragma("unroll")                                                           \
        for (int b = 0; b < 4; b++) {                                               \
            col[b * CROW] = (w.x >> 8 * b & 0xff) | (w.z >> 8 * b & 0xff) << 16;    \
            col[(4 + b) * CROW] = (w.y >> 8 * b & 0xff) | (w.w >> 8 * b & 0xff) << 16; \
        }                                                                           \
    }
#define MYDIGIT(c) (dg[(c) / 8] >> (c) % 8 * 4 & 15)
#define RANK(c) ((before[(c) / 4] >> (c) % 4 * 8 & 0xff) + \
                 (col[(MYDIGIT(c) & 7) * CROW] >> (MYDIGIT(c) >> 3) * 16 & 0xffff))

// the scan of cnt (see the header); then work-item d < 16 sets delta[d] and adds
// digit d's count in the tile to *offset
void rank_scan(__local uint *cnt, __local uint *part, __local int *delta, uint *offset)
{
    const int lid = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    __local uint *mine = cnt + 8 * lid + lid / 4;
    uint x[8];
    uint run = 0;
    #pragma unroll
    for (int c = 0; c < 8; c++) {
        x[c] = run;
        run += mine[c];
    }
    uint total;
    const uint lower = group_scan(part, run, &total) - run + (total << 16);   // digits 0..7 below 8..15
    #pragma unroll
    for (int c = 0; c < 8; c++)                 // only I read these words of cnt
        mine[c] = x[c] + lower;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < RADIX) {                          // digit lid starts at first in the ranked tile
        const uint first = cnt[(lid & 7) * CROW] >> (lid >> 3) * 16 & 0xffff;
        const uint next = lid == RADIX - 1 ? TILE : cnt[((lid + 1) & 7) * CROW] >> ((lid + 1) >> 3) * 16 & 0xffff;
        delta[lid] = (int)(*offset - first);
        *offset += next - first;
    }
}

// the downsweep of radix_downsweep (pairs false: vsrc and vdst unused) and radix_pairs_downsweep
void downsweep(__global const int *restrict src, __global int *restrict dst,
               __global const int *restrict vsrc, __global int *restrict vdst, const bool pairs,
               __global const uint *restrict hist, const int n, const int shift, const int per_group,
               __local uint *tile, __local uint *cnt, __local uint *part, __local int *delta)
{
    const int lid = get_local_id(0), g = get_group_id(0), groups = get_num_groups(0);
    uint offset = lid < RADIX ? hist[lid * groups + g] : 0;    // work-item d < 16: digit d's
    const int start = g * per_group * TILE;
    const int end = min(n, start + per_group * TILE);
    __local uint *row = tile + lid * (ITEMS + 1), *striped = tile + TPAD(lid), *col = cnt + lid + lid / 32;
    for (int base = start; base < end; base += TILE) {
        const int valid = min(TILE, end - base);
        load_tile(tile, src + base, valid, FILL);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint key[ITEMS], val[ITEMS];
        #pragma unroll
        for (int c = 0; c < ITEMS; c++)
            key[c] = row[c];
        if (pairs) {
            barrier(CLK_LOCAL_MEM_FENCE);
            load_tile(tile, vsrc + base, valid, 0);
            barrier(CLK_LOCAL_MEM_FENCE);
            #pragma unroll
            for (int c = 0; c < ITEMS; c++)
                val[c] = row[c];
        }
        COUNT_ROW(key)
        rank_scan(cnt, part, delta, &offset);
        #pragma unroll
        for (int c = 0; c < ITEMS; c++)         // everyone has read its keys from tile
            tile[TPAD(RANK(c))] = key[c];
        barrier(CLK_LOCAL_MEM_FENCE);
        uint sd[(ITEMS + 7) / 8];               // digit of ranked key k * BS + lid, packed as dg
        #pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            const uint v = striped[k * STRIDE], d = DIGIT(v, shift);
            if (k % 8 == 0)
                sd[k / 8] = 0;
            sd[k / 8] |= d << k % 8 * 4;
            if (j < valid)
                dst[delta[d] + j] = (int)v;
        }
        if (pairs) {
            barrier(CLK_LOCAL_MEM_FENCE);
            #pragma unroll
            for (int c = 0; c < ITEMS; c++)
                tile[TPAD(RANK(c))] = val[c];
            barrier(CLK_LOCAL_MEM_FENCE);
            #pragma unroll
            for (int k = 0; k < ITEMS; k++) {
                const int j = k * BS + lid;
                if (j < valid)
                    vdst[delta[sd[k / 8] >> k % 8 * 4 & 15] + j] = (int)striped[k * STRIDE];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);           // before the next tile's tile
    }
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void radix_downsweep(__global const int *restrict src, __global int *restrict dst,
                     __global const uint *restrict hist, const int n, const int shift, const int per_group)
{
    __local uint tile[TSIZE];
    __local uint cnt[8 * CROW];
    __local uint part[2 * BS];
    __local int delta[RADIX];
    downsweep(src, dst, 0, 0, false, hist, n, shift, per_group, tile, cnt, part, delta);
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void radix_pairs_downsweep(__global const int *restrict src, __global int *restrict dst,
                           __global const int *restrict vsrc, __global int *restrict vdst,
                           __global const uint *restrict hist, const int n, const int shift,
                           const int per_group)
{
    __local uint tile[TSIZE];
    __local uint cnt[8 * CROW];
    __local uint part[2 * BS];
    __local int delta[RADIX];
    downsweep(src, dst, vsrc, vdst, true, hist, n, shift, per_group, tile, cnt, part, delta);
}
