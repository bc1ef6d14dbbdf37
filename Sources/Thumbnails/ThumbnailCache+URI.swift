// File URIs exactly as GLib's g_filename_to_uri writes them, since the cache's file name is
// the MD5 of that string and GLib checks Thumb::URI byte for byte. Pure.

extension ThumbnailCache {
    /// GLib's characters left as they are in a path (gconvert.c's table for UNSAFE_PATH): the
    /// unreserved ones and !$&'()*+,=:@/ — notably not ';', which GLib escapes.
    private static let unescaped: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,=:@/".utf8))

    /// The file URI of the absolute `path`: "file://" and the path's UTF-8 bytes, each one
    /// outside GLib's allowed set written as %XX in uppercase hex.
    public static func uri(forPath path: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var bytes = Array("file://".utf8)
        for byte in path.utf8 {
            if unescaped.contains(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
