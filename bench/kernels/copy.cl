// Copy n ints: int4 loads and stores over a grid-stride loop, the last n % 4
// elements one each.  Launch: any number of work-groups; the global size must
// be at least 4.  The buffers are OpenCL allocations, so 16-byte aligned.
__kernel void copy(__global const int *restrict in, __global int *restrict out, const int n)
{
    const int n4 = n / 4;
    __global const int4 *in4 = (__global const int4 *)in;
    __global int4 *out4 = (__global int4 *)out;
    for (int i = get_global_id(0); i < n4; i += get_global_size(0))
        out4[i] = in4[i];
    const int tail = 4 * n4 + get_global_id(0);
    if (tail < n)
        out[tail] = in[tail];
}
