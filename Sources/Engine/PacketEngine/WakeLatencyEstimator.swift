/// How late a direction's departure timer wakes its thread, learnt from its own recent wake-ups: the
/// ``lead`` the timer is armed ahead of a departure by, so that the thread is running when the frame is
/// due and spins on the clock for the rest (``DepartureTiming/adaptiveLead(maximum:)``).
///
/// It keeps the last ``window`` wake-up latencies (the time the wait returned minus the deadline the timer
/// was armed for) in a histogram of 1 µs buckets, and the lead is their ``percentile`` plus
/// ``margin`` (what the loop does between waking and sending), at most `maximumLead`. Recording is a
/// few instructions and allocates nothing: the buckets and the window are allocated once.
final class WakeLatencyEstimator {
    /// Wake-ups the estimate is taken over (the oldest leaves as a new one comes).
    static let window = 128
    /// The fraction of those the lead covers.
    static let percentile = 0.95
    /// Added to the percentile: the loop's work between the wake-up and the departure.
    static let margin: UInt64 = 1000
    /// Histogram buckets of 1 µs; the last one holds everything longer.
    static let bucketCount = 256
    /// Samples before the first estimate (until then the lead is `initialLead`).
    static let warmup = 8

    /// The lead the timer is armed ahead of a departure by, in nanoseconds.
    private(set) var lead: UInt64
    /// The longest lead (the most a departure may be spun for).
    let maximumLead: UInt64
    /// Wake-ups recorded in all.
    private(set) var recorded: UInt64 = 0

    private let counts: UnsafeMutablePointer<UInt16>
    private let samples: UnsafeMutablePointer<UInt16>
    private var next = 0
    private var filled = 0
    /// How many of the window's samples lie above the percentile (the rank counted from the top).
    private let rankFromTop: Int

    /// An estimator whose lead starts at `initialLead` and never passes `maximumLead`.
    init(initialLead: UInt64, maximumLead: UInt64) {
        self.maximumLead = maximumLead
        lead = min(initialLead, maximumLead)
        counts = .allocate(capacity: Self.bucketCount)
        counts.initialize(repeating: 0, count: Self.bucketCount)
        samples = .allocate(capacity: Self.window)
        samples.initialize(repeating: 0, count: Self.window)
        rankFromTop = max(1, Int((Double(Self.window) * (1 - Self.percentile)).rounded(.down)))
    }

    deinit {
        counts.deallocate()
        samples.deallocate()
    }

    /// Adds one wake-up `latency` (nanoseconds) and updates ``lead``.
    func record(_ latency: UInt64) {
        let bucket = UInt16(min(latency / 1000, UInt64(Self.bucketCount - 1)))
        if filled == Self.window {
            counts[Int(samples[next])] -= 1
        } else {
            filled += 1
        }
        samples[next] = bucket
        counts[Int(bucket)] += 1
        next = (next + 1) % Self.window
        recorded &+= 1
        guard filled >= Self.warmup else { return }
        // The bucket holding the percentile, walked from the top: the samples above it are the few the lead
        // does not cover.
        let above = max(1, filled * rankFromTop / Self.window)
        var seen = 0
        var index = Self.bucketCount - 1
        while index > 0 {
            seen += Int(counts[index])
            if seen >= above { break }
            index -= 1
        }
        // The upper end of the bucket.
        lead = min(UInt64(index + 1) * 1000 + Self.margin, maximumLead)
    }
}
