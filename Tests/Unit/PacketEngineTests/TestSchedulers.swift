import LinkEmulation

/// Ethernet + IPv4 + UDP frames whose first payload byte is an id, for following frames through a loop.
enum TestFrame {
    /// Where the id is: after 14 bytes of Ethernet, 20 of IPv4 and 8 of UDP.
    static let idOffset = 42

    /// A frame of `length` bytes (at least 43) carrying `id`, to UDP port `port`.
    static func udp(id: UInt8, length: Int = 100, port: UInt16 = 40_000) -> [UInt8] {
        precondition(length > idOffset)
        var frame = [UInt8](repeating: 0, count: length)
        frame.replaceSubrange(0..<14, with: [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00])
        let ipLength = length - 14
        let ip: [UInt8] = [0x45, 0, UInt8(ipLength >> 8), UInt8(ipLength & 0xff), 0, 0, 0x40, 0, 64, 17, 0, 0, 198, 18, 10, 2, 198, 18, 10, 1]
        frame.replaceSubrange(14..<34, with: ip)
        let udpLength = ipLength - 20
        frame.replaceSubrange(34..<42, with: [0x9c, 0x40, UInt8(port >> 8), UInt8(port & 0xff), UInt8(udpLength >> 8), UInt8(udpLength & 0xff), 0, 0])
        frame[idOffset] = id
        return frame
    }

    /// The id of a frame made by ``udp(id:length:port:)``.
    static func id(of frame: UnsafeRawBufferPointer) -> UInt8 {
        frame.count > idOffset ? frame[idOffset] : 0
    }
}

/// A scheduler whose verdict for each frame the test scripts: forward, drop, hold until a time, or forward
/// and hold a copy (a duplicate). It records every offer and can run a hook on it.
final class ScriptedScheduler: FrameScheduler {
    enum Decision {
        case forward
        case drop
        case hold(until: MonotonicNanoseconds)
        case forwardAndHoldCopy(until: MonotonicNanoseconds)
    }

    /// The verdict for a frame (by its id) offered at a time; forward by default.
    var decide: (_ id: UInt8, _ at: MonotonicNanoseconds) -> Decision = { _, _ in .forward }
    /// Called with the number of frames offered so far, after each offer.
    var onOffer: ((Int) -> Void)?
    /// Every offer: the frame's id and the time passed with it.
    private(set) var offers: [(id: UInt8, at: MonotonicNanoseconds)] = []
    /// A value control jobs read and write.
    var label = "first"
    private var held: [(bytes: [UInt8], due: MonotonicNanoseconds)] = []

    func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        let id = TestFrame.id(of: UnsafeRawBufferPointer(frame))
        offers.append((id, now))
        defer { onOffer?(offers.count) }
        switch decide(id, now) {
        case .forward:
            return .forwardNow
        case .drop:
            return .dropped
        case .hold(let until):
            hold(frame, until: until)
            return .held
        case .forwardAndHoldCopy(let until):
            hold(frame, until: until)
            return .forwardNow
        }
    }

    private func hold(_ frame: UnsafeMutableRawBufferPointer, until due: MonotonicNanoseconds) {
        // Stable: equal due times leave in the order offered.
        let index = held.firstIndex { $0.due > due } ?? held.count
        held.insert((Array(frame), due), at: index)
    }

    var nextDeparture: MonotonicNanoseconds? { held.first?.due }

    var heldCount: Int { held.count }

    func departDue(at now: MonotonicNanoseconds, _ send: (UnsafeRawBufferPointer, MonotonicNanoseconds) -> Void) {
        while let first = held.first, first.due <= now {
            held.removeFirst()
            first.bytes.withUnsafeBytes { send($0, first.due) }
        }
    }
}
