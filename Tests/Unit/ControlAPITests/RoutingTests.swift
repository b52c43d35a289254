import Foundation
import LinkcondBase
import JSONDocument
import Profiles
import Sandboxing
import XCTest

@testable import ControlAPI

/// Routes, bodies, errors, endpoints and tokens: what a client sees before anything touches a sandbox.
final class RoutingTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testRoutesAndTheirRefusals() throws {
        XCTAssertEqual(try APIRoute.find(method: "GET", path: "/v1/sandboxes").route, .listSandboxes)
        let apply = try APIRoute.find(method: "POST", path: "/v1/sandboxes/lab/apply")
        XCTAssertEqual(apply.route, .apply)
        XCTAssertEqual(apply.name, "lab")
        XCTAssertEqual(try APIRoute.find(method: "DELETE", path: "/v1/sandboxes/lab/").route, .deleteSandbox)
        XCTAssertThrowsError(try APIRoute.find(method: "PUT", path: "/v1/sandboxes")) { error in
            XCTAssertEqual((error as? APIError)?.status, 405)
            XCTAssertEqual((error as? APIError)?.headers, [APIHeader("Allow", "GET, POST")])
        }
        XCTAssertThrowsError(try APIRoute.find(method: "GET", path: "/v1/sandboxes/lab/frob")) { error in
            XCTAssertEqual((error as? APIError)?.status, 404)
            XCTAssertTrue((error as? APIError)?.message.hasPrefix("no endpoint GET /v1/sandboxes/lab/frob: the endpoints are ") ?? false)
        }
    }

    /// Every route is described in `api/openapi.yaml`, and the description names no other.
    func testTheOpenAPIDescriptionListsExactlyTheRoutes() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("api/openapi.yaml"), encoding: .utf8)
        var described: Set<String> = []
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") { path = String(line.dropFirst(2).dropLast()) ; continue }
            if line.hasPrefix("  "), !line.hasPrefix("    ") { path = nil }
            if let path, line.hasPrefix("    "), !line.hasPrefix("      "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast().uppercased()
                if ["GET", "POST", "DELETE", "PUT", "PATCH"].contains(method) { described.insert("\(method) \(path)") }
            }
        }
        XCTAssertEqual(described, Set(APIRoute.allCases.map(\.rawValue)))
    }

    private func request(_ body: String) -> APIRequest {
        APIRequest(method: "POST", path: "/v1/sandboxes/lab/apply", body: Array(body.utf8))
    }

    private func applyError(_ body: String) -> APIError? {
        do {
            _ = try APIBodies.apply(request(body), catalog: Self.root.appendingPathComponent("profiles").path)
            return nil
        } catch {
            return APIError.from(error)
        }
    }

    func testApplyBodiesInEveryForm() throws {
        let catalog = Self.root.appendingPathComponent("profiles").path
        let named = try APIBodies.apply(request(#"{"profile": "edge", "link": "ww0", "for": "30s", "backend": "userspace"}"#), catalog: catalog)
        XCTAssertEqual(named.profile.name, "edge")
        XCTAssertEqual(named.links, [.cellular])
        XCTAssertEqual(named.seconds, 30)
        XCTAssertEqual(named.backend, .userspace)

        let document = try APIBodies.apply(request(#"{"profile": {"name": "mine", "downlink": {"delay": "20ms"}}}"#), catalog: catalog)
        XCTAssertEqual(document.profile.name, "mine")
        XCTAssertEqual(document.profile.downlink.delay, 20_000_000)
        XCTAssertNil(document.links)

        let inline = try APIBodies.apply(request(#"{"downlink": {"delay": "100ms", "loss": "1%"}, "uplink": {"rate": "1mbit"}, "link": "wifi"}"#), catalog: catalog)
        XCTAssertEqual(inline.profile.name, "inline")
        XCTAssertNil(inline.profile.source)
        XCTAssertEqual(inline.profile.downlink.loss, .random(probability: 0.01, correlation: 0))
        XCTAssertEqual(inline.profile.uplink.rate, 1_000_000)
        XCTAssertEqual(inline.links, [.wifi])
    }

    func testApplyRefusalsAreTheFormatsOwnWithAStatus() {
        XCTAssertEqual(applyError(#"{"downlink": {"loss": "150%"}}"#), APIError(
            422, #"the request: $.downlink.loss (line 1, column 23): "150%" is out of range: expected a percentage from 0% to 100%"#))
        XCTAssertEqual(applyError(#"{"dowlink": {}}"#)?.status, 422)
        XCTAssertTrue(applyError(#"{"dowlink": {}}"#)?.message.contains(#"(did you mean "downlink"?)"#) ?? false)
        XCTAssertEqual(applyError(#"{"profile": "egde"}"#)?.status, 422)
        XCTAssertTrue(applyError(#"{"profile": "egde"}"#)?.message.contains(#"did you mean "edge"?"#) ?? false)
        XCTAssertEqual(applyError(#"{"profile": "edge", "downlink": {}}"#)?.status, 422)
        XCTAssertEqual(applyError(#"{"profile": {"name": "x", "downlink": {"reorder": "5%"}}}"#)?.message.hasPrefix("the request: $.profile.downlink.reorder"), true)
        XCTAssertEqual(applyError(#"{"link": "eth0", "profile": "edge"}"#)?.status, 422)
        XCTAssertEqual(applyError(#"{"for": "0", "profile": "edge"}"#)?.status, 422)
        XCTAssertEqual(applyError(#"{"profile": "edge""#)?.status, 400, "not JSON")
        XCTAssertEqual(applyError("")?.message, #"the request: $ (line 1, column 1): the request names no profile and no conditions: expected {"profile": "edge"}, {"profile": {…a profile document…}}, or conditions such as {"downlink": {"delay": "100ms"}, "uplink": {"delay": "100ms"}}, each with "link", "for" and "backend" if wanted"#)
    }

    func testLibraryErrorsGetAFittingStatus() {
        XCTAssertEqual(APIError.from(SandboxError.notUp(name: "lab")), APIError(404, "sandbox 'lab' is not up; start it with 'linkcond up --name lab'"))
        XCTAssertEqual(APIError.from(SandboxError.busy(name: "lab", holder: nil, waited: 60)).status, 409)
        XCTAssertEqual(APIError.from(SandboxError.unsupported(detail: "x")).status, 409)
        XCTAssertEqual(APIError.from(SandboxError.invalidName("A")).status, 400)
        struct Odd: Error {}
        XCTAssertEqual(APIError.from(Odd()).status, 500)
    }

    func testLoopbackEndpointsOnly() throws {
        XCTAssertEqual(try APIEndpoint.loopback("127.0.0.1:8477"), .tcp(address: IPAddressLiteral.v4Loopback, port: 8477))
        XCTAssertEqual(try APIEndpoint.loopback("localhost:0"), .tcp(address: IPAddressLiteral.v4Loopback, port: 0))
        XCTAssertEqual("\(try APIEndpoint.loopback("[::1]:9000"))", "http://[::1]:9000")
        XCTAssertThrowsError(try APIEndpoint.loopback("0.0.0.0:8477")) { XCTAssertTrue(($0 as? APIError)?.message.hasPrefix("the API listens on loopback only") ?? false) }
        XCTAssertThrowsError(try APIEndpoint.loopback("198.18.0.1:80"))
        XCTAssertThrowsError(try APIEndpoint.loopback("8477"))
    }

    func testTokens() throws {
        let token = APIToken.generate()
        XCTAssertEqual(token.value.count, 64)
        XCTAssertNotEqual(token, APIToken.generate())
        XCTAssertTrue(token.accepts("Bearer \(token.value)"))
        // The last digit changed (to another one: a random token ends in "0" one time in sixteen).
        XCTAssertFalse(token.accepts("Bearer \(token.value.dropLast())\(token.value.last == "0" ? "1" : "0")"))
        XCTAssertFalse(token.accepts(token.value))
        XCTAssertFalse(token.accepts(nil))
        let path = NSTemporaryDirectory() + "lcapi-token-\(getpid())"
        defer { unlink(path) }
        try token.store(at: path)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), token.value + "\n")
    }
}

/// Addresses for the endpoint tests.
enum IPAddressLiteral {
    static let v4Loopback = LinkcondBase.IPAddress("127.0.0.1")!
}
