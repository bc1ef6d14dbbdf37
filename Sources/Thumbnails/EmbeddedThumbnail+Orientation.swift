// The Orientation tag of IFD0, read with the same bounded parser as the previews.

extension EmbeddedThumbnail {
    /// The EXIF orientation in `prefix`, a file's first bytes: tag 0x0112 of IFD0 in a JPEG's
    /// APP1 Exif segment, or of a TIFF or TIFF-based raw's own IFD0. It applies to the main
    /// image and to the previews it carries alike. `.up` when there is none, it lies past the
    /// prefix, or the structure or the value is invalid.
    public static func orientation(in prefix: [UInt8]) -> ExifOrientation {
        let window = ByteWindow(prefix, fileSize: prefix.count)
        do throws(ParseStop) {
            guard let base = try tiffBase(in: window) else { return .up }
            let tiff = try TIFFStructure(window, base: base)
            let (entries, _) = try tiff.directory(at: tiff.firstIFD)
            guard let entry = entries.first(where: { $0.tag == 0x0112 }), entry.count == 1,
                  let value = try tiff.values(of: entry).first else { return .up }
            return ExifOrientation(rawValue: value) ?? .up
        } catch {
            return .up
        }
    }
}
