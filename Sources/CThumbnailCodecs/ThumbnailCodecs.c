// libjpeg(-turbo) and libpng behind status codes (see ThumbnailCodecs.h). Both libraries
// report errors by longjmp (libjpeg's default handler even calls exit()); each entry point
// sets its jump target, and every allocation it made is released on either path.
#include "ThumbnailCodecs.h"

#include <setjmp.h>
#include <stdio.h>  // before jpeglib.h, which uses FILE
#include <jpeglib.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

void tsc_free(void *pointer) { free(pointer); }

static void set_message(char *message, const char *text) {
    snprintf(message, 200, "%s", text);
}

// MARK: Shrinking while rows are read

/// Area averaging from `source` rows into an `out_w` x `out_h` image, one source row at a
/// time: memory is the output plus one row of sums.
typedef struct {
    uint32_t in_w, in_h, out_w, out_h, channels;
    uint32_t next_row;   // the source row expected next
    uint32_t out_row;    // the output row being summed
    uint32_t rows_in;    // source rows summed into it
    uint32_t *sums;      // out_w * channels
    uint32_t *columns;   // per output column: how many source columns fall in it
    uint8_t *pixels;     // out_w * out_h * channels
} shrinker;

static void fit_size(uint32_t w, uint32_t h, uint32_t fit, uint32_t *out_w, uint32_t *out_h) {
    if (fit == 0 || (w <= fit && h <= fit)) { *out_w = w; *out_h = h; return; }
    if (w >= h) {
        *out_w = fit;
        *out_h = (uint32_t)(((uint64_t)h * fit + w / 2) / w);
    } else {
        *out_h = fit;
        *out_w = (uint32_t)(((uint64_t)w * fit + h / 2) / h);
    }
    if (*out_w == 0) *out_w = 1;
    if (*out_h == 0) *out_h = 1;
}

static int shrinker_init(shrinker *s, uint32_t w, uint32_t h, uint32_t channels, uint32_t fit) {
    memset(s, 0, sizeof *s);
    s->in_w = w; s->in_h = h; s->channels = channels;
    fit_size(w, h, fit, &s->out_w, &s->out_h);
    s->sums = calloc((size_t)s->out_w * channels, sizeof(uint32_t));
    s->columns = calloc(s->out_w, sizeof(uint32_t));
    s->pixels = malloc((size_t)s->out_w * s->out_h * channels);
    if (!s->sums || !s->columns || !s->pixels) return 0;
    for (uint32_t x = 0; x < w; x++) s->columns[(uint64_t)x * s->out_w / w]++;
    return 1;
}

static void shrinker_release(shrinker *s, int keep_pixels) {
    free(s->sums);
    free(s->columns);
    if (!keep_pixels) free(s->pixels);
    s->sums = NULL; s->columns = NULL;
    if (!keep_pixels) s->pixels = NULL;
}

static void shrinker_emit(shrinker *s) {
    uint8_t *row = s->pixels + (size_t)s->out_row * s->out_w * s->channels;
    for (uint32_t x = 0; x < s->out_w; x++) {
        uint32_t count = s->columns[x] * s->rows_in;
        for (uint32_t c = 0; c < s->channels; c++) {
            size_t i = (size_t)x * s->channels + c;
            row[i] = count ? (uint8_t)((s->sums[i] + count / 2) / count) : 0;
            s->sums[i] = 0;
        }
    }
    s->rows_in = 0;
}

static void shrinker_row(shrinker *s, const uint8_t *row) {
    uint32_t target = (uint32_t)((uint64_t)s->next_row * s->out_h / s->in_h);
    if (target != s->out_row && s->rows_in > 0) shrinker_emit(s);
    s->out_row = target;
    for (uint32_t x = 0; x < s->in_w; x++) {
        uint32_t *sum = s->sums + (size_t)((uint64_t)x * s->out_w / s->in_w) * s->channels;
        for (uint32_t c = 0; c < s->channels; c++) sum[c] += row[(size_t)x * s->channels + c];
    }
    s->rows_in++;
    s->next_row++;
    if (s->next_row == s->in_h) shrinker_emit(s);
}

static int check_limits(uint32_t w, uint32_t h, const tsc_limits *limits, tsc_image *image) {
    image->source_width = w;
    image->source_height = h;
    if (w == 0 || h == 0) { set_message(image->message, "the image has no pixels"); return TSC_CORRUPT; }
    if (w > limits->max_side || h > limits->max_side || (uint64_t)w * h > limits->max_pixels) {
        snprintf(image->message, 200, "the image is %ux%u pixels, more than thumbnails are made of", w, h);
        return TSC_TOO_LARGE;
    }
    return TSC_OK;
}

// MARK: JPEG

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
} jpeg_failure;

static void jpeg_exit(j_common_ptr cinfo) {
    jpeg_failure *failure = (jpeg_failure *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    snprintf(failure->message, 200, "%s", text);
    longjmp(failure->jump, 1);
}

/// A warning (data cut short, a corrupt entropy segment) is an error here: the decoder
/// would fill what it lacks with grey.
static void jpeg_warning(j_common_ptr cinfo, int level) {
    if (level < 0) jpeg_exit(cinfo);
}

int tsc_jpeg_decode(const uint8_t *data, size_t size, const tsc_limits *limits, tsc_image *image) {
    memset(image, 0, sizeof *image);
    struct jpeg_decompress_struct cinfo;
    jpeg_failure failure;
    shrinker shrink;
    memset(&shrink, 0, sizeof shrink);
    uint8_t *volatile row = NULL;
    volatile int status = TSC_CORRUPT;
    cinfo.err = jpeg_std_error(&failure.base);
    failure.base.error_exit = jpeg_exit;
    failure.base.emit_message = jpeg_warning;
    failure.message = image->message;
    if (setjmp(failure.jump)) {
        free(row);
        shrinker_release(&shrink, 0);
        jpeg_destroy_decompress(&cinfo);
        return status;
    }
    jpeg_create_decompress(&cinfo);
    cinfo.mem->max_memory_to_use = (long)limits->max_memory;
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    int limited = check_limits(cinfo.image_width, cinfo.image_height, limits, image);
    if (limited != TSC_OK) { jpeg_destroy_decompress(&cinfo); return limited; }
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        set_message(image->message, "CMYK JPEGs are not read");
        jpeg_destroy_decompress(&cinfo);
        return TSC_UNSUPPORTED;
    }
    cinfo.out_color_space = JCS_RGB;
    uint32_t longest = cinfo.image_width > cinfo.image_height ? cinfo.image_width : cinfo.image_height;
    unsigned denominator = 1;
    while (denominator < 8 && limits->fit > 0 && longest / (denominator * 2) >= limits->fit) denominator *= 2;
    cinfo.scale_num = 1;
    cinfo.scale_denom = denominator;
    jpeg_start_decompress(&cinfo);
    status = TSC_NO_MEMORY;
    row = malloc((size_t)cinfo.output_width * 3);
    if (!row || !shrinker_init(&shrink, cinfo.output_width, cinfo.output_height, 3, limits->fit)) longjmp(failure.jump, 1);
    status = TSC_CORRUPT;
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[1] = { row };
        if (jpeg_read_scanlines(&cinfo, rows, 1) != 1) longjmp(failure.jump, 1);
        shrinker_row(&shrink, row);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(row);
    image->pixels = shrink.pixels;
    image->width = shrink.out_w;
    image->height = shrink.out_h;
    image->channels = 3;
    shrinker_release(&shrink, 1);
    return TSC_OK;
}

// MARK: PNG

typedef struct {
    const uint8_t *data;
    size_t size, offset;
    char *message;
} png_source;

static void png_failed(png_structp png, png_const_charp text) {
    png_source *source = png_get_error_ptr(png);
    if (source && source->message) snprintf(source->message, 200, "%s", text);
    png_longjmp(png, 1);
}

static void png_warned(png_structp png, png_const_charp text) { (void)png; (void)text; }

static void png_read_memory(png_structp png, png_bytep out, png_size_t count) {
    png_source *source = png_get_io_ptr(png);
    if (count > source->size - source->offset) png_error(png, "the PNG is cut short");
    memcpy(out, source->data + source->offset, count);
    source->offset += count;
}

int tsc_png_decode(const uint8_t *data, size_t size, const tsc_limits *limits, tsc_image *image) {
    memset(image, 0, sizeof *image);
    png_source source = { data, size, 0, image->message };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_failed, png_warned);
    if (!png) return TSC_NO_MEMORY;
    png_infop info = png_create_info_struct(png);
    shrinker shrink;
    memset(&shrink, 0, sizeof shrink);
    uint8_t *volatile whole = NULL;
    png_bytep *volatile rows = NULL;
    volatile int status = TSC_CORRUPT;
    if (!info) { png_destroy_read_struct(&png, NULL, NULL); return TSC_NO_MEMORY; }
    if (setjmp(png_jmpbuf(png))) {
        free(whole);
        free(rows);
        shrinker_release(&shrink, 0);
        png_destroy_read_struct(&png, &info, NULL);
        return status;
    }
    png_set_read_fn(png, &source, png_read_memory);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_set_chunk_malloc_max(png, 8 << 20);
    png_read_info(png, info);
    uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int limited = check_limits(w, h, limits, image);
    if (limited != TSC_OK) { png_destroy_read_struct(&png, &info, NULL); return limited; }
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    uint32_t channels = png_get_channels(png, info);
    if (channels != 3 && channels != 4) {
        set_message(image->message, "the PNG's colour type is not read");
        status = TSC_UNSUPPORTED;
        png_longjmp(png, 1);
    }
    size_t stride = (size_t)w * channels;
    status = TSC_NO_MEMORY;
    if (!shrinker_init(&shrink, w, h, channels, limits->fit)) png_longjmp(png, 1);
    if (passes > 1) {
        // Interlaced: every pass touches every row, so the image is read whole first.
        if ((uint64_t)stride * h > limits->max_memory) {
            set_message(image->message, "an interlaced PNG this large is not read");
            status = TSC_TOO_LARGE;
            png_longjmp(png, 1);
        }
        whole = malloc(stride * h);
        rows = whole ? malloc(sizeof(png_bytep) * h) : NULL;
        if (!rows) png_longjmp(png, 1);
        for (uint32_t y = 0; y < h; y++) rows[y] = whole + stride * y;
        status = TSC_CORRUPT;
        png_read_image(png, rows);
        free(rows);
        rows = NULL;
        for (uint32_t y = 0; y < h; y++) shrinker_row(&shrink, whole + stride * y);
    } else {
        whole = malloc(stride);
        if (!whole) png_longjmp(png, 1);
        status = TSC_CORRUPT;
        for (uint32_t y = 0; y < h; y++) {
            png_read_row(png, whole, NULL);
            shrinker_row(&shrink, whole);
        }
    }
    free(whole);
    whole = NULL;
    png_destroy_read_struct(&png, &info, NULL);
    image->pixels = shrink.pixels;
    image->width = shrink.out_w;
    image->height = shrink.out_h;
    image->channels = channels;
    shrinker_release(&shrink, 1);
    return TSC_OK;
}

static void png_write_memory(png_structp png, png_bytep bytes, png_size_t count) {
    tsc_buffer *out = png_get_io_ptr(png);
    if (count > out->capacity - out->count) {
        size_t capacity = out->capacity ? out->capacity : 16384;
        while (capacity - out->count < count) capacity *= 2;
        uint8_t *grown = realloc(out->bytes, capacity);
        if (!grown) png_error(png, "out of memory");
        out->bytes = grown;
        out->capacity = capacity;
    }
    memcpy(out->bytes + out->count, bytes, count);
    out->count += count;
}

static void png_flush_memory(png_structp png) { (void)png; }

int tsc_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t channels,
                   const char *const *keys, const char *const *values, size_t text_count,
                   tsc_buffer *out) {
    memset(out, 0, sizeof *out);
    if ((channels != 3 && channels != 4) || width == 0 || height == 0 || text_count > 16) {
        set_message(out->message, "nothing to encode");
        return TSC_UNSUPPORTED;
    }
    png_source errors = { NULL, 0, 0, out->message };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &errors, png_failed, png_warned);
    if (!png) return TSC_NO_MEMORY;
    png_infop info = png_create_info_struct(png);
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, info ? &info : NULL);
        free(out->bytes);
        out->bytes = NULL;
        out->count = out->capacity = 0;
        return TSC_CORRUPT;
    }
    png_set_write_fn(png, out, png_write_memory, png_flush_memory);
    png_set_IHDR(png, info, width, height, 8, channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text[16];
    memset(text, 0, sizeof text);
    for (size_t i = 0; i < text_count; i++) {
        text[i].compression = PNG_TEXT_COMPRESSION_NONE;
        text[i].key = (png_charp)keys[i];
        text[i].text = (png_charp)values[i];
        text[i].text_length = strlen(values[i]);
    }
    if (text_count > 0) png_set_text(png, info, text, (int)text_count);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * width * channels);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return TSC_OK;
}
