/// Why no thumbnail was made. Every case means "no thumbnail for this version of the file":
/// the caller records it and does not retry until the file changes, except `cache`, which is
/// about the cache folder (disk full, permissions) and may clear.
public enum ThumbnailError: Error, Equatable, CustomStringConvertible {
    /// The bytes are not an image of a kind that is read here.
    case notAnImage
    /// The header claims more pixels than a thumbnail is made from.
    case tooLarge(width: Int, height: Int)
    /// The image is damaged or cut short; the codec's own words.
    case corrupt(String)
    /// A valid image this module does not read (a colour space, an interlaced giant).
    case unsupported(String)
    /// Memory for the decoded image could not be had.
    case outOfMemory
    /// The cache could not be written: the path and the system's reason.
    case cache(String)

    /// One sentence for the log and the user.
    public var description: String {
        switch self {
        case .notAnImage: "not a JPEG or PNG image"
        case .tooLarge(let width, let height): "image of \(width)x\(height) pixels is too large to thumbnail"
        case .corrupt(let reason): "damaged image: \(reason)"
        case .unsupported(let reason): "image not supported: \(reason)"
        case .outOfMemory: "out of memory while decoding the image"
        case .cache(let reason): "thumbnail cache: \(reason)"
        }
    }
}
