import Foundation
import Glibc
import JSONDocument
import LinkcondSystem

/// An answer of the API: a status, headers and a JSON body.
public struct APIResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// Header fields beside `Content-Length`, `Connection` and `Cache-Control`, which every answer has.
    public var headers: [APIHeader]
    /// The body, JSON.
    public var body: [UInt8]

    /// An answer with `status`, `headers` and `body`.
    public init(status: Int = 200, headers: [APIHeader] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `value` as the body, compact, with a newline.
    public static func json(_ value: JSONValue, status: Int = 200) -> APIResponse {
        APIResponse(status: status, headers: [APIHeader("Content-Type", "application/json")], body: Array((JSONWriter.text(of: value, indent: nil) + "\n").utf8))
    }

    /// An `Encodable` value as the body (keys sorted, as the CLI's `--json` prints them).
    public static func json<Value: Encodable>(encoding value: Value, status: Int = 200) throws -> APIResponse {
        APIResponse(status: status, headers: [APIHeader("Content-Type", "application/json")], body: try Array(JSONCoding.data(value)) + [0x0a])
    }

    /// The answer to `error`.
    public static func error(_ error: APIError) -> APIResponse {
        var response = json(error.json, status: error.status)
        response.headers += error.headers
        return response
    }

    /// `HTTP/1.1 200 OK`…
    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }

    /// The whole message: status line, headers (with `Content-Length` and `Connection: close`), body.
    var bytes: [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for header in headers { head += "\(header.name): \(header.value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
        return Array(head.utf8) + body
    }
}

/// Encodable values as the CLI's `--json` writes them, and back into ``JSONValue`` to add to.
enum JSONCoding {
    static func data<Value: Encodable>(_ value: Value) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static func value<Value: Encodable>(_ value: Value) throws -> JSONValue {
        try JSONParser.value(of: Array(data(value)))
    }
}

/// Writing to a client: every send gives up after ``sendTimeout`` seconds, so a client that stops reading
/// costs its own connection and nothing else.
struct ResponseWriter {
    static let sendTimeout = 5.0
    let socket: SocketDescriptor

    init(socket: SocketDescriptor) {
        self.socket = socket
        try? socket.setTimeout(seconds: Self.sendTimeout, send: true)
    }

    /// Sends all of `bytes`; false when the client is gone or stopped reading.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in (try? socket.sendAll(raw, flags: Int32(MSG_NOSIGNAL))) != nil }
    }

    @discardableResult
    func send(_ response: APIResponse) -> Bool { send(response.bytes) }

    /// The head of a stream of JSON lines (`application/x-ndjson`, chunked): lines follow with ``sendLine(_:)``.
    func startStream() -> Bool {
        send(Array(("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n"
            + "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n").utf8))
    }

    /// One line of the stream, as one chunk.
    func sendLine(_ line: String) -> Bool {
        let payload = Array((line + "\n").utf8)
        return send(Array((String(payload.count, radix: 16) + "\r\n").utf8) + payload + [0x0d, 0x0a])
    }

    /// The stream's end (the last, empty chunk).
    func endStream() { send(Array("0\r\n\r\n".utf8)) }
}
