import Foundation
import LinkcondSystem
import XCTest

final class DescriptorTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-system-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func testErrnoNamesAndText() {
        XCTAssertEqual(Errno.interrupted.rawValue, EINTR)
        XCTAssertEqual(Errno.badFileDescriptor.rawValue, EBADF)
        XCTAssertEqual(Errno.connectionRefused.rawValue, ECONNREFUSED)
        XCTAssertEqual(Errno.nowInProgress.rawValue, EINPROGRESS)
        XCTAssertEqual(Errno.wouldBlock, Errno.resourceTemporarilyUnavailable)
        XCTAssertEqual(Errno.interrupted.description, "Interrupted system call")
        XCTAssertEqual("\(Errno.connectionRefused)", "Connection refused")
        XCTAssertEqual(Errno.noSuchFileOrDirectory.description, "No such file or directory")
        Errno.current = .timedOut
        XCTAssertEqual(errno, ETIMEDOUT)
        XCTAssertEqual(Errno.current, .timedOut)
    }

    /// Plain `fcntl(F_GETFD)`: is `FD_CLOEXEC` set on `fd`?
    private func closeOnExec(_ fd: Int32) -> Bool {
        fcntl(fd, F_GETFD) & FD_CLOEXEC != 0
    }

    func testFilesAndPipesAreCloseOnExecByDefault() throws {
        let file = try FileDescriptor.open("/dev/null", .readOnly)
        defer { try? file.close() }
        XCTAssertTrue(closeOnExec(file.rawValue))
        XCTAssertTrue(try file.isCloseOnExec())
        let inherited = try FileDescriptor.open("/dev/null", .readOnly, closeOnExec: false)
        defer { try? inherited.close() }
        XCTAssertFalse(closeOnExec(inherited.rawValue), "the control: asked for, the flag is clear")
        try inherited.setCloseOnExec()
        XCTAssertTrue(closeOnExec(inherited.rawValue))

        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer {
            try? readEnd.close()
            try? writeEnd.close()
        }
        XCTAssertTrue(closeOnExec(readEnd.rawValue))
        XCTAssertTrue(closeOnExec(writeEnd.rawValue))
        let copy = try readEnd.duplicate()
        defer { try? copy.close() }
        XCTAssertTrue(closeOnExec(copy.rawValue))
    }

    func testSocketsAreCloseOnExecByDefault() throws {
        let datagram = try SocketDescriptor.open(.udp(.inet))
        defer { try? datagram.close() }
        XCTAssertTrue(closeOnExec(datagram.rawValue))
        XCTAssertFalse(try datagram.fileDescriptor.isNonBlocking())
        let inherited = try SocketDescriptor.open(.udp(.inet), nonBlocking: true, closeOnExec: false)
        defer { try? inherited.close() }
        XCTAssertFalse(closeOnExec(inherited.rawValue), "the control: asked for, the flag is clear")
        XCTAssertTrue(try inherited.fileDescriptor.isNonBlocking())

        let (left, right) = try SocketDescriptor.pair()
        defer {
            try? left.close()
            try? right.close()
        }
        XCTAssertTrue(closeOnExec(left.rawValue))
        XCTAssertTrue(closeOnExec(right.rawValue))

        // accept4: the accepted socket is close-on-exec too.
        let path = try XCTUnwrap(UnixSocketAddress(path: "\(directory)/listener.sock"))
        let listener = try SocketDescriptor.open(.unixStream)
        defer { try? listener.close() }
        try listener.bind(to: path)
        try listener.listen()
        let client = try SocketDescriptor.open(.unixStream)
        defer { try? client.close() }
        XCTAssertTrue(try client.connect(to: path))
        let accepted = try listener.accept()
        defer { try? accepted.close() }
        XCTAssertTrue(closeOnExec(accepted.rawValue))
        try [UInt8]("ping".utf8).withUnsafeBytes { try client.sendAll($0) }
        var buffer = [UInt8](repeating: 0, count: 8)
        let count = try buffer.withUnsafeMutableBytes { try accepted.receive(into: $0) }
        XCTAssertEqual(Array(buffer.prefix(count)), Array("ping".utf8))
    }

    func testOwnedDescriptorClosesWhenItGoesAway() throws {
        var number: Int32 = -1
        do {
            let owned = try OwnedFileDescriptor.open("/dev/null", .readOnly)
            number = owned.descriptor.rawValue
            XCTAssertGreaterThanOrEqual(fcntl(number, F_GETFD), 0, "open while owned")
        }
        XCTAssertEqual(fcntl(number, F_GETFD), -1)
        XCTAssertEqual(errno, EBADF, "the owner's deinit closed it")

        do {
            let owned = try OwnedSocket.open(.udp(.inet6))
            number = owned.socket.rawValue
            XCTAssertGreaterThanOrEqual(fcntl(number, F_GETFD), 0)
        }
        XCTAssertEqual(fcntl(number, F_GETFD), -1)
        XCTAssertEqual(errno, EBADF)

        // The control: a released descriptor stays open.
        let released = try OwnedFileDescriptor.open("/dev/null", .readOnly).release()
        XCTAssertGreaterThanOrEqual(fcntl(released.rawValue, F_GETFD), 0)
        try released.close()
        XCTAssertEqual(fcntl(released.rawValue, F_GETFD), -1)
    }

    func testErrorsNameTheOperation() throws {
        let missing = "\(directory)/none/file"
        XCTAssertThrowsError(try FileDescriptor.open(missing, .readOnly)) { error in
            XCTAssertEqual("\(error)", "open \(missing): No such file or directory")
            XCTAssertEqual((error as? SystemError)?.errno, .noSuchFileOrDirectory)
        }
        let path = try XCTUnwrap(UnixSocketAddress(path: "\(directory)/x.sock"))
        let socket = try SocketDescriptor.open(.unixStream)
        defer { try? socket.close() }
        XCTAssertThrowsError(try socket.connect(to: path)) { error in
            XCTAssertEqual("\(error)", "connect \(directory)/x.sock: No such file or directory")
        }

        // A TCP port nothing listens on: bind one, note it, close it.
        let probe = try SocketDescriptor.open(.tcp(.inet))
        try probe.bind(to: loopback(port: 0))
        let port = try probe.localAddress()
        try probe.close()
        XCTAssertTrue(port.description.hasPrefix("127.0.0.1:"))
        let client = try SocketDescriptor.open(.tcp(.inet), nonBlocking: true)
        defer { try? client.close() }
        XCTAssertThrowsError(try client.connect(to: port, timeout: 5)) { error in
            XCTAssertEqual("\(error)", "connect \(port): Connection refused")
            XCTAssertEqual((error as? SystemError)?.errno, .connectionRefused)
        }
        XCTAssertThrowsError(try SocketDescriptor.open(SocketKind(.inet, .stream, protocol: 255))) { error in
            XCTAssertEqual("\(error)", "socket AF_INET SOCK_STREAM 255: Protocol not supported")
        }
        XCTAssertThrowsError(try socket.setOption(SocketOption.tcpInfo, Int32(1))) { error in
            XCTAssertTrue("\(error)".hasPrefix("setsockopt TCP_INFO: "), "\(error)")
        }
    }

    func testDatagramsCarryTheirSenderBack() throws {
        let server = try SocketDescriptor.open(.udp(.inet))
        defer { try? server.close() }
        try server.bind(to: loopback(port: 0))
        let address = try server.localAddress()
        let client = try SocketDescriptor.open(.udp(.inet))
        defer { try? client.close() }
        try client.bind(to: loopback(port: 0))
        _ = try [UInt8]("hello".utf8).withUnsafeBytes { try client.send($0, to: address) }
        var sender = SocketAddressStorage()
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { try server.receive(into: $0, from: &sender) }
        XCTAssertEqual(Array(buffer.prefix(count)), Array("hello".utf8))
        XCTAssertEqual(sender.description, try client.localAddress().description)
        _ = try [UInt8]("back".utf8).withUnsafeBytes { try server.send($0, to: sender) }
        let answer = try buffer.withUnsafeMutableBytes { try client.receive(into: $0) }
        XCTAssertEqual(Array(buffer.prefix(answer)), Array("back".utf8))
    }

    func testFilesAreWrittenAndReadWhole() throws {
        let path = "\(directory)/data"
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let file = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate])
        XCTAssertEqual(try file.writeAll(bytes), bytes.count)
        try file.close()
        XCTAssertThrowsError(try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate])) {
            XCTAssertEqual(($0 as? SystemError)?.errno, .fileExists)
        }
        let reader = try FileDescriptor.open(path, .readOnly)
        let whole = try reader.closeAfter { () throws(SystemError) in try reader.readToEnd() }
        XCTAssertEqual(whole, bytes)
        let again = try OwnedFileDescriptor.open(path, .readOnly)
        XCTAssertEqual(try again.descriptor.readToEnd(maximumCount: 100_001).count, 100_001)
        var four = [UInt8](repeating: 0, count: 4)
        _ = try four.withUnsafeMutableBytes { try again.descriptor.read(fromAbsoluteOffset: 10, into: $0) }
        XCTAssertEqual(four, Array(bytes[10..<14]))
        XCTAssertEqual(try again.descriptor.status().st_size, off_t(bytes.count))
    }

    /// 127.0.0.1:`port` as the kernel would write it.
    private func loopback(port: UInt16) -> SocketAddressStorage {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.storeBytes(of: sa_family_t(AF_INET), toByteOffset: 0, as: sa_family_t.self)
            raw.storeBytes(of: port.bigEndian, toByteOffset: 2, as: UInt16.self)
            raw.storeBytes(of: UInt32(0x7f00_0001).bigEndian, toByteOffset: 4, as: UInt32.self)
        }
        return SocketAddressStorage(storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
    }
}
