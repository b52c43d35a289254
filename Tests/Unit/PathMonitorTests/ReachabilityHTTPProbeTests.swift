import XCTest

@testable import PathMonitor

final class ReachabilityHTTPProbeTests: XCTestCase {
    private func parse(_ text: String, atEnd: Bool = false) -> HTTPProbeParse {
        HTTPProbe.parse(Array(text.utf8), atEndOfStream: atEnd)
    }

    private func response(_ text: String, atEnd: Bool = false, file: StaticString = #filePath, line: UInt = #line) -> HTTPProbeResponse? {
        guard case .complete(let response) = parse(text, atEnd: atEnd) else {
            XCTFail("not complete: \(parse(text, atEnd: atEnd))", file: file, line: line)
            return nil
        }
        return response
    }

    func testRequest() {
        XCTAssertEqual(
            String(decoding: HTTPProbe.request(host: "server.linkcond.test", path: "/generate_204", port: 80), as: UTF8.self),
            "GET /generate_204 HTTP/1.1\r\nHost: server.linkcond.test\r\nUser-Agent: linkcond-prober\r\nAccept: */*\r\n"
                + "Cache-Control: no-cache\r\nConnection: close\r\n\r\n")
        let other = String(decoding: HTTPProbe.request(host: "2001:2:0:100::2", path: "generate_204", port: 8080), as: UTF8.self)
        XCTAssertTrue(other.hasPrefix("GET /generate_204 HTTP/1.1\r\nHost: [2001:2:0:100::2]:8080\r\n"), other)
    }

    func testNoContentIsCompleteWithoutBody() {
        // What the sandbox server sends.
        let text = "HTTP/1.1 204 No Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nServer: linkcond\r\n"
            + "Content-Length: 0\r\nCache-Control: no-cache, no-store, must-revalidate\r\nConnection: close\r\n\r\n"
        let parsed = response(text)
        XCTAssertEqual(parsed?.status, 204)
        XCTAssertEqual(parsed?.reason, "No Content")
        XCTAssertEqual(parsed?.version, "HTTP/1.1")
        XCTAssertEqual(parsed?.body, [])
        XCTAssertEqual(parsed?.header("server"), "linkcond")
        XCTAssertEqual(parsed?.header("CONNECTION"), "close")
        XCTAssertEqual(parsed?.headers.count, 5)
        // 204 has no body, whatever follows.
        XCTAssertEqual(response("HTTP/1.1 204 No Content\r\n\r\n")?.status, 204)
        XCTAssertEqual(response("HTTP/1.0 204\r\n\r\n")?.reason, "", "the reason phrase may be missing")
    }

    func testHeadArrivesInPieces() {
        let text = "HTTP/1.1 204 No Content\r\nServer: linkcond\r\n\r\n"
        for cut in 0..<text.utf8.count {
            XCTAssertEqual(HTTPProbe.parse(Array(text.utf8.prefix(cut)), atEndOfStream: false), .incomplete, "cut at \(cut)")
        }
        XCTAssertEqual(response(text)?.status, 204)
    }

    func testPortalPageWithBody() {
        let body = "<html><body>Sign in</body></html>\n"
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        XCTAssertEqual(parse(head + body.prefix(10)), .incomplete, "waits for Content-Length bytes")
        let parsed = response(head + body)
        XCTAssertEqual(parsed?.status, 200)
        XCTAssertEqual(parsed.map { String(decoding: $0.body, as: UTF8.self) }, body)
        // The peer closing (or the deadline) settles a short body.
        XCTAssertEqual(response(head + body.prefix(10), atEnd: true)?.body.count, 10)
    }

    func testRedirect() {
        let parsed = response("HTTP/1.1 302 Found\r\nLocation: http://portal.example/login?x=1\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(parsed?.status, 302)
        XCTAssertEqual(parsed?.header("location"), "http://portal.example/login?x=1")
    }

    func testBodyWithoutLengthEndsAtCloseOrCap() {
        let head = "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n"
        XCTAssertEqual(parse(head + "<html>"), .incomplete)
        XCTAssertEqual(response(head + "<html>", atEnd: true)?.body, Array("<html>".utf8))
        let big = String(repeating: "x", count: HTTPProbe.maximumBodySize + 100)
        XCTAssertEqual(response(head + big)?.body.count, HTTPProbe.maximumBodySize, "the body is cut at the cap")
        let declared = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + big
        XCTAssertEqual(response(declared)?.body.count, HTTPProbe.maximumBodySize, "a long declared body is not awaited")
    }

    func testChunkedBody() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        XCTAssertEqual(parse(head + "5\r\nhello\r\n"), .incomplete)
        XCTAssertEqual(response(head + "5\r\nhello\r\n0\r\n\r\n")?.status, 200)
    }

    func testInterimResponsesAreSkipped() {
        XCTAssertEqual(parse("HTTP/1.1 100 Continue\r\n\r\n"), .incomplete)
        XCTAssertEqual(response("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")?.status, 204)
    }

    func testBareLineFeedsAndFoldedHeaders() {
        let parsed = response("HTTP/1.1 204 No Content\nX-Long: one\n  two\nServer:linkcond \n\n")
        XCTAssertEqual(parsed?.status, 204)
        XCTAssertEqual(parsed?.header("x-long"), "one two")
        XCTAssertEqual(parsed?.header("server"), "linkcond")
    }

    func testWhatIsNotAnHTTPResponse() {
        func invalid(_ text: String, atEnd: Bool = false, file: StaticString = #filePath, line: UInt = #line) {
            guard case .invalid = parse(text, atEnd: atEnd) else {
                XCTFail("accepted: \(text.debugDescription) → \(parse(text, atEnd: atEnd))", file: file, line: line)
                return
            }
        }
        invalid("SSH-2.0-OpenSSH_9.6\r\n\r\n")
        invalid("HTTP/2 204\r\n\r\n")
        invalid("HTTP/1.1 20 OK\r\n\r\n")
        invalid("HTTP/1.1 2040 OK\r\n\r\n")
        invalid("HTTP/1.1 abc OK\r\n\r\n")
        invalid("HTTP/1.1 700 Odd\r\n\r\n")
        invalid("HTTP/1.1 204 No Content\r\nno colon here\r\n\r\n")
        invalid("HTTP/1.1 204 No Content\r\nBad Name: x\r\n\r\n")
        invalid("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n")
        invalid("HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n")
        invalid("", atEnd: true)
        invalid("HTTP/1.1 204 No Con", atEnd: true)
        invalid("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: HTTPProbe.maximumHeadSize + 1))
        XCTAssertEqual(parse("", atEnd: true), .invalid("connection closed without a response"))
    }
}
