import CPacket
import Foundation
import Glibc
import LinkcondBase
import NetNamespace

/// What the frame-accounting tests do to a lab besides ordinary traffic: change an interface's MTU, send
/// datagrams of a given size, and put raw (VLAN-tagged) frames on a link and catch them on the far side.
enum FrameTools {
    /// Sets the MTU of `interface` in `namespace` (`SIOCSIFMTU`, as `ip link set dev … mtu …` does).
    static func setMTU(_ mtu: Int32, of interface: String, in namespace: NamedNamespace) throws {
        let result = try namespace.run { () -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return errno }
            defer { close(fd) }
            // struct ifreq: the name in 16 bytes, then a union whose int ifru_mtu starts it; 40 bytes in all.
            // (Swift sees two clashing definitions of it, <net/if.h>'s and <linux/if.h>'s.)
            var request = [UInt8](repeating: 0, count: 40)
            for (index, byte) in interface.utf8.enumerated() where index < 15 { request[index] = byte }
            withUnsafeBytes(of: mtu) { request.replaceSubrange(16..<20, with: $0) }
            return ioctl(fd, UInt(SIOCSIFMTU), &request) == 0 ? 0 : errno
        }
        guard result == 0 else {
            throw Traffic.Failure(description: "set the MTU of \(interface) in \(namespace.name) to \(mtu): \(String(cString: strerror(result)))")
        }
    }

    /// Sends `count` UDP datagrams of `size` payload bytes from `source` to `target`:`port` in
    /// `destination` (fragmentation forbidden: `IP_PMTUDISC_DO`), and returns how many arrived whole with
    /// their bytes intact, waiting at most `timeout` for the last.
    static func datagrams(
        count: Int, size: Int, from source: NamedNamespace, to target: IPAddress, in destination: NamedNamespace, port: UInt16,
        timeout: Double = 2
    ) throws -> Int {
        try copiesReceived(count: count, size: size, from: source, to: target, in: destination, port: port, timeout: timeout)
            .filter { $0 > 0 }.count
    }

    /// Like ``datagrams(count:size:from:to:in:port:timeout:)``, sending `gap` microseconds apart (0: back to
    /// back), and returns how many times each datagram arrived whole: 1 each when nothing was lost or
    /// repeated. It reads until `timeout` has passed since the last was sent, or, with `untilAll`, until
    /// every datagram has arrived once.
    static func copiesReceived(
        count: Int, size: Int, from source: NamedNamespace, to target: IPAddress, in destination: NamedNamespace, port: UInt16,
        timeout: Double = 2, gap: UInt32 = 1000, untilAll: Bool = true
    ) throws -> [Int] {
        let receiver = try Traffic.socket(in: destination, AF_INET, Int32(SOCK_DGRAM.rawValue), 0, timeout: 0.05)
        defer { close(receiver) }
        var buffer = Int32(32 << 20)
        setsockopt(receiver, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, socklen_t(MemoryLayout<Int32>.size))
        var (bound, boundLength) = Traffic.address(target, port: port)
        let bindResult = withUnsafePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, boundLength) } }
        guard bindResult == 0 else { throw Traffic.fail("bind \(target) port \(port)") }
        let sender = try Traffic.socket(in: source, AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var discovery = Int32(IP_PMTUDISC_DO)
        setsockopt(sender, Int32(IPPROTO_IP), IP_MTU_DISCOVER, &discovery, socklen_t(MemoryLayout<Int32>.size))
        var sendBuffer = Int32(32 << 20)
        setsockopt(sender, SOL_SOCKET, SO_SNDBUFFORCE, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        var (storage, length) = Traffic.address(target, port: port)
        // Each datagram's first 4 bytes are its index; the rest a pattern of it, so a mangled one is not counted.
        func payload(_ index: Int) -> [UInt8] {
            withUnsafeBytes(of: UInt32(index).bigEndian, Array.init) + (4..<max(4, size)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
        }
        for index in 0..<count {
            let bytes = payload(index)
            var sent: Int
            repeat {
                sent = bytes.withUnsafeBytes { raw in
                    withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender, raw.baseAddress, raw.count, 0, $0, length) } }
                }
            } while sent < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)
            guard sent == bytes.count else { throw Traffic.fail("send a \(size)-byte datagram \(index) to \(target)") }
            if gap > 0 { usleep(gap) }
        }
        var copies = [Int](repeating: 0, count: count)
        var distinct = 0
        var received = [UInt8](repeating: 0, count: 70_000)
        let deadline = Traffic.monotonicSeconds() + timeout
        while !(untilAll && distinct == count) && Traffic.monotonicSeconds() < deadline {
            let got = received.withUnsafeMutableBytes { recv(receiver, $0.baseAddress, $0.count, 0) }
            guard got == size, size >= 4 else { continue }
            let index = Int(UInt32(received[0]) << 24 | UInt32(received[1]) << 16 | UInt32(received[2]) << 8 | UInt32(received[3]))
            guard index < count, Array(received[..<got]) == payload(index) else { continue }
            if copies[index] == 0 { distinct += 1 }
            copies[index] += 1
        }
        return copies
    }
}

/// A raw `AF_PACKET` socket on one interface that sends whole Ethernet frames and reads frames with the VLAN
/// tag the kernel took out of them (`PACKET_AUXDATA`): how a test puts a tagged frame on a link and sees
/// whether it arrived tagged.
final class FrameTap {
    struct Frame {
        /// The frame as read: the kernel has taken its outer VLAN tag out.
        var bytes: [UInt8]
        /// The outer tag the kernel took out (`TP_STATUS_VLAN_VALID`), with its TPID; nil when it had none.
        var tag: (tpid: UInt16, tci: UInt16)?
    }

    /// The EtherType the tests' frames carry inside their tags (IEEE 802 local experimental 1).
    static let experimentalType: UInt16 = 0x88B5

    private let fd: Int32
    let interface: String

    init(on interface: String, in namespace: NamedNamespace) throws {
        self.interface = interface
        fd = try namespace.run { () -> Int32 in
            let fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(UInt16(ETH_P_ALL).bigEndian))
            guard fd >= 0 else { return -1 }
            var address = sockaddr_ll()
            address.sll_family = UInt16(AF_PACKET)
            address.sll_protocol = UInt16(ETH_P_ALL).bigEndian
            address.sll_ifindex = cpk_interface_index(fd, interface)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_ll>.size)) }
            }
            var one: Int32 = 1
            guard bound == 0, setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                close(fd)
                return -1
            }
            var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = Int32(8 << 20)
            setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
        guard fd >= 0 else { throw Traffic.fail("open a packet socket on \(interface) in \(namespace.name)") }
    }

    deinit {
        close(fd)
    }

    /// A broadcast frame from a made-up address carrying `tags` (outermost first: TPID and TCI) and then
    /// ``experimentalType`` with `marker` and `padding` bytes after it.
    static func frame(tags: [(tpid: UInt16, tci: UInt16)], marker: String, padding: Int = 0) -> [UInt8] {
        var bytes: [UInt8] = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x4c, 0x43, 0x00, 0x00, 0x01]
        for tag in tags { bytes += [UInt8(tag.tpid >> 8), UInt8(tag.tpid & 0xff), UInt8(tag.tci >> 8), UInt8(tag.tci & 0xff)] }
        bytes += [UInt8(experimentalType >> 8), UInt8(experimentalType & 0xff)] + Array(marker.utf8)
        bytes += (0..<padding).map { UInt8(truncatingIfNeeded: $0) }
        return bytes
    }

    func send(_ frame: [UInt8]) throws {
        let sent = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == frame.count else { throw Traffic.fail("send a \(frame.count)-byte frame on \(interface)") }
    }

    /// The first frame read within `timeout` whose bytes contain `marker`; nil when none came.
    func receive(containing marker: String, timeout: Double = 2) -> Frame? {
        let needle = Array(marker.utf8)
        var buffer = [UInt8](repeating: 0, count: 70_000)
        var control = [UInt64](repeating: 0, count: 16)
        let deadline = Traffic.monotonicSeconds() + timeout
        while Traffic.monotonicSeconds() < deadline {
            let (length, tag) = buffer.withUnsafeMutableBytes { data in
                control.withUnsafeMutableBytes { controlBytes -> (Int, (UInt16, UInt16)?) in
                    var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        var message = msghdr()
                        message.msg_iov = vectorPointer
                        message.msg_iovlen = 1
                        message.msg_control = controlBytes.baseAddress
                        message.msg_controllen = controlBytes.count
                        let length = recvmsg(fd, &message, 0)
                        guard length > 0 else { return (length, nil) }
                        return (length, Self.auxiliaryTag(controlBytes, length: Int(message.msg_controllen)))
                    }
                }
            }
            guard length > 0 else { continue }
            let bytes = Array(buffer[..<length])
            if Self.contains(bytes, needle) { return Frame(bytes: bytes, tag: tag.map { (tpid: $0.0, tci: $0.1) }) }
        }
        return nil
    }

    /// The VLAN tag in a `PACKET_AUXDATA` control message (`struct tpacket_auxdata`), if it says there was one.
    private static func auxiliaryTag(_ control: UnsafeMutableRawBufferPointer, length: Int) -> (UInt16, UInt16)? {
        // struct cmsghdr: size_t cmsg_len, int cmsg_level, int cmsg_type; the data aligned to size_t.
        var offset = 0
        while offset + 16 <= length {
            let cmsgLength = Int(control.load(fromByteOffset: offset, as: Int.self))
            let level = control.load(fromByteOffset: offset + 8, as: Int32.self)
            let type = control.load(fromByteOffset: offset + 12, as: Int32.self)
            if level == SOL_PACKET, type == PACKET_AUXDATA, cmsgLength >= 16 + MemoryLayout<tpacket_auxdata>.size {
                let data = control.loadUnaligned(fromByteOffset: offset + 16, as: tpacket_auxdata.self)
                guard data.tp_status & UInt32(TP_STATUS_VLAN_VALID) != 0 else { return nil }
                let tpid = data.tp_status & UInt32(TP_STATUS_VLAN_TPID_VALID) != 0 ? data.tp_vlan_tpid : 0x8100
                return (tpid, data.tp_vlan_tci)
            }
            guard cmsgLength > 0 else { return nil }
            offset += (cmsgLength + 7) & ~7
        }
        return nil
    }

    private static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count, let first = needle.first else { return false }
        var index = 0
        while index + needle.count <= bytes.count {
            if bytes[index] == first, Array(bytes[index..<(index + needle.count)]) == needle { return true }
            index += 1
        }
        return false
    }
}
