import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink
import Sandboxing
import Synchronization
import XCTest

// Support for the attachment tests: a namespace built like a container's (an app namespace whose eth0 is a
// veth to a gateway namespace that routes to a server namespace), snapshots of a namespace as iproute2 shows
// it, a TCP connection that keeps talking while the tests splice and unsplice, and attachments with names
// and stores of their own that are detached however a test ends.

/// `app` (eth0 198.18.5.2/24, 2001:2:0:5::2/64, default routes via the gateway) ══ `gw` (app0, forwards) ══
/// `srv` (eth0 198.19.5.2/24, 2001:2:0:105::2/64): what a container on a bridge or a CNI's veth looks like
/// from inside, with the peer (`app0`) in a namespace of the test's own.
struct ContainerLikeTopology {
    let app: NamedNamespace
    let gateway: NamedNamespace
    let server: NamedNamespace

    static let appIPv4 = IPPrefix("198.18.5.2/24")!
    static let appIPv6 = IPPrefix("2001:2:0:5::2/64")!
    static let gatewayIPv4 = IPPrefix("198.18.5.1/24")!
    static let gatewayIPv6 = IPPrefix("2001:2:0:5::1/64")!
    static let serverIPv4 = IPPrefix("198.19.5.2/24")!
    static let serverIPv6 = IPPrefix("2001:2:0:105::2/64")!

    /// Builds it in namespaces the test case makes (removed when the test ends); `extras` adds to the app's
    /// eth0 what a real container may have beyond the plain setup (an alias, a route in another table, a
    /// sysctl of its own).
    static func make(in test: IntegrationTestCase, tag: String = "", extras: Bool = false) throws -> ContainerLikeTopology {
        let app = try test.makeNamespace("app\(tag)")
        let gateway = try test.makeNamespace("gw\(tag)")
        let server = try test.makeNamespace("srv\(tag)")
        let appLinks = try test.netlink(app), gatewayLinks = try test.netlink(gateway), serverLinks = try test.netlink(server)
        try test.withDescriptor(app) { descriptor in
            try gatewayLinks.createVeth(name: "app0", peerName: "eth0", peerIn: descriptor)
        }
        try test.withDescriptor(server) { descriptor in
            try gatewayLinks.createVeth(name: "srv0", peerName: "eth0", peerIn: descriptor)
        }
        try gateway.setSysctl("net.ipv4.ip_forward", "1")
        try gateway.setSysctl("net.ipv6.conf.all.forwarding", "1")
        for (links, name) in [(appLinks, "lo"), (gatewayLinks, "lo"), (serverLinks, "lo")] { try links.setLink(name, up: true) }
        try gatewayLinks.addAddress(gatewayIPv4, to: "app0")
        try gatewayLinks.addAddress(gatewayIPv6, to: "app0", noDAD: true)
        try gatewayLinks.addAddress(IPPrefix("198.19.5.1/24")!, to: "srv0")
        try gatewayLinks.addAddress(IPPrefix("2001:2:0:105::1/64")!, to: "srv0", noDAD: true)
        try appLinks.addAddress(appIPv4, to: "eth0")
        try appLinks.addAddress(appIPv6, to: "eth0", noDAD: true)
        try serverLinks.addAddress(serverIPv4, to: "eth0")
        try serverLinks.addAddress(serverIPv6, to: "eth0", noDAD: true)
        for name in ["app0", "srv0"] { try gatewayLinks.setLink(name, up: true) }
        try appLinks.setLink("eth0", up: true)
        try serverLinks.setLink("eth0", up: true)
        try appLinks.addRoute(destination: nil, gateway: gatewayIPv4.address, interface: "eth0")
        try appLinks.addRoute(destination: nil, gateway: gatewayIPv6.address, interface: "eth0")
        try serverLinks.addRoute(destination: nil, gateway: IPAddress("198.19.5.1")!, interface: "eth0")
        try serverLinks.addRoute(destination: nil, gateway: IPAddress("2001:2:0:105::1")!, interface: "eth0")
        if extras {
            for arguments in [
                ["addr", "add", "198.18.5.9/24", "dev", "eth0", "label", "eth0:9"],
                ["route", "add", "198.19.9.0/24", "via", "198.18.5.1", "dev", "eth0", "table", "100", "proto", "static", "metric", "7"],
                ["-6", "route", "add", "2001:2:0:9::/64", "via", "2001:2:0:5::1", "dev", "eth0", "metric", "300", "pref", "high"],
                ["link", "set", "dev", "eth0", "txqueuelen", "500"],
            ] {
                let result = try Command.ip(["-n", app.name] + arguments)
                XCTAssertEqual(result.status, 0, "ip \(arguments.joined(separator: " ")): \(result.errorOutput)")
            }
            try app.setSysctl("net.ipv4.conf.eth0.arp_announce", "2")
            try app.setSysctl("net.ipv6.conf.eth0.hop_limit", "42")
        }
        // Made means running: each veth end operationally up (the kernel's link watch marks it a moment after
        // the carrier, later in the VM, and adds its link-local address then), so a snapshot taken next shows
        // the topology as it stays (a VM run once took one with eth0 still NO-CARRIER).
        for (links, name) in [(appLinks, "eth0"), (serverLinks, "eth0"), (gatewayLinks, "app0"), (gatewayLinks, "srv0")] {
            XCTAssertTrue(try eventually(timeout: 5) { try links.link(named: name).operationalState == .up }, "\(name) is not operationally up")
        }
        // And the app's IPv6 address is in use: the kernel adds its local route (table local) from a work
        // queue a moment after the link is up (an attach that read eth0 before it once found the stand-in
        // with a route eth0 had not had).
        XCTAssertTrue(
            try eventually(timeout: 5) { try appLinks.routes(family: .inet6).contains { $0.type == .local && $0.destination?.address == appIPv6.address } },
            "the app's \(appIPv6) has no local route")
        return ContainerLikeTopology(app: app, gateway: gateway, server: server)
    }
}

/// A namespace as iproute2 shows it (`ip -j link`, `ip -j addr`, `ip -j route show table all`,
/// `ip -j -6 route show table all`) with the timers that run on by themselves taken out (address lifetimes,
/// route expiry), plus the sysctls of its interfaces and `ip netns list-id`. Two snapshots compare equal
/// when nothing but those timers changed; ``differences(_:)`` says where they do not.
struct NamespaceSnapshot: Equatable {
    var sections: [String: String]

    static let timers: Set<String> = ["valid_life_time", "preferred_life_time", "expires", "age", "used"]

    static func take(_ namespace: NamedNamespace, interfaces: [String] = ["eth0"], ignoring: Set<String> = []) throws -> NamespaceSnapshot {
        var sections: [String: String] = [:]
        for (name, arguments) in [
            ("link", ["link", "show"]), ("addr", ["addr", "show"]), ("route", ["route", "show", "table", "all"]),
            ("route6", ["-6", "route", "show", "table", "all"]),
        ] {
            let result = try Command.ip(["-n", namespace.name, "-j"] + arguments)
            XCTAssertEqual(result.status, 0, result.errorOutput)
            let value = try JSONSerialization.jsonObject(with: Data(result.output.utf8))
            sections[name] = normalized(value, dropping: timers.union(ignoring))
        }
        let ids = try Command.ip(["-n", namespace.name, "netns", "list-id"])
        sections["netns-ids"] = ids.output
        for interface in interfaces {
            let values = try namespace.readSysctls(under: [
                "net/ipv4/conf/\(interface)", "net/ipv6/conf/\(interface)", "net/ipv4/neigh/\(interface)", "net/ipv6/neigh/\(interface)",
            ])
            sections["sysctl \(interface)"] = values.filter { !$0.key.hasSuffix("/stable_secret") }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: "\n")
        }
        return NamespaceSnapshot(sections: sections)
    }

    /// JSON text with sorted keys and the keys in `dropping` taken out, at every depth.
    static func normalized(_ value: Any, dropping: Set<String>) -> String {
        func strip(_ value: Any) -> Any {
            if let object = value as? [String: Any] {
                return object.filter { !dropping.contains($0.key) }.mapValues(strip)
            }
            if let array = value as? [Any] { return array.map(strip) }
            return value
        }
        let data = (try? JSONSerialization.data(withJSONObject: strip(value), options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// This snapshot with `keys` taken out of every JSON section, and without the sections named in `sections`.
    func dropping(_ keys: Set<String>, sections omitted: Set<String> = []) -> NamespaceSnapshot {
        var copy = self
        for (name, text) in sections {
            if omitted.contains(name) {
                copy.sections[name] = nil
            } else if let value = try? JSONSerialization.jsonObject(with: Data(text.utf8)) {
                copy.sections[name] = Self.normalized(value, dropping: keys)
            }
        }
        return copy
    }

    /// The sections that differ: for JSON lists, the elements only one side has; for text, both lines.
    func differences(_ other: NamespaceSnapshot) -> String {
        sections.keys.sorted().compactMap { key -> String? in
            let mine = sections[key] ?? "", theirs = other.sections[key] ?? ""
            guard mine != theirs else { return nil }
            func elements(_ text: String) -> [String]? {
                guard let list = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any] else { return nil }
                return list.map { Self.normalized($0, dropping: []) }
            }
            if let a = elements(mine), let b = elements(theirs) {
                let gone = a.filter { !b.contains($0) }, new = b.filter { !a.contains($0) }
                return "\(key): only before: \(gone.joined(separator: ", ")); only after: \(new.joined(separator: ", "))"
            }
            let a = mine.split(separator: "\n"), b = theirs.split(separator: "\n")
            return "\(key): only before: \(a.filter { !b.contains($0) }.joined(separator: ", ")); only after: \(b.filter { !a.contains($0) }.joined(separator: ", "))"
        }.joined(separator: "\n")
    }

    /// Waits until no IPv6 address of `namespace` is tentative (duplicate address detection has finished), so
    /// a snapshot shows the namespace as it stays.
    static func settle(_ namespace: NamedNamespace) throws {
        let client = RouteNetlinkClient(connection: try namespace.openNetlinkConnection(), namespace: namespace.name)
        XCTAssertTrue(try eventually(timeout: 5) { try client.addresses().allSatisfy { !$0.isTentative } }, "\(namespace.name): DAD does not finish")
    }
}

/// A TCP connection from the app namespace to an echo server in the server namespace that sends a numbered
/// line every `interval` seconds and reads each echo back, until stopped; it records the longest wait for an
/// echo and whether the connection ever failed. What "an established connection keeps flowing" is measured by.
final class TalkingConnection: @unchecked Sendable {
    private let state = Mutex((sent: 0, echoed: 0, longestGap: 0.0, failure: String?.none))
    private let running = Atomic<Bool>(true)
    private var threads: [Thread] = []
    private let listener: Int32
    private let client: Int32

    init(from app: NamedNamespace, to server: NamedNamespace, address: IPAddress, port: UInt16 = 7777, interval: Double = 0.02) throws {
                listener = try server.run { () throws -> Int32 in
            let fd = socket(address.isIPv4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw NamespaceError.system(operation: "socket", errno: errno) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            try TestSocket.bind(fd, address, port: port)
            guard listen(fd, 4) == 0 else { throw NamespaceError.system(operation: "listen on port \(port)", errno: errno) }
            return fd
        }
        client = try app.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: address, type: Int32(SOCK_STREAM.rawValue), timeout: 5)
            guard TestSocket.connect(fd, address, port: port) == 0 else { throw NamespaceError.system(operation: "connect", errno: errno) }
            return fd
        }
        let accepted = accept(listener, nil, nil)
        guard accepted >= 0 else { throw NamespaceError.system(operation: "accept", errno: errno) }
        let echo = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while self.running.load(ordering: .relaxed) {
                let count = read(accepted, &buffer, buffer.count)
                if count <= 0 { break }
                _ = write(accepted, buffer, count)
            }
            close(accepted)
        }
        let talk = Thread { [self] in self.talk(interval: interval) }
        threads = [echo, talk]
        echo.start()
        talk.start()
    }

    private func talk(interval: Double) {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var number = 0
        var buffer = [UInt8](repeating: 0, count: 64)
        while running.load(ordering: .relaxed) {
            let line = Array("\(number)\n".utf8)
            let start = MonotonicClock.seconds()
            guard write(client, line, line.count) == line.count else {
                state.withLock { $0.failure = "write failed after \(number) lines: \(String(cString: strerror(errno)))" }
                return
            }
            state.withLock { $0.sent += 1 }
            var received: [UInt8] = []
            while received.count < line.count {
                let count = read(client, &buffer, line.count - received.count)
                guard count > 0 else {
                    state.withLock { $0.failure = "the echo of line \(number) never came: \(count == 0 ? "closed" : String(cString: strerror(errno)))" }
                    return
                }
                received += buffer[0..<count]
            }
            guard received == line else {
                state.withLock { $0.failure = "line \(number) came back as \(String(decoding: received, as: UTF8.self))" }
                return
            }
            let gap = MonotonicClock.seconds() - start
            state.withLock {
                $0.echoed += 1
                $0.longestGap = max($0.longestGap, gap)
            }
            number += 1
            usleep(UInt32(interval * 1_000_000))
        }
    }

    /// Lines echoed so far.
    var echoed: Int { state.withLock { $0.echoed } }
    /// The longest wait for an echo, in seconds.
    var longestGap: Double { state.withLock { $0.longestGap } }
    /// Why the connection stopped, if it did.
    var failure: String? { state.withLock { $0.failure } }

    /// Waits until `count` more lines have been echoed (the connection flows now); false after `timeout`.
    func flows(more count: Int = 5, timeout: Double = 10) -> Bool {
        let target = echoed + count
        return eventually(timeout: timeout, interval: 0.01) { echoed >= target || failure != nil } && failure == nil
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        shutdown(client, Int32(SHUT_RDWR))
        shutdown(listener, Int32(SHUT_RDWR))
        while threads.contains(where: { !$0.isFinished }) { usleep(5_000) }
        close(client)
        close(listener)
    }
}

/// An attachment with a unique name and a store of its own (in a temporary directory), detached and removed
/// when the test ends, pass or fail.
extension IntegrationTestCase {
    func makeAttachment() throws -> Attachment {
        let name = UniqueName.sandbox()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-store-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let attachment = try Attachment(name: name, store: SandboxStore(directory: directory))
        addTeardownBlock {
            if attachment.exists { _ = try? attachment.detach() }
            for namespace in [attachment.wireNamespace, attachment.targetNamespace] where NamedNamespace.exists(namespace) {
                Cleanup.removeNamespace(namespace)
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
        return attachment
    }
}
