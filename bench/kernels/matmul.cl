// C = A B for float matrices, A m x k, B k x n, all row-major.
//
// matmul_regblock: a work-group of TX x TY = 16 x 16 work-items computes a
// BM x BN = 128 x 128 tile of C, each work-item an 8 x 8 block held in
// registers (rows ty + 16 i, columns tx + 16 j).  Per step of BK = 16 along
// k the work-group stages a BM x BK slice of A (transposed, padded) and a
// BK x BN slice of B in local memory with coalesced reads; each work-item
// then does 8 x 8 multiply-adds per 16 local reads.  Launch: global
// (ceil(n / BN) * TX, ceil(m / BM) * TY), local (TX, TY).
//
// matmul_tile16: the classic 16 x 16 local-memory tiling, one element of C
// per work-item.  Launch: global (ceil(n / 16) * 16, ceil(m / 16) * 16),
// local (16, 16).
//
// Both read zeros outside the matrices, so any m, n, k >= 1 works.
#define BM 128
#define BN 128
#define BK 16
#define TX 16
#define TY 16
#define WM (BM / TY)
#define WN (BN / TX)

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void matmul_regblock(__global const float *restrict a, __global const float *restrict b,
                     __global float *restrict c, const int m, const int n, const int k)
{
    __local float as[BK][BM + 1];      // as[q][i] = A[m0 + i][k0 + q]
    __local float bs[BK][BN];          // bs[q][j] = B[k0 + q][n0 + j]
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * TX + tx;
    const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
    float acc[WM][WN];
    for (int i = 0; i < WM; i++)
        for (int j = 0; j < WN; j++)
            acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < k; k0 += BK) {
        #pragma unroll
        for (int l = 0; l < BM * BK / (TX * TY); l++) {
            const int e = tid + l * TX * TY, i = e / BK, q = e % BK;
            as[q][i] = (m0 + i < m && k0 + q < k) ? a[(m0 + i) * k + k0 + q] : 0.0f;
        }
        #pragma unroll
        for (int l = 0; l < BK * BN / (TX * TY); l++) {
            const int e = tid + l * TX * TY, q = e / BN, j = e % BN;
            bs[q][j] = (k0 + q < k && n0 + j < n) ? b[(k0 + q) * n + n0 + j] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int q = 0; q < BK; q++) {
            float ra[WM], rb[WN];
            for (int i = 0; i < WM; i++)
                ra[i] = as[q][ty + TY * i];
            for (int j = 0; j < WN; j++)
                rb[j] = bs[q][tx + TX * j];
            for (int i = 0; i < WM; i++)
                for (int j = 0; j < WN; j++)
                    acc[i][j] = mad(ra[i], rb[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < WM; i++)
        for (int j = 0; j < WN; j++) {
            const int row = m0 + ty + TY * i, col = n0 + tx + TX * j;
            if (row < m && col < n)
                c[row * n + col] = acc[i][j];
        }
}

#define T 16

__kernel __attribute__((reqd_work_group_size(T, T, 1)))
void matmul_tile16(__global const float *restrict a, __global const float *restrict b,
                   __global float *restrict c, const int m, const int n, const int k)
{
    __local float as[T][T];
    __local float bs[T][T];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int row = get_group_id(1) * T + ty, col = get_group_id(0) * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += T) {
        as[ty][tx] = (row < m && k0 + tx < k) ? a[row * k + k0 + tx] : 0.0f;
        bs[ty][tx] = (k0 + ty < k && col < n) ? b[(k0 + ty) * n + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = 0; q < T; q++)
            acc = mad(as[ty][q], bs[q][tx], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}
