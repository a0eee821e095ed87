// y = A x for a sparse float matrix in compressed rows (CSR: row r's
// non-zeros are vals[k] in column cols[k], k from rowStart[r] to
// rowStart[r + 1] - 1), "CSR-vector" (Bell and Garland, "Implementing
// Sparse Matrix-Vector Multiplication on Throughput-Oriented Processors",
// 2009): LANES work-items (a warp) per row, so a work-group of BS takes
// BS / LANES rows at a time (grid-stride over such blocks of rows).  Lane l
// of a row multiplies non-zeros l, l + LANES, ...: the reads of cols and
// vals are coalesced, those of x are a gather.  The LANES partial sums of
// a row are added through local memory: each work-item writes its own, one
// barrier, and the row's first lane adds the LANES of them (float4 reads,
// as a tree) and stores y[r].  Warp-synchronous code without barriers is not
// safe in OpenCL, and sub-group functions are not everywhere (NVIDIA's
// OpenCL has none), so one barrier a block of rows; the partial sums are
// double-buffered by iteration so that no second barrier is needed before
// the next block writes them.  Sums in float, in no fixed order.
//
// LANES 32 for rows of 32 to 64 non-zeros: with 2^20 rows an H100 took
// 0.453 / 0.479 / 0.504 / 0.550 ms with 32 / 16 / 8 / 4 lanes a row (one
// run), an H200 0.389 / 0.408 ms with 32 / 16 (another).  cols and vals
// then stream at about 1 TB/s, far under a copy's rate: the cost is
// presumably the gather of x (4 MB there, in L2).
// Launch: work-groups of BS work-items, any number of them (grid-stride).
#define BS 256
#ifndef LANES
#define LANES 32                  // a power of two from 4 to BS (bench/suite.py's SPMV_LANES)
#endif
#define ROWS (BS / LANES)         // rows a work-group takes at a time

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void spmv(__global const int *restrict rowStart, __global const int *restrict cols,
          __global const float *restrict vals, __global const float *restrict x,
          __global float *restrict y, const int rows)
{
    __local float4 part[2][BS / 4];             // float4: 16-byte aligned for the reads
    const int lid = get_local_id(0);
    const int lane = lid % LANES;
    int buf = 0;
    for (int r0 = get_group_id(0) * ROWS; r0 < rows; r0 += get_num_groups(0) * ROWS) {
        const int r = r0 + lid / LANES;
        float acc = 0.0f;
        if (r < rows) {
            const int b = rowStart[r + 1];
            for (int k = rowStart[r] + lane; k < b; k += LANES)
                acc += vals[k] * x[cols[k]];
        }
        ((__local float *)part[buf])[lid] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane == 0 && r < rows) {
            __local const float4 *p = part[buf] + lid / 4;
            float4 s[LANES / 4];
            #pragma unroll
            for (int i = 0; i < LANES / 4; i++)
                s[i] = p[i];
            #pragma unroll
            for (int w = LANES / 8; w > 0; w /= 2)     // a tree of the float4s
                #pragma unroll
                for (int i = 0; i < w; i++)
                    s[i] += s[i + w];
            y[r] = (s[0].x + s[0].y) + (s[0].z + s[0].w);
        }
        buf ^= 1;                               // part[buf] is read until the next barrier
    }
}
