import CPacket
import Glibc
import LinkcondSystem
import NetNamespace

/// The offload features of an interface, read and switched with the `SIOCETHTOOL` ioctl
/// (`ETHTOOL_GFEATURES`/`ETHTOOL_SFEATURES` over the kernel's feature-name table; no ethtool binary).
///
/// Why the wire needs them off: a veth hands the frames it carries to its peer with partial checksums
/// (`CHECKSUM_PARTIAL`: the checksum field holds only the pseudo-header sum) and as GSO super-frames of up
/// to 64 KiB. Read from one veth and re-sent through `AF_PACKET` into another, such a frame either
/// arrives with a wrong TCP checksum or fails with `EMSGSIZE`. With checksum offload, scatter-gather and
/// every kind of segmentation off on the interfaces that send into the wire, frames cross it as on a real
/// link: at most one MTU, checksums complete — so a corrupted frame fails the receiver's checksum. GRO and
/// LRO are switched off too, so the engine reads frames as they were sent.
public enum InterfaceOffloads {
    /// True for the names of the features a wire veth and its peer must not have: transmit checksums,
    /// scatter-gather, every kind of segmentation (TSO, GSO, UFO, tunnels), and receive coalescing (GRO, LRO).
    public static func isWireOffload(_ name: String) -> Bool {
        name.hasPrefix("tx-checksum") || name.hasPrefix("tx-scatter-gather") || name.hasSuffix("-segmentation")
            || name.hasPrefix("tx-gso-") || name == "rx-gro" || name == "rx-gro-list" || name == "rx-udp-gro-forwarding"
            || name == "rx-lro" || name == "rx-gro-hw"
    }

    /// The active state of every feature of `interface` in `namespace` (nil: the calling thread's), by
    /// the kernel's name (`tx-checksum-ip-generic`, `rx-gro`…). Equivalent to `ethtool -k`.
    public static func features(of interface: String, in namespace: NamedNamespace? = nil) throws(PacketEngineError) -> [String: Bool] {
        let place = "\(interface) in \(namespaceText(namespace))"
        let control = try ControlSocket(namespace: namespace, place: place)
        let table = try control.table(interface, place: place)
        var result: [String: Bool] = [:]
        for (index, name) in table.names.enumerated() { result[name] = table.active.bit(index) }
        return result
    }

    /// Switches off every feature of `interface` for which `selecting` is true (default: the wire offloads,
    /// ``isWireOffload(_:)``) and checks that none of them is still active. Equivalent to
    /// `ethtool -K IFACE tx off sg off tso off gso off gro off …`. Returns the names switched off (those
    /// that were on). Throws when a selected feature stays on (the driver holds it fixed).
    @discardableResult
    public static func disable(
        on interface: String, in namespace: NamedNamespace? = nil, selecting: (String) -> Bool = isWireOffload
    ) throws(PacketEngineError) -> [String] {
        try set(false, on: interface, in: namespace, selecting: selecting)
    }

    /// Switches every feature of `interface` for which `selecting` is true on (`enabled`) or off, and checks
    /// the result. Returns the names whose state changed. Throws when a selected, changeable feature did not
    /// take the state (a feature the driver cannot change at all is skipped).
    @discardableResult
    public static func set(
        _ enabled: Bool, on interface: String, in namespace: NamedNamespace? = nil, selecting: (String) -> Bool
    ) throws(PacketEngineError) -> [String] {
        let place = "\(interface) in \(namespaceText(namespace))"
        let verb = "ethtool -K \(place): switch offloads \(enabled ? "on" : "off")"
        let control = try ControlSocket(namespace: namespace, place: place)
        let before = try control.table(interface, place: place)
        var valid = FeatureBits(words: before.words)
        var requested = FeatureBits(words: before.words)
        var changed: [String] = []
        for (index, name) in before.names.enumerated() where selecting(name) {
            // Only features the driver lets change (`available`); a fixed one is left as it is.
            guard before.available.bit(index) else { continue }
            valid.set(index)
            if enabled { requested.set(index) }
            if before.active.bit(index) != enabled { changed.append(name) }
        }
        let result = valid.storage.withUnsafeBufferPointer { validWords in
            requested.storage.withUnsafeBufferPointer { requestedWords in
                cpk_ethtool_set_features(
                    control.fileDescriptor, interface, UInt32(before.words), validWords.baseAddress, requestedWords.baseAddress)
            }
        }
        guard result >= 0 else { throw .system("\(verb) (ETHTOOL_SFEATURES)") }
        let after = try control.table(interface, place: place)
        // Switching off must leave nothing on, fixed or not; switching on only concerns what can change
        // (and what the kernel's dependencies allow, such as segmentation needing scatter-gather).
        let wrong = after.names.enumerated().filter { index, name in
            selecting(name) && after.active.bit(index) != enabled && (!enabled || before.available.bit(index))
        }.map(\.element)
        guard wrong.isEmpty else {
            throw PacketEngineError(operation: verb, detail: "still \(enabled ? "off" : "on"): \(wrong.joined(separator: ", "))")
        }
        return changed
    }
}

/// A bitmap in the kernel's `ethtool_*_features_block` layout: bit i of word i/32 is feature i.
struct FeatureBits {
    var storage: [UInt32]

    init(words: Int) {
        storage = [UInt32](repeating: 0, count: words)
    }

    func bit(_ index: Int) -> Bool {
        storage[index / 32] & (1 << UInt32(index % 32)) != 0
    }

    mutating func set(_ index: Int) {
        storage[index / 32] |= 1 << UInt32(index % 32)
    }
}

/// The feature names of an interface and their state.
struct FeatureTable {
    var names: [String]
    var words: Int { (names.count + 31) / 32 }
    var available: FeatureBits
    var active: FeatureBits
}

/// A datagram socket opened in a namespace, for interface ioctls there (it may be used from any thread);
/// closed with the object.
final class ControlSocket {
    private let socket: OwnedSocket
    var fileDescriptor: Int32 { socket.socket.rawValue }

    init(namespace: NamedNamespace?, place: String) throws(PacketEngineError) {
        do {
            // AF_PACKET exists in every namespace (IPv4 and IPv6 may be switched off).
            socket = try NamedNamespace.openSocket(.packetDatagram, in: namespace)
        } catch {
            throw .namespace("open a control socket for ethtool on \(place)", error)
        }
    }

    /// Names, changeable (`available`) and active features of `interface`.
    func table(_ interface: String, place: String) throws(PacketEngineError) -> FeatureTable {
        try PacketSocket.checkName(interface, place: place)
        let count = cpk_ethtool_feature_count(fileDescriptor, interface)
        guard count > 0 else { throw .system("ethtool -k \(place): count features (ETHTOOL_GSSET_INFO)") }
        var raw = [CChar](repeating: 0, count: Int(count) * Int(ETH_GSTRING_LEN))
        guard cpk_ethtool_feature_names(fileDescriptor, interface, &raw, UInt32(count)) >= 0 else {
            throw .system("ethtool -k \(place): read feature names (ETHTOOL_GSTRINGS)")
        }
        let names = (0..<Int(count)).map { index in
            raw[(index * Int(ETH_GSTRING_LEN))..<((index + 1) * Int(ETH_GSTRING_LEN))].withUnsafeBufferPointer { field in
                String(decoding: field.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        let words = (names.count + 31) / 32
        var available = FeatureBits(words: words)
        var requested = FeatureBits(words: words)
        var active = FeatureBits(words: words)
        var neverChanged = FeatureBits(words: words)
        guard cpk_ethtool_get_features(
            fileDescriptor, interface, UInt32(words), &available.storage, &requested.storage, &active.storage,
            &neverChanged.storage) >= 0
        else { throw .system("ethtool -k \(place): read features (ETHTOOL_GFEATURES)") }
        return FeatureTable(names: names, available: available, active: active)
    }
}
