/// A histogram of durations in nanoseconds with about 6 % resolution: exact below 32 ns, then 16 buckets
/// per power of two. Recording is a few instructions and never allocates; quantiles are read from a copy.
public struct LatencyHistogram: Sendable, Equatable {
    static let subBucketBits = 4
    static let linearLimit: UInt64 = 32
    static let bucketCount = 32 + (64 - 5) * 16

    /// Bucket counts (see ``bucketRange(_:)``).
    public private(set) var counts: [UInt64]
    /// Values recorded.
    public private(set) var count: UInt64 = 0
    /// The largest value recorded, exactly.
    public private(set) var maximum: UInt64 = 0
    /// The sum of the values recorded (wrapping), for the mean.
    public private(set) var sum: UInt64 = 0

    /// An empty histogram.
    public init() {
        counts = [UInt64](repeating: 0, count: Self.bucketCount)
    }

    @inline(__always)
    static func bucket(of value: UInt64) -> Int {
        if value < linearLimit { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount
        let shift = exponent - subBucketBits
        let sub = Int((value >> UInt64(shift)) & 15)
        return 32 + (exponent - 5) * 16 + sub
    }

    /// The values bucket `index` holds.
    public static func bucketRange(_ index: Int) -> ClosedRange<UInt64> {
        if index < 32 { return UInt64(index)...UInt64(index) }
        let exponent = (index - 32) / 16 + 5
        let sub = UInt64((index - 32) % 16)
        let width = UInt64(1) << UInt64(exponent - subBucketBits)
        let lower = (16 + sub) * width
        return lower...(lower &+ width &- 1)
    }

    /// Adds one value.
    @inline(__always)
    public mutating func record(_ value: UInt64) {
        counts[Self.bucket(of: value)] &+= 1
        count &+= 1
        sum &+= value
        if value > maximum { maximum = value }
    }

    /// Adds every value of `other`.
    public mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] &+= other.counts[index] }
        count &+= other.count
        sum &+= other.sum
        maximum = max(maximum, other.maximum)
    }

    /// The value at `fraction` (0...1) of the recorded values: the upper end of the bucket holding it,
    /// capped at the maximum, so it never understates. Nil when nothing was recorded.
    public func quantile(_ fraction: Double) -> UInt64? {
        guard count > 0 else { return nil }
        let rank = max(1, UInt64((Double(count) * min(max(fraction, 0), 1)).rounded(.up)))
        var seen: UInt64 = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            seen += bucketCount
            if seen >= rank { return min(Self.bucketRange(index).upperBound, maximum) }
        }
        return maximum
    }

    /// Median, 99th percentile and maximum.
    public var summary: LatencySummary {
        LatencySummary(count: count, median: quantile(0.5), p99: quantile(0.99), maximum: count > 0 ? maximum : nil)
    }
}

/// Median, 99th percentile and maximum of a ``LatencyHistogram``, in nanoseconds (nil when empty).
public struct LatencySummary: Sendable, Equatable, CustomStringConvertible {
    /// Values recorded.
    public var count: UInt64
    /// The 50th and 99th percentiles (upper ends of their buckets) and the exact maximum.
    public var median: UInt64?
    public var p99: UInt64?
    public var maximum: UInt64?

    public var description: String {
        func text(_ value: UInt64?) -> String {
            guard let value else { return "-" }
            return value >= 1_000_000 ? "\(Double(value) / 1e6) ms" : "\(Double(value) / 1e3) µs"
        }
        return "n=\(count) median \(text(median)) p99 \(text(p99)) max \(text(maximum))"
    }
}
