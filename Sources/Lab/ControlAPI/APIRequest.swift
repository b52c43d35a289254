import Glibc
import JSONDocument
import LinkcondBase
import LinkcondSystem
import Responders

/// One HTTP/1.1 request to the API: its method, path, query, headers and body.
public struct APIRequest: Sendable {
    /// `GET`, `POST`, `DELETE`…
    public var method: String
    /// The path without its query (`/v1/sandboxes/lab/apply`), percent-decoded.
    public var path: String
    /// The query's parameters (`?probe=false`).
    public var query: [String: String]
    /// The header fields, names as sent.
    public var headers: [APIHeader]
    /// The body (`Content-Length` bytes; empty without one).
    public var body: [UInt8]

    /// A request of `method` for `path`.
    public init(method: String, path: String, query: [String: String] = [:], headers: [APIHeader] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The first header field called `name` (any case).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// The path's segments: `/v1/sandboxes/lab` → `["v1", "sandboxes", "lab"]`.
    var segments: [String] { path.split(separator: "/").map(String.init) }
}

/// Reads requests from a connection within bounds: the head at most ``HTTPRequestHead/maximumSize`` bytes, the
/// body at most ``maximumBody``, and all of it by a deadline however slowly it trickles in — so no client holds
/// a thread (or anything else) for longer than that.
struct RequestReader {
    /// The most a body may hold: 1 MiB (a profile or a scenario document).
    static let maximumBody = 1 << 20

    let socket: SocketDescriptor
    /// `CLOCK_MONOTONIC` nanoseconds by which the whole request must have arrived.
    let deadline: UInt64

    /// The request; an ``APIError`` to answer with (408 late, 431 head too large, 413 body too large, 411
    /// without a length, 400 malformed), or nil when the client closed the connection before sending one.
    func read() throws(APIError) -> APIRequest? {
        var buffer: [UInt8] = []
        var end: Int?
        while end == nil {
            guard let count = try receive(into: &buffer, limit: HTTPRequestHead.maximumSize + 4096) else {
                if buffer.allSatisfy({ $0 == 0x0d || $0 == 0x0a }) { return nil }
                throw APIError(400, "the connection closed before the request's head ended")
            }
            end = HTTPRequestHead.endOfHead(in: buffer, searchingFrom: max(0, buffer.count - count - 3))
            if end == nil && buffer.count > HTTPRequestHead.maximumSize {
                throw APIError(431, "the request's head is longer than \(HTTPRequestHead.maximumSize) bytes")
            }
        }
        guard let end, end <= HTTPRequestHead.maximumSize else {
            throw APIError(431, "the request's head is longer than \(HTTPRequestHead.maximumSize) bytes")
        }
        let head: HTTPRequestHead
        do {
            head = try HTTPRequestHead.parse(buffer[..<end])
        } catch {
            throw APIError(400, "the request is not HTTP/1.1 (\(error)): send a request line such as 'GET /v1/sandboxes HTTP/1.1'")
        }
        if head.header("Transfer-Encoding") != nil {
            throw APIError(411, "the API takes a body with a Content-Length, not a Transfer-Encoding")
        }
        var length = 0
        if let text = head.header("Content-Length") {
            guard let value = Int(text.trimmed(" \t")), value >= 0 else {
                throw APIError(400, "Content-Length \(JSONWriter.quoted(text)) is not a number of bytes")
            }
            length = value
        }
        guard length <= Self.maximumBody else {
            throw APIError(413, "the body has \(length) bytes; the API takes at most \(Self.maximumBody) (1 MiB)")
        }
        if length > 0, head.header("Expect")?.lowercased() == "100-continue", buffer.count == end {
            // curl waits a second for this before sending a body of more than 1 KiB.
            _ = try? Array("HTTP/1.1 100 Continue\r\n\r\n".utf8).withUnsafeBytes { try socket.sendAll($0, flags: Int32(MSG_NOSIGNAL)) }
        }
        while buffer.count < end + length {
            guard try receive(into: &buffer, limit: end + length) != nil else {
                throw APIError(400, "the connection closed after \(buffer.count - end) of the body's \(length) bytes")
            }
        }
        let (path, query) = Self.split(head.target.hasPrefix("/") ? head.target : head.path ?? head.target)
        return APIRequest(
            method: head.method, path: path, query: query, headers: head.headers.map { APIHeader($0.name, $0.value) },
            body: Array(buffer[end..<(end + length)]))
    }

    /// Receives what has come, up to `limit` bytes in `buffer`, waiting until the deadline: the count, or nil
    /// at the end of the stream.
    private func receive(into buffer: inout [UInt8], limit: Int) throws(APIError) -> Int? {
        var chunk = [UInt8](repeating: 0, count: max(1, min(65536, limit - buffer.count)))
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { throw APIError(408, "the request did not arrive whole within the API's time for one") }
            let milliseconds = Int32(min((deadline - now + 999_999) / 1_000_000, 60_000))
            do throws(SystemError) {
                guard try socket.fileDescriptor.poll(for: Int16(POLLIN), timeoutMilliseconds: milliseconds) != 0 else { continue }
                let received = chunk.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try socket.receive(into: raw, flags: Int32(MSG_DONTWAIT)) }
                }
                let count = try received.get()
                if count == 0 { return nil }
                buffer += chunk[0..<count]
                return count
            } catch where error.errno == .wouldBlock || error.errno == .resourceTemporarilyUnavailable {
                continue
            } catch {
                return nil  // reset by the peer: as good as closed
            }
        }
    }

    /// `/a/b%20c?x=1&y` → (`/a/b c`, `["x": "1", "y": ""]`).
    static func split(_ target: String) -> (path: String, query: [String: String]) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[decode(item[0])] = item.count == 2 ? decode(item[1]) : ""
            }
        }
        return (decode(parts[0]), query)
    }

    /// Percent-decoding (`+` stays a plus); a malformed escape stays as written.
    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    /// The string without `characters` at either end.
    func trimmed(_ characters: String) -> String {
        String(drop { characters.contains($0) }.reversed().drop { characters.contains($0) }.reversed())
    }
}
