import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import RouteNetlink
import Sandboxing
import XCTest

/// The splice itself, joined with `mirred` redirects (the netem backend's wire, which needs no netem to
/// carry traffic unconditioned): on a namespace built like a container, attach and detach leave the target
/// as it was — `ip -j link`, `addr`, `route`, `-6 route` (every table) and the interface's sysctls equal
/// before, during (but for the stand-in's link-netnsid) and after — the peer's namespace the same but for
/// its link-netnsid while attached, the host's untouched, and a TCP connection opened before keeps talking
/// throughout.
final class AttachmentSpliceTests: SandboxTestCase {
    func testTheSpliceKeepsTheTargetAsItWasAndConnectionsFlowing() throws {
        try checkSplice("mirred wire") { attachment, topology in
            try attachment.attach(try AttachmentTarget.namespace(topology.app.name).resolve(), Attachment.Configuration(join: .redirect, backend: "netem"))
        }
    }

    /// The same through the engine (the userspace backend), with conditions applied and cleared while
    /// attached: the connections keep talking through attach, apply, clear and detach; a socket bound to
    /// eth0 by name (SO_BINDTODEVICE) before the attach sends through the stand-in (it has the same index);
    /// a bulk transfer crosses at the engine's speed (the peer's super-frames cut in the engine).
    func testTheEngineSpliceKeepsTheTargetAsItWasThroughApplyAndClear() throws {
        var bound: Int32 = -1
        defer { if bound >= 0 { close(bound) } }
        try checkSplice("engine", before: { topology in
            bound = try topology.app.run { () throws -> Int32 in
                let fd = try TestSocket.open(for: ContainerLikeTopology.serverIPv4.address, type: Int32(SOCK_DGRAM.rawValue))
                let device = Array("eth0".utf8CString)
                guard setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device, socklen_t(device.count)) == 0 else {
                    throw NamespaceError.system(operation: "SO_BINDTODEVICE eth0", errno: errno)
                }
                return fd
            }
        }, attach: { attachment, topology in
            let conditioning = AttachmentConditioning(attachment: attachment, engineExecutable: try linkcondExecutable())
            _ = try conditioning.attach(.namespace(topology.app.name), backend: .userspace)
        }, whileAttached: { attachment, topology, connections in
            // The socket bound to eth0 before the attach reaches the server through the stand-in.
            let listener = try topology.server.run { () throws -> Int32 in
                let fd = try TestSocket.open(for: ContainerLikeTopology.serverIPv4.address, type: Int32(SOCK_DGRAM.rawValue))
                try TestSocket.bind(fd, ContainerLikeTopology.serverIPv4.address, port: 7779)
                return fd
            }
            defer { close(listener) }
            XCTAssertEqual(TestSocket.send(bound, Array("bound".utf8), to: ContainerLikeTopology.serverIPv4.address, port: 7779), 0, "SO_BINDTODEVICE socket")
            XCTAssertEqual((try? TestSocket.receive(listener))?.bytes, Array("bound".utf8), "the socket bound to eth0 before the attach sends nothing")
            let mbit = try Self.bulkTransfer(from: topology.app, to: topology.server, megabytes: 64)
            print("linkcond-attach: bulk TCP through the attached engine (no conditions): \(String(format: "%.0f", mbit)) Mbit/s")
            let backend = try AttachmentConditioning(attachment: attachment).backend()
            let lte = try ProfileCatalog.locate(directory: Self.catalogDirectory).profile(named: "lte")
            try backend.apply(lte)
            for connection in connections { XCTAssertTrue(connection.flows(), "stopped at apply: \(connection.failure ?? "stalled")") }
            try backend.clear()
            for connection in connections { XCTAssertTrue(connection.flows(), "stopped at clear: \(connection.failure ?? "stalled")") }
        })
    }

    /// Splices with `attach`, checks the target before, during and after (and its peer's namespace, the host
    /// namespace), with TCP connections over both families talking throughout.
    func checkSplice(
        _ label: String, before prepare: (ContainerLikeTopology) throws -> Void = { _ in }, attach: (Attachment, ContainerLikeTopology) throws -> Void,
        whileAttached: (Attachment, ContainerLikeTopology, [TalkingConnection]) throws -> Void = { _, _, _ in }
    ) throws {
        let topology = try ContainerLikeTopology.make(in: self, extras: true)
        let attachment = try makeAttachment()
        for namespace in [topology.app, topology.gateway] { try NamespaceSnapshot.settle(namespace) }
        let host = try HostSnapshot.take()
        let before = try NamespaceSnapshot.take(topology.app)
        let gatewayBefore = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
        try prepare(topology)
        let v4 = try TalkingConnection(from: topology.app, to: topology.server, address: ContainerLikeTopology.serverIPv4.address)
        defer { v4.stop() }
        let v6 = try TalkingConnection(from: topology.app, to: topology.server, address: ContainerLikeTopology.serverIPv6.address, port: 7778)
        defer { v6.stop() }
        XCTAssertTrue(v4.flows() && v6.flows(), "the connections do not flow before the attach: \(v4.failure ?? v6.failure ?? "-")")

        try attach(attachment, topology)
        XCTAssertEqual(attachment.record?.interface, "eth0", "the interface of the default route")
        XCTAssertTrue(v4.flows(), "IPv4 stopped at the attach: \(v4.failure ?? "stalled")")
        XCTAssertTrue(v6.flows(), "IPv6 stopped at the attach: \(v6.failure ?? "stalled")")
        // The stand-in reads as the original did, but for its peer: the wire's end, in another namespace (its
        // link-netnsid, and its index where the original took the peer's in the wire, as here, where both are 2),
        // and the id the wire gets in the target's and the peer's lists of namespaces.
        let during = try NamespaceSnapshot.take(topology.app).dropping(["link_netnsid", "link_index"], sections: ["netns-ids"])
        let expected = before.dropping(["link_netnsid", "link_index"], sections: ["netns-ids"])
        XCTAssertTrue(expected == during, "the target differs while attached:\n\(expected.differences(during))")
        let gatewayDuring = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"]).dropping(["link_netnsid"], sections: ["netns-ids"])
        let gatewayExpected = gatewayBefore.dropping(["link_netnsid"], sections: ["netns-ids"])
        XCTAssertTrue(gatewayExpected == gatewayDuring, "the peer's namespace differs while attached:\n\(gatewayExpected.differences(gatewayDuring))")
        let wire = try netlink(NamedNamespace(existing: attachment.wireNamespace)).links()
        XCTAssertEqual(wire.first { $0.name == "eth0" }?.index, before.interfaceIndex("eth0"), "the original keeps its index in the wire")
        XCTAssertNotNil(try netlink(topology.app).link(named: "eth0").linkNamespaceID, "the stand-in's peer is in the wire")
        try whileAttached(attachment, topology, [v4, v6])

        let report = try attachment.detach()
        XCTAssertTrue(report.movedHome, "\(report)")
        XCTAssertEqual(report.notes, [])
        XCTAssertTrue(v4.flows(), "IPv4 stopped at the detach: \(v4.failure ?? "stalled")")
        XCTAssertTrue(v6.flows(), "IPv6 stopped at the detach: \(v6.failure ?? "stalled")")
        var after = try NamespaceSnapshot.take(topology.app)
        // The wire's id in the target goes when the wire namespace is freed, which the kernel does a moment later.
        _ = try eventually(timeout: 5) {
            after = try NamespaceSnapshot.take(topology.app)
            return after == before
        }
        XCTAssertTrue(before == after, "the target differs after detach:\n\(before.differences(after))")
        var gatewayAfter = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
        _ = try eventually(timeout: 5) {
            gatewayAfter = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
            return gatewayAfter == gatewayBefore
        }
        XCTAssertTrue(gatewayBefore == gatewayAfter, "the peer's namespace differs after detach:\n\(gatewayBefore.differences(gatewayAfter))")
        XCTAssertEqual(host, try HostSnapshot.take(), "the host namespace changed")
        XCTAssertFalse(NamedNamespace.exists(attachment.wireNamespace))
        XCTAssertFalse(NamedNamespace.exists(attachment.targetNamespace))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: attachment.store.directory), [], "files left in the store")
        XCTAssertNil(v4.failure)
        XCTAssertNil(v6.failure)
        print("linkcond-attach: TCP through attach and detach (\(label)): IPv4 \(v4.echoed) lines, longest echo wait \(Int(v4.longestGap * 1000)) ms; "
            + "IPv6 \(v6.echoed) lines, longest \(Int(v6.longestGap * 1000)) ms")
    }

    static var catalogDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("profiles").path
    }

    /// Sends `megabytes` MiB over TCP from `client` to a reader in `server` (the container-like server's IPv4
    /// address); returns the rate in Mbit/s.
    static func bulkTransfer(from client: NamedNamespace, to server: NamedNamespace, megabytes: Int) throws -> Double {
        let address = ContainerLikeTopology.serverIPv4.address
        let listener = try server.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: address, type: Int32(SOCK_STREAM.rawValue), timeout: 10)
            try TestSocket.bind(fd, address, port: 7780)
            guard listen(fd, 1) == 0 else { throw NamespaceError.system(operation: "listen", errno: errno) }
            return fd
        }
        defer { close(listener) }
        let sender = try client.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: address, type: Int32(SOCK_STREAM.rawValue), timeout: 10)
            guard TestSocket.connect(fd, address, port: 7780) == 0 else { throw NamespaceError.system(operation: "connect", errno: errno) }
            return fd
        }
        defer { close(sender) }
        let reader = accept(listener, nil, nil)
        guard reader >= 0 else { throw NamespaceError.system(operation: "accept", errno: errno) }
        let total = megabytes << 20
        let received = ResultBox<Int>()
        let thread = Thread { [received] in
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var count = 0
            while count < total {
                let n = read(reader, &buffer, buffer.count)
                if n <= 0 { break }
                count += n
            }
            received.result = .success(count)
            close(reader)
        }
        let start = MonotonicClock.seconds()
        thread.start()
        let chunk = [UInt8](repeating: 0x42, count: 1 << 16)
        var sent = 0
        while sent < total {
            let n = write(sender, chunk, min(chunk.count, total - sent))
            guard n > 0 else { throw NamespaceError.system(operation: "write after \(sent) bytes", errno: errno) }
            sent += n
        }
        while !thread.isFinished { usleep(1000) }
        let seconds = MonotonicClock.seconds() - start
        XCTAssertEqual(try received.result?.get(), total, "the transfer did not arrive whole")
        return Double(total * 8) / seconds / 1e6
    }
}

extension NamespaceSnapshot {
    /// The index `ip -j link` gave `name`.
    func interfaceIndex(_ name: String) -> Int32? {
        guard let text = sections["link"], let links = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else { return nil }
        return (links.first { $0["ifname"] as? String == name }?["ifindex"] as? NSNumber).map { Int32($0.intValue) }
    }
}
