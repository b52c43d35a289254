import ControlAPI
import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import Sandboxing
import XCTest

/// The control API against real sandboxes (root): what a test runner in another language sees — the CLI's
/// documents and sentences, conditions read back from the engine, events as they happen, a scenario run's
/// reports — and that slow clients cannot stall anyone.
final class ControlAPIIntegrationTests: SandboxTestCase {
    /// A server on a store of its own (its socket in it), stopped and its sandboxes removed after the test.
    private func makeServer(
        maximumConnections: Int = 128, requestDeadline: Double = 5, tcp: Bool = false
    ) throws -> (server: ControlAPIServer, client: APITestClient, store: SandboxStore) {
        let sandbox = try makeSandbox()  // for its store and its cleanup
        let store = sandbox.store
        var endpoints: [APIEndpoint] = [.unix(path: APIConfiguration.socketPath(in: store))]
        if tcp { endpoints.append(.tcp(address: IPAddress("127.0.0.1")!, port: 0)) }
        let server = ControlAPIServer(APIConfiguration(
            store: store, executable: try linkcondExecutable(), endpoints: endpoints, maximumConnections: maximumConnections,
            requestDeadline: requestDeadline))
        try server.start()
        addTeardownBlock { server.stop() }
        return (server, APITestClient(socket: APIConfiguration.socketPath(in: store)), store)
    }

    private func name(in store: SandboxStore) -> String {
        let name = UniqueName.sandbox()
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: store.directory) }
        return name
    }

    func testTheAPIDrivesASandboxAsTheCLIDoes() throws {
        let (_, api, store) = try makeServer()
        let name = name(in: store)
        let created = try api.request("POST", "/v1/sandboxes", body: #"{"name": "\#(name)", "backend": "userspace"}"#)
        XCTAssertEqual(created.status, 201, created.text)
        XCTAssertEqual(created.object["healthy"] as? Bool, true)
        XCTAssertEqual(try api.request("POST", "/v1/sandboxes", body: #"{"name": "\#(name)"}"#).status, 200, "up already")

        let edge = try api.request("POST", "/v1/sandboxes/\(name)/apply", body: #"{"profile": "edge"}"#)
        XCTAssertEqual(edge.status, 200, edge.text)
        XCTAssertEqual(edge.object["profile"] as? String, "edge")
        XCTAssertEqual(edge.object["backend"] as? String, "userspace")
        XCTAssertEqual(try wifiProfile(api, name), "edge")
        let engine = try engineText(api, name)
        XCTAssertTrue(engine.contains("rate 200kbit delay 440ms"), engine)

        // Refused in the format's own words, and nothing changes.
        let refused = try api.request("POST", "/v1/sandboxes/\(name)/apply", body: #"{"downlink": {"loss": "150%"}}"#)
        XCTAssertEqual(refused.status, 422)
        XCTAssertEqual(refused.object["error"] as? String, #"the request: $.downlink.loss (line 1, column 23): "150%" is out of range: expected a percentage from 0% to 100%"#)
        XCTAssertEqual(try wifiProfile(api, name), "edge")

        // Inline conditions for a second; then edge is back.
        let timed = try api.request("POST", "/v1/sandboxes/\(name)/apply", body: #"{"downlink": {"delay": "30ms"}, "uplink": {"delay": "30ms"}, "for": "1s"}"#)
        XCTAssertEqual(timed.status, 200, timed.text)
        XCTAssertNotNil(timed.object["until"] as? String)
        XCTAssertEqual((timed.object["then"] as? [String: Any])?["wifi"] as? String, "edge")
        XCTAssertEqual(try wifiProfile(api, name), "inline")
        XCTAssertTrue(try engineText(api, name).contains("delay 30ms"))
        XCTAssertTrue(try eventually(timeout: 6, interval: 0.1) { try wifiProfile(api, name) == "edge" }, "edge did not come back")
        XCTAssertTrue(try engineText(api, name).contains("rate 200kbit delay 440ms"))

        let cleared = try api.request("POST", "/v1/sandboxes/\(name)/clear")
        XCTAssertEqual(cleared.status, 200, cleared.text)
        XCTAssertEqual((cleared.object["cleared"] as? [Any])?.count, 2)
        XCTAssertNil(try wifiProfile(api, name))
        let status = try api.request("GET", "/v1/sandboxes/\(name)/status")
        XCTAssertEqual(((status.object["conditions"] as? [[String: Any]])?.first)?["link"] as? String, "wifi")

        let removed = try api.request("DELETE", "/v1/sandboxes/\(name)")
        XCTAssertEqual(removed.status, 200, removed.text)
        XCTAssertFalse(NamedNamespace.exists(Sandbox(topology: try SandboxTopology(name: name)).topology.clientNamespace))
        XCTAssertEqual(try api.request("DELETE", "/v1/sandboxes/\(name)").status, 404)
        XCTAssertEqual(try api.request("GET", "/v1/sandboxes/\(name)/show").status, 404)
    }

    private func wifiProfile(_ api: APITestClient, _ name: String) throws -> String? {
        let show = try api.request("GET", "/v1/sandboxes/\(name)/show")
        return ((show.object["links"] as? [String: Any])?["wifi"] as? [String: Any])?["profile"] as? String
    }

    /// The engine's own read-back of the wifi uplink, as `show` has it.
    private func engineText(_ api: APITestClient, _ name: String) throws -> String {
        let show = try api.request("GET", "/v1/sandboxes/\(name)/show")
        let sites = show.object["sites"] as? [[String: Any]] ?? []
        let uplink = sites.first { $0["direction"] as? String == "uplink" && $0["link"] as? String == "wifi" }
        return ((uplink?["stages"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
    }

    /// The stream starts with the path as it is, carries a link going down as it happens, and ends when the
    /// client leaves (its connection is no longer served).
    func testEventsAreStreamedUntilTheClientLeaves() throws {
        let (server, api, store) = try makeServer()
        let name = name(in: store)
        XCTAssertEqual(try api.request("POST", "/v1/sandboxes", body: #"{"name": "\#(name)"}"#).status, 201)
        let stream = try api.open("GET", "/v1/sandboxes/\(name)/events?probe=false")
        let first = try XCTUnwrap(stream.nextLine(timeout: 5), "no first line")
        XCTAssertEqual(first["lane"] as? String, "path")
        XCTAssertEqual(((first["event"] as? [String: Any])?["path"] as? [String: Any])?["status"] as? String, "satisfied")
        let sandbox = Sandbox(topology: try SandboxTopology(name: name), store: store)
        try sandbox.setLink(.wifi, side: .router, up: false)
        var sawDown = false
        while !sawDown, let line = try stream.nextLine(timeout: 5) {
            sawDown = ((line["event"] as? [String: Any])?["path"] as? [String: Any])?["status"] as? String == "unsatisfied"
        }
        XCTAssertTrue(sawDown, "the stream did not carry the link going down")
        stream.close()
        XCTAssertTrue(eventually(timeout: 3) { server.activeConnections == 0 }, "the stream outlived its client")
        XCTAssertEqual(try api.request("GET", "/v1/sandboxes/nosuch/events").status, 404)
    }

    /// Slow clients hold a connection each until the request deadline, and nothing else: an apply gets through
    /// while they hang; past the connection cap the answer is 503 at once, and after the deadline the slow
    /// clients are gone.
    func testSlowClientsCannotStallAnApply() throws {
        let (server, api, store) = try makeServer(maximumConnections: 16, requestDeadline: 2)
        let name = name(in: store)
        XCTAssertEqual(try api.request("POST", "/v1/sandboxes", body: #"{"name": "\#(name)"}"#).status, 201)
        // A connection counts until the server has read the client's close after the answer.
        XCTAssertTrue(eventually(timeout: 1) { server.activeConnections == 0 }, "\(server.activeConnections) connections after the create")
        let started = MonotonicClock.nanoseconds()
        var slow = try (0..<15).map { _ in try api.openSlow() }
        let apply = try api.request("POST", "/v1/sandboxes/\(name)/apply", body: #"{"profile": "3g"}"#)
        XCTAssertEqual(apply.status, 200, apply.text)
        XCTAssertTrue(slow.allSatisfy { !$0.wasAnswered }, "the slow clients were cut off before the apply was answered")
        XCTAssertLessThan(MonotonicClock.nanoseconds() - started, 2_000_000_000, "the apply waited for the slow clients' deadline")
        XCTAssertTrue(eventually(timeout: 1) { server.activeConnections == 15 }, "\(server.activeConnections) connections after the apply")
        slow.append(try api.openSlow())
        let busy = try api.request("GET", "/v1/sandboxes")
        XCTAssertEqual(busy.status, 503)
        XCTAssertEqual(busy.header("Retry-After"), "1")
        XCTAssertTrue(eventually(timeout: 5) { slow.allSatisfy(\.wasAnswered) }, "slow clients were not cut off at the deadline")
        XCTAssertEqual(slow.map(\.answerStatus), Array(repeating: 408, count: 16))
        XCTAssertEqual(try api.request("GET", "/v1/sandboxes").status, 200)
    }

    func testARunAnswersWithItsVerdictsAndReportFolder() throws {
        let (_, api, store) = try makeServer()
        let name = name(in: store)
        let scenario = #"""
            {"name": "api-run", "links": ["wifi"], "steps": [
              {"name": "lte", "apply": "lte", "hold": "2s"}, {"name": "cut", "link": "down", "side": "router", "hold": "2s"}],
             "expectations": [{"name": "path notices", "lane": "path", "reaches": "unsatisfied", "within": "1s", "after": "cut"}]}
            """#
        let run = try api.request("POST", "/v1/sandboxes/\(name)/run", body: #"{"scenario": \#(scenario)}"#, timeout: 60)
        XCTAssertEqual(run.status, 200, run.text)
        XCTAssertEqual(run.object["passed"] as? Bool, true, run.text)
        let folder = try XCTUnwrap(run.object["reportDirectory"] as? String)
        XCTAssertTrue(folder.hasPrefix(store.directory + "/reports/\(name)/api-run-"), folder)
        for file in ["events.jsonl", "timeline.json", "junit.xml", "timeline.html", "summary.md"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: "\(folder)/\(file)"), file)
        }
        XCTAssertTrue(try String(contentsOfFile: folder + "/junit.xml", encoding: .utf8).contains(#"name="path notices""#))
        // The run brought the sandbox up and left it up, with wifi alone; a scenario for two links is refused there.
        let listing = try api.request("GET", "/v1/sandboxes/\(name)")
        XCTAssertEqual(listing.object["cellular"] as? Bool, false)
        let refused = try api.request("POST", "/v1/sandboxes/\(name)/run", body: #"{"scenario": "handover"}"#)
        XCTAssertEqual(refused.status, 409, refused.text)
        XCTAssertTrue((refused.object["error"] as? String)?.hasPrefix("scenario 'handover' is written for wifi and cellular") ?? false, refused.text)
        XCTAssertEqual(try api.request("POST", "/v1/sandboxes/\(name)/run", body: #"{"scenario": "tunel"}"#).status, 422)
    }

    func testTCPEndpointsNeedTheToken() throws {
        let (server, _, store) = try makeServer(tcp: true)
        guard case let .tcp(_, port)? = server.endpoints.last, let token = server.token else { return XCTFail("no TCP endpoint") }
        let tokenPath = APIConfiguration.tokenPath(in: store)
        var info = stat()
        XCTAssertEqual(stat(tokenPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        let tcp = APITestClient(tcpPort: port)
        let refused = try tcp.request("GET", "/v1/profiles/edge")
        XCTAssertEqual(refused.status, 401)
        XCTAssertEqual(refused.header("WWW-Authenticate"), #"Bearer realm="linkcond""#)
        XCTAssertEqual(try tcp.request("GET", "/v1/profiles/edge", headers: ["Authorization": "Bearer wrong"]).status, 401)
        let edge = try tcp.request("GET", "/v1/profiles/edge", headers: ["Authorization": "Bearer \(token.value)"])
        XCTAssertEqual(edge.status, 200)
        XCTAssertEqual(edge.object["name"] as? String, "edge")
        server.stop()
        XCTAssertNotEqual(access(tokenPath, F_OK), 0, "the token outlived the server")
        XCTAssertNotEqual(access(APIConfiguration.socketPath(in: store), F_OK), 0, "the socket outlived the server")
    }
}
