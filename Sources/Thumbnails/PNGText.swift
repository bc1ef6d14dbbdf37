// A PNG's tEXt chunks, read the way GLib's thumbnail-verify.c reads them: chunk by chunk
// up to IEND, uncompressed tEXt only (zTXt and iTXt are not looked at). Pure.

/// Reads the tEXt chunks of a PNG.
public enum PNGText {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Each tEXt chunk's key and value bytes (Latin-1 as stored), in file order; nil when
    /// the bytes are not a PNG or a chunk runs past their end.
    public static func entries(in png: [UInt8]) -> [(key: String, value: [UInt8])]? {
        guard png.starts(with: signature) else { return nil }
        var entries: [(key: String, value: [UInt8])] = [], position = signature.count
        while position + 8 <= png.count {
            let length = png[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = Array(png[position + 4..<position + 8])
            let dataStart = position + 8
            guard length <= png.count - dataStart, png.count - dataStart - length >= 4 else { return nil }
            if type == Array("IEND".utf8) { return entries }
            if type == Array("tEXt".utf8), let separator = png[dataStart..<dataStart + length].firstIndex(of: 0) {
                entries.append((String(decoding: png[dataStart..<separator], as: UTF8.self),
                                Array(png[separator + 1..<dataStart + length])))
            }
            position = dataStart + length + 4
        }
        return nil
    }

    /// The value of the first tEXt chunk named `key`.
    static func value(_ key: String, in entries: [(key: String, value: [UInt8])]) -> [UInt8]? {
        entries.first { $0.key == key }?.value
    }
}
