// The EXIF Orientation tag (0x0112): how the stored pixels must be turned to stand upright.
// Pure.

/// The 8 values of EXIF's Orientation tag, named after where the stored image's top row ends
/// up once it stands upright (the names of Apple's `CGImagePropertyOrientation`).
public enum ExifOrientation: Int, Sendable, CaseIterable {
    /// Stored upright.
    case up = 1
    /// Mirrored left to right.
    case upMirrored
    /// Turned 180°.
    case down
    /// Mirrored top to bottom.
    case downMirrored
    /// Mirrored across the main diagonal (rows become columns).
    case leftMirrored
    /// Stored turned 90° counter-clockwise: shown turned 90° clockwise (a camera held with
    /// its grip up).
    case right
    /// Mirrored across the anti-diagonal.
    case rightMirrored
    /// Stored turned 90° clockwise: shown turned 90° counter-clockwise.
    case left

    /// Whether showing it upright swaps width and height.
    public var swapsSides: Bool { rawValue >= 5 }

    /// Where the stored pixel at column `x`, row `y` of a `width` x `height` image stands once
    /// upright, as the multipliers of x and y and the offset of each coordinate.
    func upright(width: Int, height: Int) -> (column: (x: Int, y: Int, offset: Int), row: (x: Int, y: Int, offset: Int)) {
        switch self {
        case .up: ((1, 0, 0), (0, 1, 0))
        case .upMirrored: ((-1, 0, width - 1), (0, 1, 0))
        case .down: ((-1, 0, width - 1), (0, -1, height - 1))
        case .downMirrored: ((1, 0, 0), (0, -1, height - 1))
        case .leftMirrored: ((0, 1, 0), (1, 0, 0))
        case .right: ((0, -1, height - 1), (1, 0, 0))
        case .rightMirrored: ((0, -1, height - 1), (-1, 0, width - 1))
        case .left: ((0, 1, 0), (-1, 0, width - 1))
        }
    }
}
