// Sum of n ints (32-bit wrap-around), two passes of the same kernel: pass 1
// with G work-groups writes G partial sums, pass 2 with one work-group sums
// those.  Each work-item first adds its elements sequentially (int4 loads,
// grid-stride, so coalesced), then the work-group adds the BS partial sums as
// a tree in local memory.  Unsigned arithmetic: overflow wraps, no undefined
// behaviour.  Launch: work-groups of BS work-items; global size at least 4.
#define BS 256

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void reduce(__global const int *restrict in, __global int *restrict partial, const int n)
{
    __local uint sums[BS];
    const int lid = get_local_id(0);
    const int n4 = n / 4;
    __global const int4 *in4 = (__global const int4 *)in;
    uint acc = 0;
    for (int i = get_global_id(0); i < n4; i += get_global_size(0)) {
        const uint4 v = as_uint4(in4[i]);
        acc += (v.x + v.y) + (v.z + v.w);
    }
    const int tail = 4 * n4 + get_global_id(0);
    if (tail < n)
        acc += (uint)in[tail];
    sums[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = BS / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            sums[lid] += sums[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = (int)sums[0];
}
