// libpng reports errors by longjmp to png_jmpbuf: the handlers here keep the message and
// jump; warnings are dropped. State that changes after setjmp lives on the heap.
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include "ThumbnailCodecs.h"
#include "Shrinker.h"

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t position;
    char message[200];
    tsc_shrinker shrinker;
    uint8_t *row;
    uint8_t *whole;
    png_structp png;
    png_infop info;
} png_read_job;

static void keep_error(png_structp png, png_const_charp message) {
    char *target = png_get_error_ptr(png);
    snprintf(target, 200, "%s", message);
    png_longjmp(png, 1);
}

static void drop_warning(png_structp png, png_const_charp message) { (void)png; (void)message; }

static void read_memory(png_structp png, png_bytep target, size_t length) {
    png_read_job *job = png_get_io_ptr(png);
    if (length > job->size - job->position) png_error(png, "PNG data cut short");
    memcpy(target, job->data + job->position, length);
    job->position += length;
}

/// Checks the header and sets the transformations to 8-bit RGB or RGBA.
static int prepare_read(png_read_job *job, const tsc_limits *limits, tsc_image *image) {
    png_structp png = job->png;
    png_infop info = job->info;
    png_read_info(png, info);
    uint32_t width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    image->source_width = width;
    image->source_height = height;
    if (width > limits->max_side || height > limits->max_side ||
        (uint64_t)width * height > limits->max_pixels) return TSC_TOO_LARGE;
    int color = png_get_color_type(png, info);
    png_set_expand(png);
    png_set_strip_16(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info);
    if (png_get_bit_depth(png, info) != 8 || (channels != 3 && channels != 4)) {
        snprintf(image->message, sizeof image->message, "PNG of %d channels is not read", channels);
        return TSC_UNSUPPORTED;
    }
    return TSC_OK;
}

/// An interlaced PNG's passes each cover the whole image: it is read whole, within
/// `max_memory`, then shrunk.
static int read_interlaced(png_read_job *job, uint32_t width, uint32_t height, uint32_t channels,
                           const tsc_limits *limits, tsc_image *image) {
    uint64_t bytes = (uint64_t)width * height * channels;
    if (bytes > limits->max_memory) {
        snprintf(image->message, sizeof image->message, "an interlaced PNG this large is not read");
        return TSC_UNSUPPORTED;
    }
    job->whole = malloc((size_t)bytes);
    png_bytep *rows = malloc(sizeof(png_bytep) * height);
    if (!job->whole || !rows) { free(rows); return TSC_NO_MEMORY; }
    for (uint32_t y = 0; y < height; y++) rows[y] = job->whole + (size_t)y * width * channels;
    // png_read_image jumps on error: `rows` is the job's until it returns.
    job->row = (uint8_t *)rows;
    png_read_image(job->png, rows);
    for (uint32_t y = 0; y < height; y++) tsc_shrinker_push(&job->shrinker, rows[y]);
    return TSC_OK;
}

static int read_png(png_read_job *job, const tsc_limits *limits, tsc_image *image) {
    if (setjmp(png_jmpbuf(job->png))) {
        snprintf(image->message, sizeof image->message, "%s", job->message);
        return TSC_CORRUPT;
    }
    png_set_user_limits(job->png, 1000000, 1000000);
    png_set_chunk_malloc_max(job->png, 8 << 20);
    png_set_read_fn(job->png, job, read_memory);
    int status = prepare_read(job, limits, image);
    if (status != TSC_OK) return status;
    uint32_t width = image->source_width, height = image->source_height;
    uint32_t channels = png_get_channels(job->png, job->info), want_width, want_height;
    tsc_fit(width, height, limits->fit, &want_width, &want_height);
    status = tsc_shrinker_start(&job->shrinker, width, height, want_width, want_height, channels);
    if (status != TSC_OK) return status;
    if (png_get_interlace_type(job->png, job->info) != PNG_INTERLACE_NONE) {
        status = read_interlaced(job, width, height, channels, limits, image);
        if (status != TSC_OK) return status;
    } else {
        job->row = malloc((size_t)width * channels);
        if (!job->row) return TSC_NO_MEMORY;
        for (uint32_t y = 0; y < height; y++) {
            png_read_row(job->png, job->row, NULL);
            tsc_shrinker_push(&job->shrinker, job->row);
        }
    }
    return tsc_shrinker_finish(&job->shrinker, image);
}

int tsc_png_decode(const uint8_t *data, size_t size, const tsc_limits *limits, tsc_image *image) {
    memset(image, 0, sizeof *image);
    if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
        snprintf(image->message, sizeof image->message, "not a PNG signature");
        return TSC_CORRUPT;
    }
    png_read_job *job = calloc(1, sizeof *job);
    if (!job) return TSC_NO_MEMORY;
    job->data = data;
    job->size = size;
    job->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, job->message, keep_error, drop_warning);
    job->info = job->png ? png_create_info_struct(job->png) : NULL;
    int status = job->info ? read_png(job, limits, image) : TSC_NO_MEMORY;
    if (status != TSC_OK) {
        free(image->pixels);
        image->pixels = NULL;
    }
    png_destroy_read_struct(job->png ? &job->png : NULL, job->info ? &job->info : NULL, NULL);
    tsc_shrinker_release(&job->shrinker);
    free(job->row);
    free(job->whole);
    free(job);
    return status;
}

typedef struct {
    tsc_buffer *out;
    png_structp png;
    png_infop info;
    png_textp texts;
} png_write_job;

static void write_memory(png_structp png, png_bytep bytes, size_t length) {
    tsc_buffer *out = png_get_io_ptr(png);
    if (length > out->capacity - out->count) {
        size_t capacity = out->capacity ? out->capacity : 65536;
        while (length > capacity - out->count) {
            if (capacity > SIZE_MAX / 2) png_error(png, "PNG output too large");
            capacity *= 2;
        }
        uint8_t *grown = realloc(out->bytes, capacity);
        if (!grown) png_error(png, "out of memory for the PNG output");
        out->bytes = grown;
        out->capacity = capacity;
    }
    memcpy(out->bytes + out->count, bytes, length);
    out->count += length;
}

static void flush_nothing(png_structp png) { (void)png; }

static int write_png(png_write_job *job, const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t channels,
                     const char *const *keys, const char *const *values, size_t text_count) {
    if (setjmp(png_jmpbuf(job->png))) return TSC_CORRUPT;
    png_set_write_fn(job->png, job->out, write_memory, flush_nothing);
    png_set_IHDR(job->png, job->info, width, height, 8,
                 channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    for (size_t index = 0; index < text_count; index++) {
        job->texts[index].compression = PNG_TEXT_COMPRESSION_NONE;
        job->texts[index].key = (png_charp)keys[index];
        job->texts[index].text = (png_charp)values[index];
        job->texts[index].text_length = strlen(values[index]);
    }
    if (text_count > 0) png_set_text(job->png, job->info, job->texts, (int)text_count);
    png_write_info(job->png, job->info);
    for (uint32_t y = 0; y < height; y++) {
        png_write_row(job->png, pixels + (size_t)y * width * channels);
    }
    png_write_end(job->png, NULL);
    return TSC_OK;
}

int tsc_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t channels,
                   const char *const *keys, const char *const *values, size_t text_count,
                   tsc_buffer *out) {
    memset(out, 0, sizeof *out);
    if ((channels != 3 && channels != 4) || width == 0 || height == 0 || text_count > 64) return TSC_UNSUPPORTED;
    png_write_job *job = calloc(1, sizeof *job);
    if (!job) return TSC_NO_MEMORY;
    job->out = out;
    job->texts = calloc(text_count ? text_count : 1, sizeof(png_text));
    job->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, out->message, keep_error, drop_warning);
    job->info = job->png ? png_create_info_struct(job->png) : NULL;
    int status = job->info && job->texts
        ? write_png(job, pixels, width, height, channels, keys, values, text_count) : TSC_NO_MEMORY;
    if (status != TSC_OK) {
        free(out->bytes);
        out->bytes = NULL;
        out->count = 0;
    }
    png_destroy_write_struct(job->png ? &job->png : NULL, job->info ? &job->info : NULL);
    free(job->texts);
    free(job);
    return status;
}
