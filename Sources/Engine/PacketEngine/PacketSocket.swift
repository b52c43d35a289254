import CPacket
import Glibc
import NetNamespace

/// An `AF_PACKET` socket bound to one interface: either the receiving side of a direction or its sending side.
///
/// - Receive sockets are created with protocol 0, configured, then bound with `ETH_P_ALL` and the
///   interface's index, so no frame of another interface is ever queued on them; `PACKET_IGNORE_OUTGOING`
///   keeps what the engine (or anyone) sends on the interface out of them.
/// - Send sockets stay at protocol 0 — they never receive, so nothing piles up unread in them — and use
///   `PACKET_QDISC_BYPASS`: frames go straight to the driver, as the wire has no queue of its own.
/// - Both are close-on-exec, and belong to the namespace they were opened in for their whole life.
///
/// A direction's source owns its receive socket and its sink its send socket: each closes it.
package final class PacketSocket {
    enum Role: Sendable {
        case receive
        case send
    }

    /// The descriptor, owned (-1 once closed). Read for every send; written only by ``close()``, after the
    /// direction's thread has ended (so no dynamic exclusivity checks).
    @exclusivity(unchecked) package private(set) var fileDescriptor: Int32
    /// The interface's name and index in its namespace.
    package let interface: String
    let interfaceIndex: Int32
    /// The interface's MTU when the socket was opened.
    package let mtu: Int32
    /// `cl-wl0 in lc-wire`, for messages.
    package let place: String
    /// What ``reopen(shut:)`` opens again: the namespace, the role and the buffer size.
    private let namespace: NamedNamespace?
    private let role: Role
    private let bufferBytes: Int32

    private init(
        fileDescriptor: Int32, interface: String, interfaceIndex: Int32, mtu: Int32, place: String, namespace: NamedNamespace?, role: Role,
        bufferBytes: Int32
    ) {
        self.fileDescriptor = fileDescriptor
        self.interface = interface
        self.interfaceIndex = interfaceIndex
        self.mtu = mtu
        self.place = place
        self.namespace = namespace
        self.role = role
        self.bufferBytes = bufferBytes
    }

    deinit {
        close()
    }

    package func close() {
        if fileDescriptor >= 0 { Glibc.close(fileDescriptor) }
        fileDescriptor = -1
    }

    /// Opens a socket for `role` on `interface` inside `namespace` (nil: the calling thread's namespace).
    /// A receiving socket opened `shut` takes no frame until ``unshut()``: bound, it would otherwise take a
    /// copy of every frame at once.
    static func open(
        interface: String, in namespace: NamedNamespace?, role: Role, bufferBytes: Int32 = 4 << 20, shut: Bool = false
    ) throws(PacketEngineError) -> PacketSocket {
        let place = "\(interface) in \(namespaceText(namespace))"
        return try inNamespace(namespace, "open a packet socket on \(place)") { () throws -> PacketSocket in
            let fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw PacketEngineError.system("socket AF_PACKET for \(place)") }
            var index: Int32 = 0
            var mtu: Int32 = 0
            do {
                index = try interfaceIndex(of: interface, socket: fd, place: place)
                mtu = try interfaceMTU(of: interface, socket: fd, place: place)
                if role == .receive {
                    if shut, cpk_socket_shut(fd) != 0 { throw PacketEngineError.system("shut the packet socket on \(place) (SO_ATTACH_FILTER)") }
                    try setOption(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "setsockopt PACKET_IGNORE_OUTGOING on \(place)")
                    try setBuffer(fd, force: SO_RCVBUFFORCE, plain: SO_RCVBUF, bufferBytes, "SO_RCVBUF", place)
                } else {
                    try setOption(fd, SOL_PACKET, PACKET_QDISC_BYPASS, 1, "setsockopt PACKET_QDISC_BYPASS on \(place)")
                    try setBuffer(fd, force: SO_SNDBUFFORCE, plain: SO_SNDBUF, bufferBytes, "SO_SNDBUF", place)
                    // A full send buffer blocks sendmmsg; bound that, so a stop request is never held up for long.
                    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
                    guard setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
                        throw PacketEngineError.system("setsockopt SO_SNDTIMEO on \(place)")
                    }
                }
                var address = sockaddr_ll()
                address.sll_family = UInt16(AF_PACKET)
                address.sll_protocol = role == .receive ? UInt16(ETH_P_ALL).bigEndian : 0
                address.sll_ifindex = index
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_ll>.size))
                    }
                }
                guard bound == 0 else { throw PacketEngineError.system("bind packet socket to \(place)") }
            } catch {
                Glibc.close(fd)
                throw error
            }
            return PacketSocket(
                fileDescriptor: fd, interface: interface, interfaceIndex: index, mtu: mtu, place: place, namespace: namespace, role: role,
                bufferBytes: bufferBytes)
        }
    }

    /// A second socket like this one: the same interface, namespace, role and buffer size (a receive ring
    /// rebuilt larger reads it while this one is read to its end), opened `shut`.
    func reopen(shut: Bool) throws(PacketEngineError) -> PacketSocket {
        try Self.open(interface: interface, in: namespace, role: role, bufferBytes: bufferBytes, shut: shut)
    }

    /// Lets frames into a socket opened `shut` (`SO_DETACH_FILTER`).
    func unshut() throws(PacketEngineError) {
        guard cpk_socket_unshut(fileDescriptor) == 0 else { throw .system("let frames into the packet socket on \(place) (SO_DETACH_FILTER)") }
    }

    /// The interface's MTU now (`SIOCGIFMTU`); 0 when it cannot be read (the interface is gone).
    package func currentMTU() -> Int {
        guard fileDescriptor >= 0 else { return 0 }
        return Int(max(0, cpk_interface_mtu(fileDescriptor, interface)))
    }

    /// Takes the socket's pending error (`getsockopt SO_ERROR`, which clears it): `ENETDOWN` once when the
    /// interface went down. 0 when there is none.
    package func takeError() -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fileDescriptor, SOL_SOCKET, SO_ERROR, &code, &length) == 0 ? code : 0
    }

    /// Frames the kernel dropped for want of room since the last call (`PACKET_STATISTICS`' `tp_drops`;
    /// the kernel resets its counts on every read).
    package func takeDrops() -> UInt64 {
        var kernel = tpacket_stats()
        var length = socklen_t(MemoryLayout<tpacket_stats>.size)
        return getsockopt(fileDescriptor, SOL_PACKET, PACKET_STATISTICS, &kernel, &length) == 0 ? UInt64(kernel.tp_drops) : 0
    }

    /// The index of `interface` in the namespace `socket` belongs to (`SIOCGIFINDEX`).
    static func interfaceIndex(of interface: String, socket fd: Int32, place: String) throws(PacketEngineError) -> Int32 {
        try checkName(interface, place: place)
        let index = cpk_interface_index(fd, interface)
        guard index > 0 else { throw PacketEngineError.system("find \(place) (SIOCGIFINDEX)") }
        return index
    }

    /// The MTU of `interface` (`SIOCGIFMTU`).
    static func interfaceMTU(of interface: String, socket fd: Int32, place: String) throws(PacketEngineError) -> Int32 {
        try checkName(interface, place: place)
        let mtu = cpk_interface_mtu(fd, interface)
        guard mtu > 0 else { throw PacketEngineError.system("read the MTU of \(place) (SIOCGIFMTU)") }
        return mtu
    }

    static func checkName(_ interface: String, place: String) throws(PacketEngineError) {
        guard !interface.isEmpty, interface.utf8.count < 16 else {
            throw PacketEngineError(operation: "find \(place)", detail: "interface names have 1 to 15 bytes")
        }
    }

    private static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ operation: String) throws(PacketEngineError) {
        var value = value
        guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw PacketEngineError.system(operation)
        }
    }

    /// Sets a socket buffer size, beyond `net.core.*mem_max` when the process may (`*BUFFORCE` needs CAP_NET_ADMIN).
    private static func setBuffer(
        _ fd: Int32, force: Int32, plain: Int32, _ bytes: Int32, _ name: String, _ place: String
    ) throws(PacketEngineError) {
        var value = bytes
        if setsockopt(fd, SOL_SOCKET, force, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 { return }
        try setOption(fd, SOL_SOCKET, plain, bytes, "setsockopt \(name) on \(place)")
    }
}
