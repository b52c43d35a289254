import Glibc
import LinkcondSystem
import NetNamespace
import RouteNetlink
import XCTest

/// NetNamespace's socket factory, and the link notifications that ride on it.
final class SocketFactoryTests: IntegrationTestCase {
    /// The inode of the network namespace `socket` belongs to: `SIOCGSKNS` opens a descriptor of it.
    private func socketNamespaceInode(_ socket: SocketDescriptor) throws -> UInt {
        let namespace = ioctl(socket.rawValue, 0x894C /* SIOCGSKNS */)
        guard namespace >= 0 else { throw SystemError("ioctl SIOCGSKNS", .current) }
        let file = FileDescriptor(rawValue: namespace)
        defer { try? file.close() }
        return UInt(try file.status().st_ino)
    }

    private func isCloseOnExec(_ socket: SocketDescriptor) -> Bool {
        fcntl(socket.rawValue, F_GETFD) & FD_CLOEXEC != 0
    }

    func testSocketsBelongToTheNamespaceTheyWereOpenedFor() throws {
        let a = try makeNamespace("sfa")
        let b = try makeNamespace("sfb")
        let inodeA = namespaceInode(a.path), inodeB = namespaceInode(b.path)
        let own = currentThreadNamespaceInode()
        XCTAssertEqual(Set([inodeA, inodeB, own]).count, 3)

        let udp = try a.openSocket(.udp(.inet))
        XCTAssertEqual(try socketNamespaceInode( udp.socket), inodeA)
        XCTAssertTrue(isCloseOnExec(udp.socket))
        XCTAssertEqual(currentThreadNamespaceInode(), own, "the caller's thread never moved")

        let here = try NamedNamespace.openSocket(.packetDatagram, in: nil, nonBlocking: true)
        XCTAssertEqual(try socketNamespaceInode( here.socket), own)
        XCTAssertTrue(try here.socket.fileDescriptor.isNonBlocking())

        var batch = try NamedNamespace.openSockets([.routeNetlink, .tcp(.inet6), .packet], in: b)
        XCTAssertEqual(batch.count, 3)
        for index in 0..<3 {
            guard let socket = batch.take(index) else { return XCTFail("slot \(index) is empty") }
            XCTAssertEqual(try socketNamespaceInode( socket.socket), inodeB, "slot \(index)")
            XCTAssertTrue(isCloseOnExec(socket.socket))
        }
        XCTAssertTrue(batch.take(0) == nil, "a slot is taken once")

        // One thread for several namespaces; a namespace that went away gets nothing.
        let gone = try makeNamespace("sfgone")
        try gone.delete()
        var each = NamedNamespace.openSockets(.udp(.inet), inEach: [a, gone, b])
        for (index, expected) in [(0, inodeA), (2, inodeB)] {
            guard let socket = each.take(index) else { return XCTFail("no socket in slot \(index)") }
            XCTAssertEqual(try socketNamespaceInode(socket.socket), expected)
        }
        XCTAssertTrue(each.take(1) == nil)

        // A fresh namespace of its own, alive as long as its socket: a netlink socket there sees only lo.
        let fresh = try NamedNamespace.openSocketInNewNamespace(.routeNetlink)
        XCTAssertFalse([inodeA, inodeB, own].contains(try socketNamespaceInode( fresh.socket)))
        let links = try RouteNetlinkClient(adopting: fresh, namespace: nil).links()
        XCTAssertEqual(links.map(\.name), ["lo"])
    }

    func testOpeningInAMissingNamespaceNamesIt() throws {
        let gone = try makeNamespace("sfmissing")
        try gone.delete()
        let error = expectError(NamespaceError.self) { try gone.openSocket(.udp(.inet)).socket.rawValue }
        XCTAssertEqual(error, .notFound(name: gone.name))
    }

    func testLinkNotificationsCarryTheNamespacesLinkChanges() throws {
        let namespace = try makeNamespace("notify")
        let links = try netlink(namespace)
        let notifications = try LinkNotifications(adopting: try namespace.openSocket(.routeNetlink))
        XCTAssertTrue(try notifications.readinessDescriptor.isCloseOnExec())
        XCTAssertTrue(try notifications.drain().isEmpty, "nothing yet, and drain does not wait")

        try links.createVeth(name: "nt0", peerName: "nt1")
        XCTAssertEqual(try notifications.readinessDescriptor.poll(for: Int16(POLLIN), timeoutMilliseconds: 5000) & Int16(POLLIN), Int16(POLLIN))
        let created = try notifications.drain()
        XCTAssertFalse(created.overrun)
        let names = Set(try created.notifications().compactMap { notification -> String? in
            if case let .newLink(link) = notification { return link.name }
            return nil
        })
        XCTAssertEqual(names, ["nt0", "nt1"])

        try links.setLink("nt0", up: true)
        XCTAssertTrue(try eventually {
            try notifications.drain().notifications().contains { notification in
                if case let .newLink(link) = notification { return link.name == "nt0" && link.isUp }
                return false
            }
        })
        // A change in another namespace is not reported here.
        let other = try makeNamespace("notifyother")
        try netlink(other).createVeth(name: "ot0", peerName: "ot1")
        usleep(100_000)
        XCTAssertTrue(try notifications.drain().isEmpty)
    }
}
