import XCTest
@testable import Responders

final class HTTPRequestTests: XCTestCase {
    private func parse(_ text: String) throws(HTTPParseError) -> HTTPRequestHead {
        try HTTPRequestHead.parse(Array(text.utf8))
    }

    private func expect(_ text: String, fails expected: HTTPParseError, line: UInt = #line) {
        XCTAssertThrowsError(try parse(text), line: line) { error in
            XCTAssertEqual(error as? HTTPParseError, expected, line: line)
        }
    }

    func testParsesRequestLineAndHeaders() throws {
        let head = try parse("GET /generate_204 HTTP/1.1\r\nHost: server.linkcond.test\r\nUser-Agent:  probe/1 \r\n\r\n")
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(head.target, "/generate_204")
        XCTAssertEqual(head.path, "/generate_204")
        XCTAssertEqual(head.versionMajor, 1)
        XCTAssertEqual(head.versionMinor, 1)
        XCTAssertEqual(head.headers.map(\.name), ["Host", "User-Agent"])
        XCTAssertEqual(head.header("user-agent"), "probe/1")
        XCTAssertEqual(head.header("HOST"), "server.linkcond.test")
    }

    func testAcceptsBareLinefeedsLeadingBlankLinesAndHTTP10() throws {
        let head = try parse("\r\nHEAD / HTTP/1.0\nHost: x\n\n")
        XCTAssertEqual(head.method, "HEAD")
        XCTAssertEqual(head.path, "/")
        XCTAssertEqual(head.versionMinor, 0)
    }

    func testTargetForms() {
        XCTAssertEqual(HTTPRequestHead.path(of: "/generate_204?x=1"), "/generate_204")
        XCTAssertEqual(HTTPRequestHead.path(of: "/a#frag"), "/a")
        XCTAssertEqual(HTTPRequestHead.path(of: "http://server.linkcond.test/generate_204"), "/generate_204")
        XCTAssertEqual(HTTPRequestHead.path(of: "HTTP://server.linkcond.test"), "/")
        XCTAssertEqual(HTTPRequestHead.path(of: "http://server.linkcond.test?q"), "/")
        XCTAssertNil(HTTPRequestHead.path(of: "*"))
        XCTAssertNil(HTTPRequestHead.path(of: "server.linkcond.test:443"))
    }

    func testRejectsMalformedRequestLines() {
        expect("", fails: .malformedRequestLine)
        expect("GET /\r\n\r\n", fails: .malformedRequestLine)
        expect("GET  / HTTP/1.1\r\n\r\n", fails: .malformedRequestLine)
        expect("GET / HTTP/1.1 extra\r\n\r\n", fails: .malformedRequestLine)
        expect("G(T / HTTP/1.1\r\n\r\n", fails: .malformedRequestLine)
        expect("GET / HTTP/1\r\n\r\n", fails: .malformedRequestLine)
        expect("GET / http/1.1\r\n\r\n", fails: .malformedRequestLine)
        expect("GET /\u{7F} HTTP/1.1\r\n\r\n", fails: .malformedRequestLine)
        expect("GET / HTTP/2.0\r\n\r\n", fails: .unsupportedVersion)
    }

    func testRejectsMalformedHeaders() {
        expect("GET / HTTP/1.1\r\nNo colon here\r\n\r\n", fails: .malformedHeader)
        expect("GET / HTTP/1.1\r\n: empty name\r\n\r\n", fails: .malformedHeader)
        expect("GET / HTTP/1.1\r\nHost : x\r\n\r\n", fails: .malformedHeader)
        expect("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", fails: .malformedHeader)
        expect("GET / HTTP/1.1\r\nA: b\u{1}c\r\n\r\n", fails: .malformedHeader)
    }

    func testRejectsOversizedHead() {
        let big = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 9000) + "\r\n\r\n"
        expect(big, fails: .headTooLarge)
    }

    func testFindsEndOfHead() {
        XCTAssertEqual(HTTPRequestHead.endOfHead(in: Array("GET / HTTP/1.1\r\n\r\nbody".utf8)), 18)
        XCTAssertEqual(HTTPRequestHead.endOfHead(in: Array("GET / HTTP/1.1\n\nbody".utf8)), 16)
        XCTAssertNil(HTTPRequestHead.endOfHead(in: Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)))
        let buffer = Array("GET / HTTP/1.1\r\n\r\n".utf8)
        XCTAssertEqual(HTTPRequestHead.endOfHead(in: buffer, searchingFrom: buffer.count - 4), 18)
    }

    func testResponses() {
        func status(_ request: String, portal: Bool = false) -> (Int, HTTPResponse) {
            let parsed = Result { () throws(HTTPParseError) -> HTTPRequestHead in
                try HTTPRequestHead.parse(Array(request.utf8))
            }
            let response = HTTPResponder.response(to: parsed, portalActive: portal)
            return (response.status, response)
        }
        XCTAssertEqual(status("GET /generate_204 HTTP/1.1\r\n\r\n").0, 204)
        XCTAssertEqual(status("GET /generate_204 HTTP/1.1\r\n\r\n").1.body, [])
        XCTAssertEqual(status("GET /generate_204 HTTP/1.1\r\n\r\n", portal: true).0, 200)
        XCTAssertEqual(status("GET / HTTP/1.1\r\n\r\n").0, 200)
        XCTAssertEqual(status("GET / HTTP/1.1\r\n\r\n", portal: true).0, 200)
        XCTAssertEqual(status("GET /nothing HTTP/1.1\r\n\r\n").0, 404)
        XCTAssertEqual(status("POST /generate_204 HTTP/1.1\r\n\r\n").0, 405)
        XCTAssertEqual(status("POST / HTTP/1.1\r\n\r\n").1.extraHeaders, ["Allow: GET, HEAD"])
        XCTAssertEqual(status("GET * HTTP/1.1\r\n\r\n").0, 400)
        XCTAssertEqual(status("garbage\r\n\r\n").0, 400)
        XCTAssertEqual(status("GET / HTTP/3.0\r\n\r\n").0, 505)
        // /bytes/N: exactly N bytes of "linkcond" repeated, for download rates; nothing else under /bytes/.
        XCTAssertEqual(status("GET /bytes/20 HTTP/1.1\r\n\r\n").1.body, Array("linkcondlinkcondlink".utf8))
        XCTAssertEqual(status("GET /bytes/0 HTTP/1.1\r\n\r\n").1.body, [])
        XCTAssertEqual(status("GET /bytes/100000 HTTP/1.1\r\n\r\n").1.body.count, 100_000)
        XCTAssertEqual(status("GET /bytes/16777216 HTTP/1.1\r\n\r\n").0, 200)
        for refused in ["/bytes/16777217", "/bytes/-1", "/bytes/+5", "/bytes/", "/bytes/x", "/bytes/99999999999999999999"] {
            XCTAssertEqual(status("GET \(refused) HTTP/1.1\r\n\r\n").0, 404, refused)
        }
    }

    func testSerialization() {
        let noContent = HTTPResponse(status: 204, reason: "No Content", contentType: nil, body: [])
        let text = String(decoding: noContent.serialized(includeBody: true, date: "Sun, 06 Nov 1994 08:49:37 GMT"),
                          as: UTF8.self)
        XCTAssertEqual(text, """
            HTTP/1.1 204 No Content\r
            Date: Sun, 06 Nov 1994 08:49:37 GMT\r
            Server: linkcond\r
            Content-Length: 0\r
            Cache-Control: no-cache, no-store, must-revalidate\r
            Connection: close\r
            \r

            """)
        let head = HTTPResponder.responseBytes(to: Array("HEAD / HTTP/1.1\r\n\r\n".utf8), portalActive: false)
        let headText = String(decoding: head, as: UTF8.self)
        XCTAssertTrue(headText.hasSuffix("\r\n\r\n"))
        XCTAssertTrue(headText.contains("Content-Length: \(HTTPResponder.homePage.utf8.count)\r\n"))
        XCTAssertTrue(HTTPResponder.currentDate().hasSuffix(" GMT"))
        XCTAssertEqual(HTTPResponder.currentDate().count, 29)
    }
}
