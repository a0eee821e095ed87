// C = A B for float matrices, A m x k, B k x n, all row-major.
//
// matmul_reg8x8: a work-group of TX x TY = 16 x 16 work-items computes a
// BM x BN = 128 x 128 tile of C, each work-item an 8 x 8 block of it in
// registers: rows 4 ty + {0..3} and 64 + 4 ty + {0..3}, columns 4 tx +
// {0..3} and 64 + 4 tx + {0..3}, so that its operands are two float4 of A
// and two of B per step along k and its stores are float4.  Per K-tile of
// BK = 16 the work-group stages a 128 x 16 slice of A (transposed: as[q][i],
// so the inner loop reads float4 along M) and a 16 x 128 slice of B in
// local memory, each work-item loading 2 float4 of each (coalesced: four
// work-items read 64 contiguous bytes of a row of A, a warp 512 bytes of a
// row of B).  The local tiles are double-buffered: the next K-tile's float4
// loads are issued into registers before the 16 x 64 multiply-adds on the
// current one and stored to the other buffer after them, one barrier per
// K-tile.  The transposed A tile has its groups of four columns XOR-swizzled
// by row (SW) so that the scalar stores of a warp hit 32 distinct banks
// without padding (both buffers then fill 32 KB, which Oclgrind's devices
// allow).  Loads are float4 where the row length (k for A, n for B, n for
// the stores of C) is a multiple of 4, so each float4 is 16-byte aligned
// and lies wholly inside or outside the matrix; otherwise per element.
// Zeros are read outside the matrices: any m, n, k >= 1 works.  Launch:
// global (ceil(n / BN) * TX, ceil(m / BM) * TY), local (TX, TY).
//
// matmul_tile16: the classic 16 x 16 local-memory tiling, one element of C
// per work-item.  Launch: global (ceil(n / 16) * 16, ceil(m / 16) * 16),
// local (16, 16).
#define BM 128
#define BN 128
#define BK 16
#define TX 16
#define TY 16
#define SW(q) ((((q) >> 2) & 3) << 3)   // swizzle of as[q][i]: i ^ SW(q), a multiple of 8 below 32

// four consecutive floats of a row from column col, zeros at columns >= limit or where
// !row_ok; vec: the row starts 16-byte aligned and the four lie all inside or all outside
float4 load4(__global const float *restrict p, const bool row_ok, const int col, const int limit,
             const bool vec)
{
    if (vec)
        return row_ok && col < limit ? *(__global const float4 *)p : (float4)(0.0f);
    return (float4)(row_ok && col < limit ? p[0] : 0.0f, row_ok && col + 1 < limit ? p[1] : 0.0f,
                    row_ok && col + 2 < limit ? p[2] : 0.0f, row_ok && col + 3 < limit ? p[3] : 0.0f);
}

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void matmul_reg8x8(__global const float *restrict a, __global const float *restrict b,
                   __global float *restrict c, const int m, const int n, const int k)
{
    __local float as[2][BK][BM] __attribute__((aligned(16)));   // as[s][q][i ^ SW(q)] = A[m0 + i][k0 + q]
    __local float bs[2][BK][BN] __attribute__((aligned(16)));   // bs[s][q][j] = B[k0 + q][n0 + j]
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * TX + tx;
    const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
    const bool vec_a = (k & 3) == 0, vec_b = (n & 3) == 0;
    // this work-item's loads: A rows m0 + ai + 64 l, columns k0 + aq .. + 3;
    // B rows k0 + bq + 8 l, columns n0 + bj .. + 3 (l = 0, 1)
    const int ai = tid >> 2, aq = (tid & 3) << 2;
    const int bq = tid >> 5, bj = (tid & 31) << 2;
    float4 ra[2], rb[2];
    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; i++)
        #pragma unroll
        for (int j = 0; j < 8; j++)
            acc[i][j] = 0.0f;

// l = 0, 1: this work-item's two float4 of each slice, into registers and into buffer s
#define FETCH(k0, l) {                                                                        \
        const int row = m0 + ai + 64 * (l), q = (k0) + bq + 8 * (l);                          \
        ra[l] = load4(a + row * k + (k0) + aq, row < m, (k0) + aq, k, vec_a);                 \
        rb[l] = load4(b + q * n + n0 + bj, q < k, n0 + bj, n, vec_b);                         \
    }
#define STASH(s, l) {                                                                         \
        const int i = ai + 64 * (l);                                                          \
        as[s][aq + 0][i ^ SW(aq + 0)] = ra[l].x;                                              \
        as[s][aq + 1][i ^ SW(aq + 1)] = ra[l].y;                                              \
        as[s][aq + 2][i ^ SW(aq + 2)] = ra[l].z;                                              \
        as[s][aq + 3][i ^ SW(aq + 3)] = ra[l].w;                                              \
        *(__local float4 *)&bs[s][bq + 8 * (l)][bj] = rb[l];                                  \
    }

    FETCH(0, 0) FETCH(0, 1)
    STASH(0, 0) STASH(0, 1)
    barrier(CLK_LOCAL_MEM_FENCE);
    int s = 0;
    for (int k0 = 0; k0 < k; k0 += BK) {
        const bool more = k0 + BK < k;
        if (more) {
            FETCH(k0 + BK, 0)           // in flight during the multiply-adds below
            FETCH(k0 + BK, 1)
        }
        #pragma unroll
        for (int q = 0; q < BK; q++) {
            const float4 a0 = *(__local const float4 *)&as[s][q][(4 * ty) ^ SW(q)];
            const float4 a1 = *(__local const float4 *)&as[s][q][(64 + 4 * ty) ^ SW(q)];
            const float4 b0 = *(__local const float4 *)&bs[s][q][4 * tx];
            const float4 b1 = *(__local const float4 *)&bs[s][q][64 + 4 * tx];
            const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            #pragma unroll
            for (int i = 0; i < 8; i++)
                #pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] = mad(av[i], bv[j], acc[i][j]);
        }
        if (more) {
            STASH(s ^ 1, 0)             // the other buffer: everyone finished reading it before
            STASH(s ^ 1, 1)             // the barrier that ended the last K-tile
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        s ^= 1;
    }
#undef FETCH
#undef STASH

    const bool vec_c = (n & 3) == 0;
    #pragma unroll
    for (int i = 0; i < 8; i++) {
        const int row = m0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + i - 4);
        if (row >= m)
            continue;
        #pragma unroll
        for (int h = 0; h < 2; h++) {
            const int col = n0 + 64 * h + 4 * tx;
            __global float *p = c + row * n + col;
            const float4 v = (float4)(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            if (vec_c) {
                if (col < n)
                    *(__global float4 *)p = v;
            } else {
                if (col < n) p[0] = v.x;
                if (col + 1 < n) p[1] = v.y;
                if (col + 2 < n) p[2] = v.z;
                if (col + 3 < n) p[3] = v.w;
            }
        }
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
