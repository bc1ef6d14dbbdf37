#include "Shrinker.h"
#include <stdlib.h>
#include <string.h>

void tsc_fit(uint32_t width, uint32_t height, uint32_t fit, uint32_t *out_width, uint32_t *out_height) {
    *out_width = width;
    *out_height = height;
    if (fit == 0 || (width <= fit && height <= fit)) return;
    if (width >= height) {
        uint64_t scaled = ((uint64_t)height * fit + width / 2) / width;
        *out_width = fit;
        *out_height = scaled < 1 ? 1 : (uint32_t)scaled;
    } else {
        uint64_t scaled = ((uint64_t)width * fit + height / 2) / height;
        *out_height = fit;
        *out_width = scaled < 1 ? 1 : (uint32_t)scaled;
    }
}

int tsc_shrinker_start(tsc_shrinker *shrinker, uint32_t in_width, uint32_t in_height,
                       uint32_t out_width, uint32_t out_height, uint32_t channels) {
    memset(shrinker, 0, sizeof *shrinker);
    if (out_width > in_width) out_width = in_width;
    if (out_height > in_height) out_height = in_height;
    if (out_width == 0 || out_height == 0) return TSC_CORRUPT;
    shrinker->in_width = in_width;
    shrinker->in_height = in_height;
    shrinker->out_width = out_width;
    shrinker->out_height = out_height;
    shrinker->channels = channels;
    shrinker->pending_row = UINT32_MAX;
    shrinker->sums = calloc((size_t)out_width * channels, sizeof(uint64_t));
    shrinker->counts = calloc(out_width, sizeof(uint32_t));
    shrinker->column_of = malloc((size_t)in_width * sizeof(uint32_t));
    shrinker->out = malloc((size_t)out_width * out_height * channels);
    if (!shrinker->sums || !shrinker->counts || !shrinker->column_of || !shrinker->out) {
        tsc_shrinker_release(shrinker);
        return TSC_NO_MEMORY;
    }
    // out <= in, so floor(x * out / in) reaches every output column.
    for (uint32_t x = 0; x < in_width; x++) {
        shrinker->column_of[x] = (uint32_t)((uint64_t)x * out_width / in_width);
    }
    return TSC_OK;
}

/// Writes the averaged pending row into the output and clears the sums.
static void flush(tsc_shrinker *shrinker) {
    if (shrinker->pending_row == UINT32_MAX) return;
    uint32_t channels = shrinker->channels;
    uint8_t *target = shrinker->out + (size_t)shrinker->pending_row * shrinker->out_width * channels;
    for (uint32_t x = 0; x < shrinker->out_width; x++) {
        uint64_t count = shrinker->counts[x] ? shrinker->counts[x] : 1;
        for (uint32_t c = 0; c < channels; c++) {
            target[(size_t)x * channels + c] = (uint8_t)((shrinker->sums[(size_t)x * channels + c] + count / 2) / count);
        }
    }
    memset(shrinker->sums, 0, (size_t)shrinker->out_width * channels * sizeof(uint64_t));
    memset(shrinker->counts, 0, (size_t)shrinker->out_width * sizeof(uint32_t));
    shrinker->pending_row = UINT32_MAX;
}

void tsc_shrinker_push(tsc_shrinker *shrinker, const uint8_t *row) {
    if (shrinker->next_row >= shrinker->in_height) return;
    uint32_t target_row = (uint32_t)((uint64_t)shrinker->next_row * shrinker->out_height / shrinker->in_height);
    if (target_row != shrinker->pending_row) {
        flush(shrinker);
        shrinker->pending_row = target_row;
    }
    uint32_t channels = shrinker->channels;
    for (uint32_t x = 0; x < shrinker->in_width; x++) {
        uint32_t column = shrinker->column_of[x];
        uint64_t *sum = shrinker->sums + (size_t)column * channels;
        const uint8_t *pixel = row + (size_t)x * channels;
        for (uint32_t c = 0; c < channels; c++) sum[c] += pixel[c];
        shrinker->counts[column]++;
    }
    shrinker->next_row++;
}

int tsc_shrinker_finish(tsc_shrinker *shrinker, tsc_image *image) {
    if (shrinker->next_row != shrinker->in_height) return TSC_CORRUPT;
    flush(shrinker);
    image->pixels = shrinker->out;
    image->width = shrinker->out_width;
    image->height = shrinker->out_height;
    image->channels = shrinker->channels;
    shrinker->out = NULL;
    tsc_shrinker_release(shrinker);
    return TSC_OK;
}

void tsc_shrinker_release(tsc_shrinker *shrinker) {
    free(shrinker->sums);
    free(shrinker->counts);
    free(shrinker->column_of);
    free(shrinker->out);
    shrinker->sums = NULL;
    shrinker->counts = NULL;
    shrinker->column_of = NULL;
    shrinker->out = NULL;
}

int tsc_shrink(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t channels,
               uint32_t out_width, uint32_t out_height, tsc_image *image) {
    memset(image, 0, sizeof *image);
    tsc_shrinker shrinker;
    int status = tsc_shrinker_start(&shrinker, width, height, out_width, out_height, channels);
    if (status != TSC_OK) return status;
    for (uint32_t y = 0; y < height; y++) tsc_shrinker_push(&shrinker, pixels + (size_t)y * width * channels);
    return tsc_shrinker_finish(&shrinker, image);
}

void tsc_free(void *pointer) { free(pointer); }
