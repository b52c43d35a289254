import CPacket
import Foundation
import Glibc
import NetNamespace
import Synchronization

/// The kernel's stamps of a probe's UDP datagrams as they pass one interface, read from a `TPACKET_V2`
/// ring of an `AF_PACKET` socket of its own in the interface's namespace: what linkcond-bench and the
/// timing tests measure one-way times with, both ends on the same clock (`CLOCK_REALTIME` of one kernel).
///
/// The socket asks for receive stamps (`SO_TIMESTAMPNS`), which makes the kernel stamp every frame as it
/// queues it on an interface (`netif_rx`) and every clone it hands a tap of a sending interface
/// (`dev_queue_xmit_nit`): a frame going out of the client's interface is stamped as it leaves it, one
/// coming into the server's as it arrives. When the capture's thread reads the ring does not matter: it
/// sleeps a millisecond between reads (it is never woken per frame) and never competes with what it
/// measures for more than a few wake-ups a second.
final class StampCapture: @unchecked Sendable {
    enum Side {
        /// Frames the interface sends (`PACKET_OUTGOING`).
        case sent
        /// Frames it receives.
        case received
    }

    // Slots of 256 bytes hold a probe datagram's headers and payload (longer frames are cut short, which is
    // all the same here): 16,384 of them, a third of a second at 50,000 frames/s.
    private static let frameSize = 256
    private static let blockSize = 1 << 16
    private static let blockCount = 64
    private static var frameCount: Int { blockSize / frameSize * blockCount }

    private let fd: Int32
    private let ring: UnsafeMutableRawPointer
    private let side: Side
    private let port: UInt16
    private let run: UInt32
    private var head = 0
    /// The stamp (ns, `CLOCK_REALTIME`) of each sequence number seen; 0 where none was.
    private(set) var stamps: [UInt64]
    /// Frames the kernel dropped because the ring was full (`PACKET_STATISTICS`).
    private(set) var drops: UInt64 = 0
    private let stop = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// A capture of the datagrams of probe `run` to UDP port `port` that `interface` (in `namespace`) sends
    /// or receives, sequence numbers below `capacity`.
    init(interface: String, in namespace: NamedNamespace, side: Side, port: UInt16, run: UInt32, capacity: Int) throws {
        let fd = try namespace.run { () throws -> Int32 in
            let fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw ProbeFailure("socket AF_PACKET in \(namespace.name)", errno) }
            let index = cpk_interface_index(fd, interface)
            guard index > 0 else {
                close(fd)
                throw ProbeFailure("find \(interface) in \(namespace.name)", errno)
            }
            var address = sockaddr_ll()
            address.sll_family = UInt16(AF_PACKET)
            // ETH_P_ALL: a tap bound to one protocol is not handed what the interface sends.
            address.sll_protocol = UInt16(ETH_P_ALL).bigEndian
            address.sll_ifindex = index
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_ll>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw ProbeFailure("bind a capture socket to \(interface) in \(namespace.name)", errno)
            }
            return fd
        }
        var version = Int32(TPACKET_V2.rawValue)
        var request = tpacket_req(
            tp_block_size: UInt32(Self.blockSize), tp_block_nr: UInt32(Self.blockCount), tp_frame_size: UInt32(Self.frameSize),
            tp_frame_nr: UInt32(Self.frameCount))
        guard cpk_enable_receive_stamps(fd) == 0,
            setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, socklen_t(MemoryLayout<Int32>.size)) == 0,
            setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &request, socklen_t(MemoryLayout<tpacket_req>.size)) == 0,
            let memory = mmap(nil, Self.blockSize * Self.blockCount, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), memory != MAP_FAILED
        else {
            let code = errno
            close(fd)
            throw ProbeFailure("set up the capture ring on \(interface)", code)
        }
        self.fd = fd
        ring = memory
        self.side = side
        self.port = port
        self.run = run
        stamps = [UInt64](repeating: 0, count: capacity)
    }

    deinit {
        munmap(ring, Self.blockSize * Self.blockCount)
        close(fd)
    }

    /// Reads the ring every millisecond on a thread of its own until ``finish()``.
    func start() {
        let thread = Thread { [self] in
            while !stop.load(ordering: .relaxed) {
                drain()
                usleep(1000)
            }
            drain()
            done.signal()
        }
        thread.start()
    }

    /// Stops the thread after a last read and counts the ring's drops.
    func finish() {
        stop.store(true, ordering: .relaxed)
        done.wait()
        var statistics = tpacket_stats()
        var length = socklen_t(MemoryLayout<tpacket_stats>.size)
        if getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &statistics, &length) == 0 { drops = UInt64(statistics.tp_drops) }
    }

    private func drain() {
        while true {
            let slot = ring + head * Self.frameSize
            let status = cpk_ring_status(slot)
            guard status & UInt32(TP_STATUS_USER) != 0 else { return }
            record(slot)
            cpk_ring_release(slot)
            head = (head + 1) % Self.frameCount
        }
    }

    private func record(_ slot: UnsafeMutableRawPointer) {
        let header = slot.load(as: tpacket2_hdr.self)
        let type = slot.load(fromByteOffset: Int(cpk_tpacket2_address_offset()), as: sockaddr_ll.self).sll_pkttype
        guard (type == UInt8(PACKET_OUTGOING)) == (side == .sent) else { return }
        let frame = UnsafeRawBufferPointer(start: slot + Int(header.tp_mac), count: Int(header.tp_snaplen))
        guard let probe = ProbeDatagram.parse(frame), probe.port == port, probe.run == run, Int(probe.sequence) < stamps.count else { return }
        stamps[Int(probe.sequence)] = UInt64(header.tp_sec) * 1_000_000_000 + UInt64(header.tp_nsec)
    }
}

/// The payload of a probe datagram: a sequence number and the probe's run id (big-endian), then zeros.
enum ProbeDatagram {
    static let payloadBytes = 64

    static func payload(sequence: UInt32, run: UInt32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: payloadBytes)
        for shift in 0..<4 {
            bytes[shift] = UInt8(truncatingIfNeeded: sequence >> (24 - 8 * shift))
            bytes[4 + shift] = UInt8(truncatingIfNeeded: run >> (24 - 8 * shift))
        }
        return bytes
    }

    /// The destination port, sequence number and run id of an Ethernet frame carrying an IPv4 UDP probe.
    static func parse(_ frame: UnsafeRawBufferPointer) -> (port: UInt16, sequence: UInt32, run: UInt32)? {
        guard frame.count >= 14 + 20 + 8 + 8, frame[12] == 0x08, frame[13] == 0x00, frame[14] >> 4 == 4, frame[23] == 17 else { return nil }
        let udp = 14 + Int(frame[14] & 0x0f) * 4
        guard frame.count >= udp + 16 else { return nil }
        func word(_ offset: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 8 | UInt32(frame[offset + $1]) } }
        return (UInt16(frame[udp + 2]) << 8 | UInt16(frame[udp + 3]), word(udp + 8), word(udp + 12))
    }
}

/// A probe that could not be set up, with the errno that said why.
package struct ProbeFailure: Error, CustomStringConvertible {
    package var description: String

    init(_ operation: String, _ code: Int32) {
        description = "\(operation): \(String(cString: strerror(code)))"
    }

    init(_ description: String) {
        self.description = description
    }
}
