// libjpeg's default error_exit calls exit(): the error manager here jumps back instead.
//
// Data cut short: libjpeg pads missing entropy data with zeros and still returns every
// scanline, so "every row was read" does not mean "every row is real". When the data ends,
// libjpeg warns JWRN_JPEG_EOF and makes up an EOI marker; when the Huffman decoder then needs
// bits past it, it warns JWRN_HIT_MARKER. The second is fatal here (those rows would be
// grey); the first alone means the EOI marker is all that is missing, which many cameras'
// previews and cut downloads of whole images show, and the image decodes (see
// `whole_without_end` for the cases where that cannot be told).
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>
#include "ThumbnailCodecs.h"
#include "Shrinker.h"

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} jpeg_failure;

/// Everything that changes after setjmp lives here, on the heap, so a longjmp leaves it valid.
/// `info.client_data` points back at the job.
typedef struct {
    struct jpeg_decompress_struct info;
    jpeg_failure failure;
    struct jpeg_progress_mgr progress;
    uint32_t max_scans;
    /// The data ended before an EOI marker (libjpeg warned JWRN_JPEG_EOF).
    int hit_end;
    tsc_shrinker shrinker;
    JSAMPLE *row;
    uint8_t *rgb;
} jpeg_job;

static void fail_exit(j_common_ptr info) {
    jpeg_failure *failure = (jpeg_failure *)info->err;
    (*info->err->format_message)(info, failure->message);
    longjmp(failure->jump, 1);
}

/// Warnings (level -1) are counted, except the two that mean the data ended (see above).
static void judge_warning(j_common_ptr info, int level) {
    if (level >= 0) return;
    jpeg_job *job = info->client_data;
    if (info->err->msg_code == JWRN_HIT_MARKER) fail_exit(info);
    if (info->err->msg_code == JWRN_JPEG_EOF) job->hit_end = 1;
    info->err->num_warnings++;
}

static void say_nothing(j_common_ptr info) { (void)info; }

/// libjpeg's progress hook, called while scans are read: every scan of a progressive JPEG is
/// a pass over all its coefficients, so a file of thousands of tiny scans would take minutes.
static void limit_scans(j_common_ptr info) {
    jpeg_job *job = info->client_data;
    if (job->max_scans == 0 || (uint32_t)job->info.input_scan_number <= job->max_scans) return;
    snprintf(job->failure.message, sizeof job->failure.message, "more than %u scans", (unsigned int)job->max_scans);
    info->err->msg_code = 0;
    longjmp(job->failure.jump, 1);
}

/// After every scanline was read from data that ended without EOI: whether the image is whole.
/// A single scan cut short would have warned JWRN_HIT_MARKER; a progressive JPEG cut between
/// scans is whole enough when every coefficient of every component came at some precision
/// (only refinement scans missing). A multi-scan sequential JPEG cut between scans, or an
/// arithmetic-coded one (which pads with zeros without a warning), cannot be told from a
/// whole one: refused.
static int whole_without_end(struct jpeg_decompress_struct *info) {
    if (info->arith_code) return 0;
    if (!jpeg_has_multiple_scans(info)) return 1;
    if (!info->progressive_mode || !info->coef_bits) return 0;
    for (int component = 0; component < info->num_components; component++) {
        for (int coefficient = 0; coefficient < DCTSIZE2; coefficient++) {
            if (info->coef_bits[component][coefficient] < 0) return 0;
        }
    }
    return 1;
}

/// The smallest DCT scale (n/8) whose output still covers `want_width` x `want_height`.
static unsigned int scale_eighths(uint32_t width, uint32_t height, uint32_t want_width, uint32_t want_height) {
    for (unsigned int eighths = 1; eighths < 8; eighths++) {
        uint64_t scaled_width = ((uint64_t)width * eighths + 7) / 8;
        uint64_t scaled_height = ((uint64_t)height * eighths + 7) / 8;
        if (scaled_width >= want_width && scaled_height >= want_height) return eighths;
    }
    return 8;
}

/// Converts one CMYK row to RGB; Adobe's files store the inks inverted.
static void cmyk_to_rgb(const JSAMPLE *cmyk, uint8_t *rgb, uint32_t width, int inverted) {
    for (uint32_t x = 0; x < width; x++) {
        unsigned int c = cmyk[4 * x], m = cmyk[4 * x + 1], y = cmyk[4 * x + 2], k = cmyk[4 * x + 3];
        if (!inverted) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
        rgb[3 * x] = (uint8_t)(c * k / 255);
        rgb[3 * x + 1] = (uint8_t)(m * k / 255);
        rgb[3 * x + 2] = (uint8_t)(y * k / 255);
    }
}

/// Checks the header against the limits and sets the output colour space and scale.
static int prepare(jpeg_job *job, const tsc_limits *limits, tsc_image *image, uint32_t *want_width, uint32_t *want_height) {
    struct jpeg_decompress_struct *info = &job->info;
    image->source_width = info->image_width;
    image->source_height = info->image_height;
    if (info->image_width == 0 || info->image_height == 0) return TSC_CORRUPT;
    if (info->image_width > limits->max_side || info->image_height > limits->max_side ||
        (uint64_t)info->image_width * info->image_height > limits->max_pixels) return TSC_TOO_LARGE;
    switch (info->jpeg_color_space) {
    case JCS_CMYK: case JCS_YCCK: info->out_color_space = JCS_CMYK; break;
    case JCS_GRAYSCALE: case JCS_RGB: case JCS_YCbCr: info->out_color_space = JCS_RGB; break;
    default:
        snprintf(image->message, sizeof image->message, "JPEG colour space %d is not read", (int)info->jpeg_color_space);
        return TSC_UNSUPPORTED;
    }
    tsc_fit(info->image_width, info->image_height, limits->fit, want_width, want_height);
    info->scale_num = scale_eighths(info->image_width, info->image_height, *want_width, *want_height);
    info->scale_denom = 8;
    info->dct_method = JDCT_ISLOW;
    jpeg_calc_output_dimensions(info);
    return TSC_OK;
}

/// Decodes every scanline into the shrinker. Called with the jump already set.
static int read_rows(jpeg_job *job, uint32_t want_width, uint32_t want_height) {
    struct jpeg_decompress_struct *info = &job->info;
    jpeg_start_decompress(info);
    uint32_t width = info->output_width, height = info->output_height;
    int cmyk = info->out_color_space == JCS_CMYK;
    if (info->output_components != (cmyk ? 4 : 3)) return TSC_UNSUPPORTED;
    int status = tsc_shrinker_start(&job->shrinker, width, height, want_width, want_height, 3);
    if (status != TSC_OK) return status;
    job->row = malloc((size_t)width * info->output_components);
    job->rgb = cmyk ? malloc((size_t)width * 3) : NULL;
    if (!job->row || (cmyk && !job->rgb)) return TSC_NO_MEMORY;
    while (info->output_scanline < height) {
        JSAMPROW rows[1] = { job->row };
        if (jpeg_read_scanlines(info, rows, 1) != 1) return TSC_CORRUPT;
        if (cmyk) cmyk_to_rgb(job->row, job->rgb, width, info->saw_Adobe_marker);
        tsc_shrinker_push(&job->shrinker, cmyk ? job->rgb : job->row);
    }
    return TSC_OK;
}

static int decode(jpeg_job *job, const uint8_t *data, size_t size, const tsc_limits *limits, tsc_image *image) {
    struct jpeg_decompress_struct *info = &job->info;
    if (setjmp(job->failure.jump)) {
        if (job->failure.base.msg_code == JERR_NO_BACKING_STORE) {
            snprintf(image->message, sizeof image->message, "a progressive JPEG this large needs more than %zu MiB",
                     limits->max_memory >> 20);
            return TSC_UNSUPPORTED;
        }
        snprintf(image->message, sizeof image->message, "%s", job->failure.message);
        return TSC_CORRUPT;
    }
    jpeg_create_decompress(info);
    info->client_data = job;
    info->progress = &job->progress;
    // libjpeg-turbo has no backing store: past this, realizing the coefficient arrays fails
    // with JERR_NO_BACKING_STORE instead of allocating.
    info->mem->max_memory_to_use = (long)limits->max_memory;
    jpeg_mem_src(info, data, (unsigned long)size);
    jpeg_read_header(info, TRUE);
    uint32_t want_width = 0, want_height = 0;
    int status = prepare(job, limits, image, &want_width, &want_height);
    if (status != TSC_OK) return status;
    status = read_rows(job, want_width, want_height);
    if (status != TSC_OK) return status;
    if (job->hit_end && !whole_without_end(info)) {
        snprintf(image->message, sizeof image->message, "Premature end of JPEG file");
        return TSC_CORRUPT;
    }
    status = tsc_shrinker_finish(&job->shrinker, image);
    if (status != TSC_OK) return status;
    // Every scanline is in: what follows (an EOI marker, or nothing) is not read.
    jpeg_abort_decompress(info);
    return TSC_OK;
}

int tsc_jpeg_decode(const uint8_t *data, size_t size, const tsc_limits *limits, tsc_image *image) {
    memset(image, 0, sizeof *image);
    jpeg_job *job = calloc(1, sizeof *job);
    if (!job) return TSC_NO_MEMORY;
    job->info.err = jpeg_std_error(&job->failure.base);
    job->failure.base.error_exit = fail_exit;
    job->failure.base.emit_message = judge_warning;
    job->failure.base.output_message = say_nothing;
    job->progress.progress_monitor = limit_scans;
    job->max_scans = limits->max_scans;
    int status = decode(job, data, size, limits, image);
    if (status != TSC_OK) {
        tsc_free(image->pixels);
        image->pixels = NULL;
    }
    jpeg_destroy_decompress(&job->info);
    tsc_shrinker_release(&job->shrinker);
    free(job->row);
    free(job->rgb);
    free(job);
    return status;
}
