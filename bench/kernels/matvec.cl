// y = A x for a rows x cols row-major float matrix: one work-group per row
// (grid-stride over rows).  The work-items read the row with a stride of BS,
// so every read is coalesced (float4 when cols is a multiple of 4, which
// keeps each row 16-byte aligned), then add their BS partial sums as a tree
// in local memory.  Launch: work-groups of BS work-items.
#define BS 256

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void matvec(__global const float *restrict a, __global const float *restrict x, __global float *restrict y,
            const int rows, const int cols)
{
    __local float sums[BS];
    const int lid = get_local_id(0);
    for (int r = get_group_id(0); r < rows; r += get_num_groups(0)) {
        __global const float *row = a + (size_t)r * cols;
        float acc = 0.0f;
        if (cols % 4 == 0) {
            __global const float4 *row4 = (__global const float4 *)row;
            __global const float4 *x4 = (__global const float4 *)x;
            for (int c = lid; c < cols / 4; c += BS) {
                const float4 p = row4[c] * x4[c];
                acc += (p.x + p.y) + (p.z + p.w);
            }
        } else {
            for (int c = lid; c < cols; c += BS)
                acc += row[c] * x[c];
        }
        sums[lid] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int stride = BS / 2; stride > 0; stride /= 2) {
            if (lid < stride)
                sums[lid] += sums[lid + stride];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            y[r] = sums[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
