import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import PacketEngine
import RouteNetlink

// Topologies for the engine rows of linkcond-bench, each in namespaces of its own named
// `lcb<pid>-<tag>-{client,wire,router}`, removed when the row is done (or the bench fails).

/// A client and a router namespace, joined directly by a veth pair or through a wire namespace.
final class BenchLab {
    static let clientV4 = IPAddress("198.18.20.2")!
    static let routerV4 = IPAddress("198.18.20.1")!

    let client: NamedNamespace
    let router: NamedNamespace
    /// The wire namespace; nil for a bare veth pair.
    let wire: NamedNamespace?
    private var namespaces: [NamedNamespace]

    /// The wire's ends, for the engine or the bare forwarder.
    var ends: WireEnds? { wire.map { WireEnds(namespace: $0, clientSide: "cl-wl0", routerSide: "rt-wl0") } }

    /// Builds a lab. `throughWire`: client ⇄ wire ⇄ router, the wire prepared as the engine needs it
    /// (IPv6 off, offloads off on the wire ends, the peers prepared for `mode`); otherwise one veth pair
    /// client ⇄ router, with its offloads as veth sets them unless `offloadsOff`. `keepOffloads` leaves every
    /// offload but GRO on, on the wire ends and the peers (the bare forwarder's `--vnet` experiment).
    /// `groOnPeers` switches GRO on where the peers receive (veth then uses NAPI and coalesces validated segments).
    init(
        tag: String, throughWire: Bool, offloadsOff: Bool = false, mode: OffloadMode = .disabled, keepOffloads: Bool = false,
        groOnPeers: Bool = false
    ) throws {
        let base = "lcb\(getpid())-\(tag)"
        namespaces = []
        var made: [NamedNamespace] = []
        do {
            let client = try NamedNamespace.create("\(base)-client")
            made.append(client)
            let router = try NamedNamespace.create("\(base)-router")
            made.append(router)
            let wire = throughWire ? try NamedNamespace.create("\(base)-wire") : nil
            if let wire { made.append(wire) }
            let clientLinks = RouteNetlinkClient(connection: try client.openNetlinkConnection(), namespace: client.name)
            let routerLinks = RouteNetlinkClient(connection: try router.openNetlinkConnection(), namespace: router.name)
            if let wire {
                let wireLinks = RouteNetlinkClient(connection: try wire.openNetlinkConnection(), namespace: wire.name)
                try Self.withDescriptors(client, router) { inClient, inRouter in
                    try wireLinks.createVeth(name: "cl-wl0", index: 21, peerName: "wl0", peerIndex: 11, peerIn: inClient)
                    try wireLinks.createVeth(name: "rt-wl0", index: 22, peerName: "c-wl0", peerIndex: 12, peerIn: inRouter)
                }
            } else {
                try Self.withDescriptors(client, router) { inClient, inRouter in
                    try clientLinks.createVeth(name: "wl0", index: 11, in: inClient, peerName: "c-wl0", peerIndex: 12, peerIn: inRouter)
                }
            }
            for (links, name, address) in [(clientLinks, "wl0", Self.clientV4), (routerLinks, "c-wl0", Self.routerV4)] {
                try links.setLink("lo", up: true)
                try links.addAddress(IPPrefix(address: address, length: 24)!, to: name)
                try links.setLink(name, up: true)
            }
            if let wire, keepOffloads {
                let wireLinks = RouteNetlinkClient(connection: try wire.openNetlinkConnection(), namespace: wire.name)
                for key in ["all", "default", "cl-wl0", "rt-wl0"] { try wire.setSysctl("net.ipv6.conf.\(key).disable_ipv6", "1") }
                for end in ["cl-wl0", "rt-wl0"] {
                    try InterfaceOffloads.disable(on: end, in: wire) { $0.hasPrefix("rx-gro") || $0 == "rx-lro" }
                    try wireLinks.setLink(end, up: true)
                }
            } else if let wire {
                try WirePreparation.prepare(WireEnds(namespace: wire, clientSide: "cl-wl0", routerSide: "rt-wl0"))
            }
            if (throughWire && !keepOffloads) || offloadsOff {
                try WirePreparation.preparePeer("wl0", in: client, mode: mode)
                try WirePreparation.preparePeer("c-wl0", in: router, mode: mode)
            }
            if groOnPeers {
                try InterfaceOffloads.set(true, on: "wl0", in: client) { $0 == "rx-gro" }
                try InterfaceOffloads.set(true, on: "c-wl0", in: router) { $0 == "rx-gro" }
            }
            self.client = client
            self.router = router
            self.wire = wire
            namespaces = made
        } catch {
            for namespace in made { try? namespace.delete() }
            throw error
        }
    }

    /// Removes the lab's namespaces (and with them its veths).
    func remove() {
        for namespace in namespaces { try? namespace.delete() }
        namespaces = []
    }

    deinit {
        remove()
    }

    private static func withDescriptors(
        _ first: NamedNamespace, _ second: NamedNamespace, _ body: (NamespaceDescriptor, NamespaceDescriptor) throws -> Void
    ) throws {
        let a = try OwnedFileDescriptor.open(first.path, .readOnly)
        let b = try OwnedFileDescriptor.open(second.path, .readOnly)
        try body(
            NamespaceDescriptor(fileDescriptor: a.descriptor.rawValue, name: first.name),
            NamespaceDescriptor(fileDescriptor: b.descriptor.rawValue, name: second.name))
    }
}

/// The bare C forwarder (`bare-forwarder`, built next to linkcond-bench) running in a lab's wire namespace.
final class BareForwarder {
    let process: SpawnedProcess

    /// Starts it between the wire's ends and waits (at most 5 s) until it reports that it is bound. With
    /// `vnet`, GSO super-frames cross whole with partial checksums (an experiment for the ceiling only).
    init(_ ends: WireEnds, vnet: Bool = false) throws {
        guard let wire = ends.namespace else { throw BenchFailure("the bare forwarder needs a wire namespace") }
        let executable = Self.executablePath()
        guard access(executable, X_OK) == 0 else { throw BenchFailure("\(executable) is missing: build the bare-forwarder product") }
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { try? readEnd.close() }
        do {
            process = try wire.spawn(
                executable, arguments: (vnet ? ["--vnet"] : []) + [ends.clientSide, ends.routerSide], standardOutput: writeEnd.rawValue)
        } catch {
            try? writeEnd.close()
            throw error
        }
        try? writeEnd.close()
        var buffer = [UInt8](repeating: 0, count: 64)
        guard (try? readEnd.poll(for: Int16(POLLIN), timeoutMilliseconds: 5000)) ?? 0 != 0,
            (try? buffer.withUnsafeMutableBytes { try readEnd.read(into: $0) }) ?? 0 > 0,
            String(decoding: buffer, as: UTF8.self).hasPrefix("ready")
        else {
            process.send(signal: SIGKILL)
            _ = try? process.wait()
            throw BenchFailure("bare-forwarder did not start within 5 s")
        }
    }

    /// User plus system CPU time the forwarder has used so far, in nanoseconds (`/proc/PID/stat`).
    var cpuTime: UInt64 {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After "comm)": field 14 (utime) and 15 (stime) of the whole line are at 11 and 12 here.
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return 0 }
        return (user + system) * 1_000_000_000 / UInt64(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        process.send(signal: SIGTERM)
        _ = try? process.wait()
    }

    private static func executablePath() -> String {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("bare-forwarder").path
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
