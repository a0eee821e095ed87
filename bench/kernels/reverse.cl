// Reverse n ints through local memory: work-group g fills the output tile
// [g * TILE, g * TILE + TILE) from the input tile ending at n - g * TILE.
// Reads and writes are both coalesced; the reversal happens in local memory.
// Launch: work-groups of BS work-items (grid-stride over tiles).
#define BS 256
#define ITEMS 4
#define TILE (BS * ITEMS)

__kernel __attribute__((reqd_work_group_size(BS, 1, 1)))
void reverse(__global const int *restrict in, __global int *restrict out, const int n)
{
    __local int tile[TILE];
    const int lid = get_local_id(0);
    for (int base = get_group_id(0) * TILE; base < n; base += get_num_groups(0) * TILE) {
        const int src = n - base - TILE;          // input index of tile[0]; negative in the last tile
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            tile[j] = src + j >= 0 ? in[src + j] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < ITEMS; k++) {
            const int j = k * BS + lid;
            if (base + j < n)
                out[base + j] = tile[TILE - 1 - j];   // = in[n - 1 - (base + j)]
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
