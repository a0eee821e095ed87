// Transpose a rows x cols row-major int matrix into cols x rows: one
// work-group of TS x ROWS work-items per TS x TS tile, staged in local memory
// padded to TS + 1 columns so that the column-wise reads hit distinct banks.
// Launch: global (ceil(cols / TS) * TS, ceil(rows / TS) * ROWS), local (TS, ROWS).
#define TS 32
#define ROWS 8

__kernel __attribute__((reqd_work_group_size(TS, ROWS, 1)))
void transpose(__global const int *restrict in, __global int *restrict out, const int rows, const int cols)
{
    __local int tile[TS][TS + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col0 = get_group_id(0) * TS, row0 = get_group_id(1) * TS;
    for (int k = 0; k < TS; k += ROWS) {
        const int r = row0 + ty + k, c = col0 + tx;
        tile[ty + k][tx] = (r < rows && c < cols) ? in[r * cols + c] : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TS; k += ROWS) {
        const int r = col0 + ty + k, c = row0 + tx;     // row and column of the output
        if (r < cols && c < rows)
            out[r * rows + c] = tile[tx][ty + k];
    }
}
