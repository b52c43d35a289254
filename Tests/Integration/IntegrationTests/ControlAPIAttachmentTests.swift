import Conditioning
import ControlAPI
import Foundation
import Glibc
import NetNamespace
import Sandboxing
import XCTest

/// The control API on attachments (root): a namespace the test built as a container's (ContainerLikeTopology)
/// attached through the API, conditioned, read back, run on, and detached — the target as it was before.
final class ControlAPIAttachmentTests: SandboxTestCase {
    /// A server on the store of an attachment handle of the test's own (detached however the test ends).
    private func makeServer() throws -> (client: APITestClient, attachment: Attachment) {
        let attachment = try makeAttachment()
        let store = attachment.sandboxStore
        let server = ControlAPIServer(APIConfiguration(
            store: store, executable: try linkcondExecutable(), endpoints: [.unix(path: APIConfiguration.socketPath(in: store))]))
        try server.start()
        addTeardownBlock { server.stop() }
        return (APITestClient(socket: APIConfiguration.socketPath(in: store)), attachment)
    }

    /// Round trips between the app and the server namespace (UDP echo, IPv4), in seconds.
    private func roundTrips(_ topology: ContainerLikeTopology, count: Int = 15) throws -> LinkMeasurement.RoundTrips {
        try LinkMeasurement(
            client: topology.app, clientAddress: ContainerLikeTopology.appIPv4.address, server: topology.server,
            serverAddress: ContainerLikeTopology.serverIPv4.address
        ).roundTrips(count: count, timeout: 2)
    }

    private func attachmentNames(_ api: APITestClient) throws -> [String] {
        try api.request("GET", "/v1/attachments").array.compactMap { ($0 as? [String: Any])?["name"] as? String }
    }

    private func milliseconds(_ value: Double?) -> String { value.map { String(format: "%.2f ms", $0 * 1000) } ?? "none" }

    func testTheAPIAttachesConditionsAndDetachesLeavingTheTargetAsItWas() throws {
        let (api, attachment) = try makeServer()
        let name = attachment.name
        let topology = try ContainerLikeTopology.make(in: self)
        for namespace in [topology.app, topology.gateway] { try NamespaceSnapshot.settle(namespace) }
        let before = try NamespaceSnapshot.take(topology.app)

        // Bad input and unknown names first: nothing is made.
        let twoTargets = try api.request("POST", "/v1/attachments", body: #"{"netns": "\#(topology.app.name)", "pid": 1, "name": "\#(name)"}"#)
        XCTAssertEqual(twoTargets.status, 422, twoTargets.text)
        XCTAssertTrue((twoTargets.object["error"] as? String)?.contains(#""pid" cannot be combined with "netns""#) == true, twoTargets.text)
        let noTarget = try api.request("POST", "/v1/attachments", body: #"{"name": "\#(name)"}"#)
        XCTAssertEqual(noTarget.status, 422, noTarget.text)
        let missing = try api.request("POST", "/v1/attachments", body: #"{"netns": "lcit\#(getpid())-nosuch", "name": "\#(name)"}"#)
        XCTAssertEqual(missing.status, 409, missing.text)
        XCTAssertEqual(missing.object["error"] as? String, "network namespace 'lcit\(getpid())-nosuch': /run/netns/lcit\(getpid())-nosuch does not exist; nothing was changed")
        for (method, path) in [("GET", ""), ("GET", "/show"), ("DELETE", ""), ("POST", "/clear")] {
            let answer = try api.request(method, "/v1/attachments/\(name)\(path)")
            XCTAssertEqual(answer.status, 404, "\(method) \(path): \(answer.text)")
            XCTAssertEqual(answer.object["error"] as? String,
                           "there is no attachment '\(name)': see GET /v1/attachments ('linkcond status'), or attach one with POST /v1/attachments")
        }
        XCTAssertFalse(attachment.exists, "a refused attach left \(attachment.leftovers())")
        let unattached = try roundTrips(topology)

        // Attach with the engine (the backend this host has), as `linkcond attach --netns APP --dev eth0`.
        let created = try api.request(
            "POST", "/v1/attachments", body: #"{"netns": "\#(topology.app.name)", "name": "\#(name)", "dev": "eth0", "backend": "userspace"}"#)
        XCTAssertEqual(created.status, 201, created.text)
        XCTAssertEqual(created.object["kind"] as? String, "attachment")
        XCTAssertEqual(created.object["healthy"] as? Bool, true, created.text)
        XCTAssertEqual(created.object["interface"] as? String, "eth0")
        XCTAssertEqual(created.object["backend"] as? String, "userspace")
        // (Attachments are found by their namespaces too, so other processes' may be listed beside this one.)
        XCTAssertTrue(try attachmentNames(api).contains(name))
        let listed = try api.request("GET", "/v1/sandboxes").array.compactMap { $0 as? [String: Any] }
        XCTAssertEqual(listed.filter { $0["name"] as? String == name }.map { $0["kind"] as? String }, ["attachment"], "status --json lists attachments")
        for (path, body) in [("/v1/sandboxes", #"{"name": "\#(name)"}"#), ("/v1/sandboxes/\(name)/apply", #"{"profile": "edge"}"#)] {
            let sandbox = try api.request("POST", path, body: body)
            XCTAssertEqual(sandbox.status, 409, "\(path): \(sandbox.text)")
            XCTAssertTrue((sandbox.object["error"] as? String)?.hasPrefix("'\(name)' is an attachment, not a sandbox") == true, sandbox.text)
        }
        let again = try api.request("POST", "/v1/attachments", body: #"{"netns": "\#(topology.app.name)", "name": "other"}"#)
        XCTAssertEqual(again.status, 409, again.text)
        XCTAssertTrue((again.object["error"] as? String)?.contains("is already attached, as linkcond's attachment '\(name)'") == true, again.text)

        // The events: the path as seen inside the target (its eth0), and no prober.
        let stream = try api.open("GET", "/v1/attachments/\(name)/events")
        let first = try XCTUnwrap(stream.nextLine(timeout: 5), "no first line")
        let path = (first["event"] as? [String: Any])?["path"] as? [String: Any]
        XCTAssertEqual(first["lane"] as? String, "path")
        XCTAssertEqual(path?["status"] as? String, "satisfied", "\(first)")
        XCTAssertEqual((path?["availableInterfaces"] as? [[String: Any]])?.compactMap { $0["name"] as? String }, ["eth0"], "\(first)")
        let probe = try api.request("GET", "/v1/attachments/\(name)/events?probe=true")
        XCTAssertEqual(probe.status, 409)
        XCTAssertTrue((probe.object["error"] as? String)?.contains("which attachment '\(name)' does not have") == true, probe.text)

        // Conditions: 40 ms each way on the spliced link, read back, and in the round trips.
        let attached = try roundTrips(topology)
        let applied = try api.request("POST", "/v1/attachments/\(name)/apply", body: #"{"downlink": {"delay": "40ms"}, "uplink": {"delay": "40ms"}}"#)
        XCTAssertEqual(applied.status, 200, applied.text)
        XCTAssertEqual(applied.object["profile"] as? String, "inline")
        XCTAssertEqual(applied.object["backend"] as? String, "userspace")
        let show = try api.request("GET", "/v1/attachments/\(name)/show")
        XCTAssertEqual(show.status, 200, show.text)
        XCTAssertEqual((show.object["link"] as? [String: Any])?["profile"] as? String, "inline")
        XCTAssertEqual(show.object["interface"] as? String, "eth0")
        let sites = show.object["sites"] as? [[String: Any]] ?? []
        XCTAssertEqual(Set(sites.compactMap { $0["direction"] as? String }), ["uplink", "downlink"], show.text)
        for site in sites {
            let text = ((site["stages"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
            XCTAssertTrue(text.hasPrefix("delay 40ms"), "\(site["direction"] ?? "?"): \(text)")
        }
        let status = try api.request("GET", "/v1/attachments/\(name)/status")
        XCTAssertEqual(status.status, 200, status.text)
        XCTAssertEqual(status.object["healthy"] as? Bool, true, status.text)
        XCTAssertEqual(status.object["step"] as? String, "attached")
        let conditioned = try roundTrips(topology)
        let excess = (conditioned.median ?? 0) - (attached.median ?? 0)
        print("linkcond-api-attach: round trip median unattached \(milliseconds(unattached.median)), attached \(milliseconds(attached.median)), "
            + "delay 40ms each way \(milliseconds(conditioned.median)) (min \(milliseconds(conditioned.minimum))); excess \(milliseconds(excess))")
        XCTAssertEqual(conditioned.samples.count, 15, "conditioned round trips lost")
        XCTAssertGreaterThanOrEqual(conditioned.minimum ?? 0, 0.080, "a round trip shorter than the two delays")
        XCTAssertEqual(excess, 0.080, accuracy: 0.010, "the median excess over the attached control is not the 80 ms applied")

        // Refusals as the CLI gives them; nothing changes.
        let link = try api.request("POST", "/v1/attachments/\(name)/apply", body: #"{"profile": "edge", "link": "wl0"}"#)
        XCTAssertEqual(link.status, 422, link.text)
        XCTAssertEqual(link.object["error"] as? String, "attachment '\(name)' has one link, its spliced interface: leave \"link\" out")
        let backend = try api.request("POST", "/v1/attachments/\(name)/apply", body: #"{"profile": "edge", "backend": "netem"}"#)
        XCTAssertEqual(backend.status, 409, backend.text)
        XCTAssertEqual(backend.object["error"] as? String,
                       "attachment '\(name)' is attached with the userspace backend, not netem: detach it and attach again with --backend netem")
        let run = try api.request("POST", "/v1/attachments/\(name)/run", body: #"{"scenario": "ipv6-outage"}"#)
        XCTAssertEqual(run.status, 409, run.text)
        XCTAssertTrue((run.object["error"] as? String)?.hasPrefix("scenario 'ipv6-outage' cannot run on attachment '\(name)': step ") == true, run.text)
        XCTAssertEqual(((try api.request("GET", "/v1/attachments/\(name)/show").object["link"]) as? [String: Any])?["profile"] as? String, "inline")

        // "for": other conditions for a second, then the server puts the inline ones back.
        let timed = try api.request("POST", "/v1/attachments/\(name)/apply", body: #"{"profile": "3g", "for": "1s"}"#)
        XCTAssertEqual(timed.status, 200, timed.text)
        XCTAssertEqual(timed.object["then"] as? String, "inline", timed.text)
        XCTAssertNotNil(timed.object["until"] as? String, timed.text)
        XCTAssertEqual(((try api.request("GET", "/v1/attachments/\(name)/show").object["link"]) as? [String: Any])?["profile"] as? String, "3g")
        let putBack = try eventually(timeout: 5) {
            ((try api.request("GET", "/v1/attachments/\(name)/show").object["link"]) as? [String: Any])?["profile"] as? String == "inline"
        }
        XCTAssertTrue(putBack, "the inline conditions did not come back after \"for\": 1s")

        // Clear: the round trips are the attached control's again.
        let cleared = try api.request("POST", "/v1/attachments/\(name)/clear")
        XCTAssertEqual(cleared.status, 200, cleared.text)
        XCTAssertEqual((cleared.object["cleared"] as? [Any])?.count, 2, cleared.text)
        XCTAssertTrue((try api.request("GET", "/v1/attachments/\(name)/show").object["link"] as? [String: Any])?["profile"] is NSNull)
        let afterClear = try roundTrips(topology)
        XCTAssertLessThan((afterClear.median ?? 1) - (attached.median ?? 0), 0.010, "cleared, yet \(milliseconds(afterClear.median))")

        // Detach: the stream ends, and the target is as it was.
        let detached = try api.request("DELETE", "/v1/attachments/\(name)")
        XCTAssertEqual(detached.status, 200, detached.text)
        XCTAssertEqual(detached.object["movedHome"] as? Bool, true, detached.text)
        XCTAssertEqual(detached.object["notes"] as? [String], [], detached.text)
        var end: [String: Any]?
        while end == nil, let line = try stream.nextLine(timeout: 5) {
            if line["lane"] as? String == "stream" { end = line }
        }
        XCTAssertEqual(end?["end"] as? String, "the attachment's target namespace went away (it was detached)")
        stream.close()
        var after = try NamespaceSnapshot.take(topology.app)
        _ = try eventually(timeout: 5) {
            after = try NamespaceSnapshot.take(topology.app)
            return after == before
        }
        XCTAssertTrue(before == after, "the target differs after detach:\n\(before.differences(after))")
        XCTAssertFalse(NamedNamespace.exists(attachment.wireNamespace))
        XCTAssertFalse(NamedNamespace.exists(attachment.targetNamespace))
        XCTAssertEqual(try api.request("GET", "/v1/attachments/\(name)").status, 404)
        XCTAssertFalse(try attachmentNames(api).contains(name), "listed after detach")
    }

    /// A scenario through the API on an attachment: its steps act on the spliced link, it passes, its reports
    /// are where the answer says, and the attachment is left attached without conditions.
    func testAScenarioRunsOnAnAttachmentThroughTheAPI() throws {
        let (api, attachment) = try makeServer()
        let name = attachment.name
        let topology = try ContainerLikeTopology.make(in: self)
        try NamespaceSnapshot.settle(topology.app)
        let created = try api.request("POST", "/v1/attachments", body: #"{"netns": "\#(topology.app.name)", "name": "\#(name)", "backend": "userspace"}"#)
        XCTAssertEqual(created.status, 201, created.text)
        let reports = NSTemporaryDirectory() + "lcit-api-scenario-\(getpid())-\(UniqueName.next())"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: reports) }
        let scenario = #"""
            {"name": "attached-edge", "description": "edge on an attachment, the path satisfied throughout",
             "steps": [{"name": "baseline", "clear": true, "hold": "1s"}, {"name": "edge", "apply": "edge", "hold": "2s"},
                       {"name": "back", "clear": true, "hold": "1s"}],
             "expectations": [{"name": "path satisfied under edge", "lane": "path", "holds": "satisfied", "during": "edge"}]}
            """#
        let run = try api.request("POST", "/v1/attachments/\(name)/run", body: #"{"scenario": \#(scenario), "report": "\#(reports)"}"#, timeout: 60)
        XCTAssertEqual(run.status, 200, run.text)
        XCTAssertEqual(run.object["passed"] as? Bool, true, run.text)
        XCTAssertEqual(run.object["attachment"] as? String, name)
        XCTAssertEqual(run.object["reportDirectory"] as? String, reports)
        let events = try String(contentsOfFile: reports + "/events.jsonl", encoding: .utf8)
        XCTAssertTrue(events.contains(#""state":"edge""#), "the run applied edge")
        let status = try api.request("GET", "/v1/attachments/\(name)")
        XCTAssertEqual(status.object["healthy"] as? Bool, true, "left attached: \(status.text)")
        XCTAssertTrue((try api.request("GET", "/v1/attachments/\(name)/show").object["link"] as? [String: Any])?["profile"] is NSNull, "conditions put back")
        XCTAssertEqual(try api.request("DELETE", "/v1/attachments/\(name)").status, 200)
    }
}
