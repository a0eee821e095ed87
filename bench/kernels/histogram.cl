// Histogram of n ints into `bins` bins (values outside [0, bins) not counted), the
// best-known form for a GPU: where the bins fit in local memory (hist_local, up to
// LOCAL_BINS), each work-group counts its elements into its own copy of the bins with
// local atomics (int4 grid-stride loads, so coalesced), then adds its copy into the
// global bins with one global atomic per bin.  More bins than that (hist_sliced) are
// split into S = ceil(bins / SLICE_BINS) slices of SLICE_BINS bins (32 KiB of local
// memory; the last slice may be partial): work-group g counts into slice g % S the
// values of input range g / S that fall in it (two int4 loads in flight a work-item),
// with local atomics, then adds its nonzero counts into the global bins with global
// atomics.  The S work-groups of one
// range have consecutive ids, so they run at about the same time and all but the first
// read the range from L2.  hist_zero clears the global bins first (it is part of the
// row's time, as FCL's first kernel is).  Launch: work-groups of BS work-items;
// hist_sliced takes a multiple of S of them.
#define BS 256
#define LOCAL_BINS 4096
#define SLICE_BINS 8192

// every element of in[0..n) inside [0, bins) counted into `hist`: int4 grid-stride
// loads, then the last n % 4 elements one a work-item
#define COUNT_INTO(hist)                                                            \
    do {                                                                            \
        const int n4 = n / 4;                                                       \
        __global const int4 *in4 = (__global const int4 *)in;                       \
        for (int i = get_global_id(0); i < n4; i += get_global_size(0)) {           \
            const int4 v = in4[i];                                                  \
            if ((uint)v.x < (uint)bins) atomic_add(&hist[v.x], 1);                  \
            if ((uint)v.y < (uint)bins) atomic_add(&hist[v.y], 1);                  \
            if ((uint)v.z < (uint)bins) atomic_add(&hist[v.z], 1);                  \
            if ((uint)v.w < (uint)bins) atomic_add(&hist[v.w], 1);                  \
        }                                                                           \
        const int tail = 4 * n4 + get_global_id(0);                                 \
        if (tail < n && (uint)in[tail] < (uint)bins)                                \
            atomic_add(&hist[in[tail]], 1);                                         \
    } while (0)

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void hist_zero(__global int *restrict out, const int bins)
{
    for (int b = get_global_id(0); b < bins; b += get_global_size(0))
        out[b] = 0;
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void hist_local(__global const int *restrict in, __global int *restrict out, const int n, const int bins)
{
    __local int h[LOCAL_BINS];
    const int lid = get_local_id(0);
    for (int b = lid; b < bins; b += BS)
        h[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    COUNT_INTO(h);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = lid; b < bins; b += BS)
        if (h[b])
            atomic_add(&out[b], h[b]);
}

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void hist_sliced(__global const int *restrict in, __global int *restrict out, const int n, const int bins)
{
    __local int h[SLICE_BINS];
    const int lid = get_local_id(0);
    const int slices = (bins + SLICE_BINS - 1) / SLICE_BINS;
    const int slice = get_group_id(0) % slices, range = get_group_id(0) / slices;
    const int ranges = get_num_groups(0) / slices;
    // the slice holds bins [base, base + width); as base + width <= bins < 2^31, one
    // unsigned compare (uint)v - base < width is v in that interval (negative v too)
    const uint base = (uint)slice * SLICE_BINS;
    const uint width = min((uint)SLICE_BINS, (uint)bins - base);
    for (int b = lid; b < (int)width; b += BS)
        h[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    // the range's int4s: a grid-stride loop over the ranges (every work-group of a range
    // reads the same int4s), two loads in flight a work-item (0.29 ms on an H200 at 2^26
    // x 65536 against 0.36 with one), then the last n % 4 elements one a work-item of
    // range 0
    const int n4 = n / 4, stride = ranges * BS;
    __global const int4 *in4 = (__global const int4 *)in;
    for (int i = range * BS + lid; i < n4; i += 2 * stride) {
        // past the end: 0xFFFFFFFF - base >= width, so nothing is counted
        const uint4 a = as_uint4(in4[i]) - base;
        const uint4 b = (i + stride < n4 ? as_uint4(in4[i + stride]) : (uint4)(0xFFFFFFFFu)) - base;
        if (a.x < width) atomic_add(&h[a.x], 1);
        if (a.y < width) atomic_add(&h[a.y], 1);
        if (a.z < width) atomic_add(&h[a.z], 1);
        if (a.w < width) atomic_add(&h[a.w], 1);
        if (b.x < width) atomic_add(&h[b.x], 1);
        if (b.y < width) atomic_add(&h[b.y], 1);
        if (b.z < width) atomic_add(&h[b.z], 1);
        if (b.w < width) atomic_add(&h[b.w], 1);
    }
    const int tail = 4 * n4 + range * BS + lid;
    if (tail < n && (uint)in[tail] - base < width)
        atomic_add(&h[(uint)in[tail] - base], 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = lid; b < (int)width; b += BS)
        if (h[b])
            atomic_add(&out[base + b], h[b]);
}
