import Foundation
import Glibc
import JSONDocument
import LinkcondBase
import LinkcondSystem
import XCTest

@testable import ControlAPI

/// Requests read within bounds from a real socket pair: whole, trickled, too slow, too large, malformed.
final class RequestReadingTests: XCTestCase {
    /// Reads one request from a socket pair whose other end `client` writes (on a thread of its own).
    private func read(deadline seconds: Double = 2, _ client: @escaping @Sendable (SocketDescriptor) -> Void) throws -> Result<APIRequest?, APIError> {
        let (server, peer) = try SocketDescriptor.pair()
        defer { try? server.close() }
        let thread = Thread {
            client(peer)
            try? peer.shutdown(.write)
            usleep(200_000)
            try? peer.close()
        }
        thread.start()
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        return Result { () throws(APIError) in try RequestReader(socket: server, deadline: deadline).read() }
    }

    private static func send(_ text: String, on socket: SocketDescriptor) {
        _ = Array(text.utf8).withUnsafeBytes { try? socket.sendAll($0, flags: Int32(MSG_NOSIGNAL)) }
    }

    func testAWholeRequestWithABodyAndAQuery() throws {
        let body = #"{"profile": "edge"}"#
        let result = try read { Self.send("POST /v1/sandboxes/lab%2Dx/apply?probe=false&x HTTP/1.1\r\nHost: linkcond\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)", on: $0) }
        let request = try XCTUnwrap(try result.get())
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v1/sandboxes/lab-x/apply")
        XCTAssertEqual(request.query, ["probe": "false", "x": ""])
        XCTAssertEqual(request.header("host"), "linkcond")
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self), body)
        XCTAssertEqual(request.segments, ["v1", "sandboxes", "lab-x", "apply"])
    }

    func testARequestTrickledInAByteAtATimeArrivesWhole() throws {
        let text = "GET /v1/sandboxes HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
        let result = try read { socket in
            for byte in text.utf8 {
                Self.send(String(decoding: [byte], as: UTF8.self), on: socket)
                usleep(2000)
            }
        }
        let request = try XCTUnwrap(try result.get())
        XCTAssertEqual(request.path, "/v1/sandboxes")
        XCTAssertEqual(request.body, Array("{}".utf8))
    }

    /// A client that sends part of a head and then nothing gets 408 when the request's time is up — however
    /// long it would keep the connection open.
    func testASlowClientIsCutOffAtTheDeadline() throws {
        let started = MonotonicClock.nanoseconds()
        let result = try read(deadline: 0.3) { socket in
            Self.send("GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\n", on: socket)
            usleep(1_500_000)
        }
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual(($0 as? APIError)?.status, 408) }
        XCTAssertLessThan(MonotonicClock.nanoseconds() - started, 1_400_000_000, "the reader waited for the client, not for its deadline")
    }

    func testBoundsOnHeadAndBody() throws {
        let long = try read { Self.send("GET / HTTP/1.1\r\nX-Long: " + String(repeating: "a", count: 9000) + "\r\n\r\n", on: $0) }
        XCTAssertThrowsError(try long.get()) { XCTAssertEqual(($0 as? APIError)?.status, 431) }
        let large = try read { Self.send("POST / HTTP/1.1\r\nContent-Length: \(RequestReader.maximumBody + 1)\r\n\r\n", on: $0) }
        XCTAssertThrowsError(try large.get()) { XCTAssertEqual(($0 as? APIError)?.status, 413) }
        let chunked = try read { Self.send("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", on: $0) }
        XCTAssertThrowsError(try chunked.get()) { XCTAssertEqual(($0 as? APIError)?.status, 411) }
        let short = try read { Self.send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n{}", on: $0) }
        XCTAssertThrowsError(try short.get()) { XCTAssertEqual(($0 as? APIError)?.status, 400) }
        let garbage = try read { Self.send("hello there\r\n\r\n", on: $0) }
        XCTAssertThrowsError(try garbage.get()) { XCTAssertEqual(($0 as? APIError)?.status, 400) }
        let nothing = try read { _ in }
        XCTAssertNil(try nothing.get(), "a client that sends nothing and leaves gets no answer")
    }

    func testPercentDecoding() {
        XCTAssertEqual(RequestReader.split("/a%20b/c?x=%2F&y=1+2").path, "/a b/c")
        XCTAssertEqual(RequestReader.split("/a%20b/c?x=%2F&y=1+2").query, ["x": "/", "y": "1+2"])
        XCTAssertEqual(RequestReader.decode("%zz%4"), "%zz%4", "a malformed escape stays as written")
    }

    /// An answer as a client reads it: status line, headers, then the body with its length.
    func testResponsesAreCompleteHTTPMessages() {
        let response = APIResponse.error(APIError(405, "no", headers: [APIHeader("Allow", "GET")]))
        let text = String(decoding: response.bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"), text)
        XCTAssertTrue(text.contains("\r\nAllow: GET\r\n"))
        XCTAssertTrue(text.contains("\r\nConnection: close\r\n"))
        XCTAssertTrue(text.hasSuffix("\r\n\r\n" + #"{"error":"no","status":405}"# + "\n"), text)
        XCTAssertTrue(text.contains("Content-Length: \(response.body.count)\r\n"))
    }
}
