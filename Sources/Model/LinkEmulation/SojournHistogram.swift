/// How long frames waited in a direction's queue (its sojourn time: from arrival until the transmitter
/// took the frame), in a fixed histogram held inline: recording is a few instructions and never allocates.
///
/// Buckets: one for [0, 1024 ns), then eight per power of two up to 2^40 ns (about 18 minutes), so a
/// quantile is read to within 9%; the maximum is kept exactly.
public struct SojournHistogram: Sendable, Equatable {
    static let subBuckets = 8
    static let firstExponent = 10
    static let bucketCount = 1 + (40 - firstExponent) * subBuckets + 1

    private var counts = InlineArray<242, UInt64>(repeating: 0)
    /// Frames recorded.
    public private(set) var count: UInt64 = 0
    /// The longest sojourn recorded, exactly.
    public private(set) var maximum: UInt64 = 0
    /// The sum of the sojourns recorded (wrapping), for the mean.
    public private(set) var sum: UInt64 = 0

    /// An empty histogram.
    public init() {}

    @inline(__always)
    static func bucket(of value: UInt64) -> Int {
        if value < 1 << firstExponent { return 0 }
        let exponent = 63 - value.leadingZeroBitCount
        if exponent >= 40 { return bucketCount - 1 }
        let sub = Int((value >> UInt64(exponent - 3)) & 7)
        return 1 + (exponent - firstExponent) * subBuckets + sub
    }

    /// The largest value bucket `index` holds.
    static func upperBound(of index: Int) -> UInt64 {
        if index == 0 { return (1 << firstExponent) - 1 }
        if index == bucketCount - 1 { return .max }
        let exponent = (index - 1) / subBuckets + firstExponent
        let sub = UInt64((index - 1) % subBuckets)
        let width = UInt64(1) << UInt64(exponent - 3)
        return (8 + sub + 1) * width - 1
    }

    /// Adds one sojourn, in nanoseconds.
    @inline(__always)
    public mutating func record(_ value: UInt64) {
        counts[Self.bucket(of: value)] &+= 1
        count &+= 1
        sum &+= value
        if value > maximum { maximum = value }
    }

    /// The sojourn at `fraction` (0...1) of those recorded: the upper end of the bucket holding it, capped
    /// at the maximum, so it never understates. Nil when nothing was recorded.
    public func quantile(_ fraction: Double) -> UInt64? {
        guard count > 0 else { return nil }
        let rank = max(1, UInt64((Double(count) * min(max(fraction, 0), 1)).rounded(.up)))
        var seen: UInt64 = 0
        for index in 0..<Self.bucketCount where counts[index] > 0 {
            seen += counts[index]
            if seen >= rank { return min(Self.upperBound(of: index), maximum) }
        }
        return maximum
    }

    /// The median (nil when empty).
    public var median: UInt64? { quantile(0.5) }
    /// The 99th percentile (nil when empty).
    public var p99: UInt64? { quantile(0.99) }

    public static func == (a: SojournHistogram, b: SojournHistogram) -> Bool {
        guard a.count == b.count, a.maximum == b.maximum, a.sum == b.sum else { return false }
        for index in 0..<bucketCount where a.counts[index] != b.counts[index] { return false }
        return true
    }
}
