// Area-average shrinking fed one source row at a time: memory is one row of sums per
// output row in progress plus the output, whatever the source's size.
#ifndef TIDESYNC_SHRINKER_H
#define TIDESYNC_SHRINKER_H

#include <stdint.h>
#include "ThumbnailCodecs.h"

typedef struct {
    uint32_t in_width, in_height, out_width, out_height, channels;
    uint32_t next_row;        // the next source row expected
    uint32_t pending_row;     // the output row the sums belong to, or UINT32_MAX for none
    uint64_t *sums;           // out_width * channels
    uint32_t *counts;         // out_width: source pixels summed into each column
    uint32_t *column_of;      // in_width: the output column of each source column
    uint8_t *out;             // out_width * out_height * channels
} tsc_shrinker;

/// Allocates for shrinking `in` to `out` (each no larger than `in`); TSC_NO_MEMORY on failure.
int tsc_shrinker_start(tsc_shrinker *shrinker, uint32_t in_width, uint32_t in_height,
                       uint32_t out_width, uint32_t out_height, uint32_t channels);

/// Adds the next source row (`in_width * channels` bytes).
void tsc_shrinker_push(tsc_shrinker *shrinker, const uint8_t *row);

/// After the last row: moves the output into `image`, or TSC_CORRUPT when rows are missing.
int tsc_shrinker_finish(tsc_shrinker *shrinker, tsc_image *image);

/// Frees whatever the shrinker still holds.
void tsc_shrinker_release(tsc_shrinker *shrinker);

#endif
