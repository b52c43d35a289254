import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem

/// A minimal HTTP/1.1 client of the control API for the tests: one request per connection, over the Unix
/// socket or a loopback TCP port, the answer read until the server closes.
struct APITestClient {
    enum Target {
        case unix(String)
        case tcp(UInt16)
    }

    let target: Target

    init(socket: String) { target = .unix(socket) }
    init(tcpPort: UInt16) { target = .tcp(tcpPort) }

    struct Answer {
        var status: Int
        var headers: [(String, String)]
        var text: String

        var object: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        }

        var array: [Any] {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [Any] ?? []
        }

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    func connect() throws -> OwnedSocket {
        switch target {
        case let .unix(path):
            let owned = try OwnedSocket.open(.unixStream)
            try owned.socket.connect(to: UnixSocketAddress(path: path)!)
            return owned
        case let .tcp(port):
            let owned = try OwnedSocket.open(.tcp(.inet))
            try owned.socket.connect(to: SocketAddress(ip: "127.0.0.1", port: port)!)
            return owned
        }
    }

    static func head(_ method: String, _ path: String, body: String?, headers: [String: String]) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: linkcond\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        return text + "\r\n" + (body ?? "")
    }

    func request(_ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:], timeout: Double = 30) throws -> Answer {
        let connection = try connect()
        try connection.socket.setTimeout(seconds: timeout)
        do {
            try Array(Self.head(method, path, body: body, headers: headers).utf8).withUnsafeBytes {
                try connection.socket.sendAll($0, flags: Int32(MSG_NOSIGNAL))
            }
        } catch let error as SystemError where error.errno == .brokenPipe || error.errno == .connectionReset {
            // The server answered before reading (a 503 past the connection cap) and closed: its answer is
            // still there to read, as an HTTP client reads it.
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try connection.socket.receive(into: $0) }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        return try Self.parse(bytes)
    }

    static func parse(_ bytes: [UInt8]) throws -> Answer {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no complete answer: \(text)") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw Failure(description: "no status line: \(text)")
        }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return Answer(status: status, headers: headers, text: String(text[split.upperBound...]))
    }

    /// A streaming request (the events): read line by line, chunk framing removed.
    final class Stream {
        let connection: OwnedSocket
        private var pending: [UInt8] = []
        private var headSeen = false

        init(_ connection: consuming OwnedSocket) { self.connection = connection }

        /// The next JSON line as an object; nil when none came within `timeout` or the stream ended.
        func nextLine(timeout: Double) throws -> [String: Any]? {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                if !headSeen, let end = find([0x0d, 0x0a, 0x0d, 0x0a]) {
                    let head = String(decoding: pending[..<end], as: UTF8.self)
                    guard head.hasPrefix("HTTP/1.1 200") else { throw Failure(description: "not a stream: \(head)") }
                    pending.removeFirst(end + 4)
                    headSeen = true
                }
                if headSeen, let size = find([0x0d, 0x0a]) {
                    let length = Int(String(decoding: pending[..<size], as: UTF8.self), radix: 16) ?? 0
                    if length == 0 { return nil }
                    if pending.count >= size + 2 + length + 2 {
                        let line = Array(pending[(size + 2)..<(size + 2 + length)])
                        pending.removeFirst(size + 2 + length + 2)
                        return (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any]
                    }
                }
                let left = deadline.timeIntervalSinceNow
                guard left > 0 else { return nil }
                guard try connection.socket.fileDescriptor.poll(for: Int16(POLLIN), timeoutMilliseconds: Int32(left * 1000)) != 0 else { return nil }
                var buffer = [UInt8](repeating: 0, count: 65536)
                let count = try buffer.withUnsafeMutableBytes { try connection.socket.receive(into: $0) }
                if count == 0 { return nil }
                pending += buffer[0..<count]
            }
        }

        private func find(_ needle: [UInt8]) -> Int? {
            guard pending.count >= needle.count else { return nil }
            return (0...(pending.count - needle.count)).first { Array(pending[$0..<($0 + needle.count)]) == needle }
        }

        func close() { try? connection.socket.shutdown(.readWrite) }
    }

    func open(_ method: String, _ path: String) throws -> Stream {
        let connection = try connect()
        try Array(Self.head(method, path, body: nil, headers: [:]).utf8).withUnsafeBytes {
            try connection.socket.sendAll($0, flags: Int32(MSG_NOSIGNAL))
        }
        return Stream(connection)
    }

    /// A client that sends the start of a request and then nothing: it holds a connection until the server
    /// cuts it off.
    final class SlowClient {
        let connection: OwnedSocket

        init(_ connection: consuming OwnedSocket) { self.connection = connection }

        /// Whether the server answered (and closed): readable now.
        var wasAnswered: Bool {
            ((try? connection.socket.fileDescriptor.poll(for: Int16(POLLIN), timeoutMilliseconds: 0)) ?? 0) != 0
        }

        /// The status the server answered with.
        var answerStatus: Int? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { (try? connection.socket.receive(into: $0, flags: Int32(MSG_PEEK | MSG_DONTWAIT))) ?? 0 }
            return (try? APITestClient.parse(Array(buffer[0..<count])))?.status
        }
    }

    func openSlow() throws -> SlowClient {
        let connection = try connect()
        try Array("GET /v1/sandboxes HTTP/1.1\r\nHost: lin".utf8).withUnsafeBytes { try connection.socket.sendAll($0, flags: Int32(MSG_NOSIGNAL)) }
        return SlowClient(connection)
    }
}
