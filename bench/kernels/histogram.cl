// Histogram of n ints into `bins` bins (values outside [0, bins) not counted), the
// best-known form for a GPU: where the bins fit in local memory (hist_local, up to
// LOCAL_BINS), each work-group counts its elements into its own copy of the bins with
// local atomics (int4 grid-stride loads, so coalesced), then adds its copy into the
// global bins with one global atomic per bin; more bins than that (hist_global) are
// counted straight into the global bins.  hist_zero clears the global bins first (it is
// part of the row's time, as FCL's first kernel is).  Launch: work-groups of BS
// work-items.
#define BS 256
#define LOCAL_BINS 4096

// every element of in[0..n) inside [0, bins) counted into `hist` (local or global): int4
// grid-stride loads, then the last n % 4 elements one a work-item
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
void hist_global(__global const int *restrict in, __global int *restrict out, const int n, const int bins)
{
    COUNT_INTO(out);
}
