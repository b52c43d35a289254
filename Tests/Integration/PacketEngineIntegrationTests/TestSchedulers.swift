import EngineBenchIO
import LinkEmulation
import PacketEngine

/// A scheduler whose behaviour a test switches at run time (through `EngineRuntime.perform`), which counts
/// the frames of one UDP port and can flip one bit of a TCP payload.
final class SwitchableScheduler: FrameScheduler {
    enum Mode: Sendable, Equatable {
        /// Forward everything at once.
        case pass
        /// Drop everything.
        case dropAll
        /// Hold every frame for a fixed time (nanoseconds).
        case delay(UInt64)
        /// Flip one bit in the payload of the next `count` IPv4 TCP segments that carry data.
        case corruptTCP(count: Int)
    }

    var mode: Mode = .pass {
        didSet {
            if case let .delay(nanoseconds) = mode { delayLine.delay = nanoseconds }
            if case let .corruptTCP(count) = mode { corruptionsLeft = count }
        }
    }

    /// The UDP destination port counted in ``countedUDP`` (setting it restarts the count).
    var countedPort: UInt16 = 0 {
        didSet { countedUDP = 0 }
    }
    private(set) var countedUDP = 0
    private(set) var offered = 0
    /// Touched only by control jobs (`EngineRuntime.perform`).
    var controlCounter = 0
    private(set) var corrupted = 0
    private var corruptionsLeft = 0
    private let delayLine = FixedDelayScheduler(delay: 0)

    func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        offered += 1
        if countedPort != 0, FrameParser.udpDestinationPort(frame) == countedPort { countedUDP += 1 }
        switch mode {
        case .pass:
            return delayLine.heldCount > 0 ? delayLine.offer(frame, at: now) : .forwardNow
        case .dropAll:
            return .dropped
        case .delay:
            return delayLine.offer(frame, at: now)
        case .corruptTCP:
            if corruptionsLeft > 0, let offset = FrameParser.tcpPayloadOffset(frame) {
                frame[offset] ^= 0x10
                corruptionsLeft -= 1
                corrupted += 1
            }
            return .forwardNow
        }
    }

    var nextDeparture: MonotonicNanoseconds? { delayLine.nextDeparture }

    func departDue(at now: MonotonicNanoseconds, _ send: (UnsafeRawBufferPointer, MonotonicNanoseconds) -> Void) {
        delayLine.departDue(at: now, send)
    }
}

/// Just enough Ethernet/IPv4/IPv6 parsing for the tests' schedulers.
enum FrameParser {
    /// The offset of the IP header and the IP protocol number (after any extension headers are ignored).
    static func ipHeader(_ frame: UnsafeMutableRawBufferPointer) -> (offset: Int, version: Int, proto: UInt8, headerLength: Int)? {
        guard frame.count >= 14 + 20 else { return nil }
        let etherType = UInt16(frame[12]) << 8 | UInt16(frame[13])
        switch etherType {
        case 0x0800:
            let headerLength = Int(frame[14] & 0x0f) * 4
            return (14, 4, frame[14 + 9], headerLength)
        case 0x86dd:
            guard frame.count >= 14 + 40 else { return nil }
            return (14, 6, frame[14 + 6], 40)
        default:
            return nil
        }
    }

    static func udpDestinationPort(_ frame: UnsafeMutableRawBufferPointer) -> UInt16? {
        guard let ip = ipHeader(frame), ip.proto == 17, frame.count >= ip.offset + ip.headerLength + 8 else { return nil }
        let udp = ip.offset + ip.headerLength
        return UInt16(frame[udp + 2]) << 8 | UInt16(frame[udp + 3])
    }

    /// The offset of the first payload byte of an IPv4 TCP segment that carries data.
    static func tcpPayloadOffset(_ frame: UnsafeMutableRawBufferPointer) -> Int? {
        guard let ip = ipHeader(frame), ip.version == 4, ip.proto == 6 else { return nil }
        let tcp = ip.offset + ip.headerLength
        guard frame.count >= tcp + 20 else { return nil }
        let totalLength = Int(frame[ip.offset + 2]) << 8 | Int(frame[ip.offset + 3])
        let payload = tcp + Int(frame[tcp + 12] >> 4) * 4
        guard ip.offset + totalLength > payload, payload + 100 < frame.count else { return nil }
        return payload + 100
    }
}
