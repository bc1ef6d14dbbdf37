// Thin glue over libjpeg(-turbo) and libpng for the Thumbnails module: what Swift cannot do
// itself, namely the libraries' setjmp/longjmp error handling. Every function returns a
// status instead of exiting or jumping; no function prints anything.
//
// Memory contract: a decoder allocates only after it has read the header and checked the
// dimensions against its limits, and then memory follows the output size (the image is
// shrunk by area averaging while its rows are read), not the image's size; the exceptions
// are a progressive or multi-scan JPEG (libjpeg keeps all its coefficients, whatever the DCT
// scale: refused as unsupported past `max_memory`) and an interlaced PNG (read whole, refused
// when it would take more than `max_memory`). CPU time is bounded too: a JPEG of more scans
// than `max_scans` is refused, as each scan is a pass over the whole image.
#ifndef TIDESYNC_THUMBNAIL_CODECS_H
#define TIDESYNC_THUMBNAIL_CODECS_H

#include <stddef.h>
#include <stdint.h>

/// What a codec function reports.
typedef enum {
    TSC_OK = 0,
    /// The data is not a valid image of the kind; `message` says what the library found.
    TSC_CORRUPT = 1,
    /// The header's dimensions pass the limits; `source_width` and `source_height` hold them.
    TSC_TOO_LARGE = 2,
    /// A valid image this glue does not read (a colour space, a bit depth); see `message`.
    TSC_UNSUPPORTED = 3,
    /// An allocation failed.
    TSC_NO_MEMORY = 4,
} tsc_status;

/// What a decoder may spend.
typedef struct {
    /// The most pixels a side may have, and the most pixels in all, by the header.
    uint32_t max_side;
    uint64_t max_pixels;
    /// The longest side of the decoded result: larger images are shrunk to fit, keeping their
    /// aspect ratio; smaller ones are never enlarged. 0 keeps the image's own size.
    uint32_t fit;
    /// The most bytes the library itself may allocate (libjpeg's memory limit; the full
    /// buffer of an interlaced PNG).
    size_t max_memory;
    /// The most scans a JPEG may have (libjpeg-turbo's advice for untrusted input, as
    /// `djpeg -maxscans`); 0 for no limit.
    uint32_t max_scans;
} tsc_limits;

/// A decoded image: 8-bit samples, rows top to bottom, no padding.
typedef struct {
    /// `width * height * channels` bytes from malloc, or NULL; release with `tsc_free`.
    uint8_t *pixels;
    uint32_t width;
    uint32_t height;
    /// 3 (RGB) or 4 (RGBA, not premultiplied).
    uint32_t channels;
    /// The image's own dimensions, by its header.
    uint32_t source_width;
    uint32_t source_height;
    /// Why a call failed, NUL-terminated; empty on success.
    char message[200];
} tsc_image;

/// Bytes written by the PNG encoder.
typedef struct {
    /// From malloc, or NULL; release with `tsc_free`.
    uint8_t *bytes;
    size_t count;
    size_t capacity;
    char message[200];
} tsc_buffer;

/// Decodes the JPEG in `data` to RGB (grayscale and CMYK converted), using libjpeg's DCT
/// scaling to decode at the smallest size still at least `limits->fit`. A file cut short is
/// an error, not an image with a grey bottom; one that lacks only its EOI marker (every
/// coefficient present) decodes.
int tsc_jpeg_decode(const uint8_t *data, size_t size, const tsc_limits *limits, tsc_image *image);

/// Decodes the PNG in `data` to RGB or RGBA (palette, low bit depths and transparency
/// expanded, 16 bits stripped to 8, gray made RGB).
int tsc_png_decode(const uint8_t *data, size_t size, const tsc_limits *limits, tsc_image *image);

/// Encodes `pixels` (`channels` 3 or 4) as a PNG with `text_count` uncompressed tEXt chunks,
/// `keys[i]` = `values[i]` (keys 1-79 Latin-1 characters), written before the image data.
int tsc_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t channels,
                   const char *const *keys, const char *const *values, size_t text_count,
                   tsc_buffer *out);

/// The size that fits `width` x `height` into `fit` on the long side (rounded, at least 1),
/// never larger; 0 keeps the size. Every decoder fits its output with it.
void tsc_fit(uint32_t width, uint32_t height, uint32_t fit, uint32_t *out_width, uint32_t *out_height);

/// Shrinks `pixels` (`width * height * channels` bytes, rows top to bottom) by area averaging
/// to `out_width` x `out_height` (each clamped to the input's), into `image`'s pixels, width,
/// height and channels; the source size fields are left for the caller.
int tsc_shrink(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t channels,
               uint32_t out_width, uint32_t out_height, tsc_image *image);

/// Releases memory returned by this module.
void tsc_free(void *pointer);

#endif
