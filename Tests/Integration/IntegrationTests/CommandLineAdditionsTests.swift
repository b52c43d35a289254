import Foundation
import Glibc
import NetNamespace
import Profiles
import Sandboxing
import XCTest

/// What a newcomer tries on the command line, each with the answer it now gets: `run --name NEW`, `up
/// --cellular` on a running sandbox, `status` with the profile and LSB codes, a scenario of another shape,
/// inline conditions, `--for` interrupted and killed. The real executable, a store of its own.
final class CommandLineAdditionsTests: SandboxTestCase {
    private func linkcond(_ arguments: [String], store: String) throws -> CommandResult {
        try Command.run(try linkcondExecutable(), arguments, environment: ["LINKCOND_STORE": store])
    }

    private func statusJSON(_ name: String, store: String) throws -> [String: Any] {
        let result = try linkcond(["status", "--name", name, "--json"], store: store)
        return ((try JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [[String: Any]])?.first ?? [:]
    }

    private func wifiProfile(_ name: String, store: String) throws -> String? {
        (try statusJSON(name, store: store)["conditions"] as? [[String: Any]])?.first { $0["link"] as? String == "wifi" }?["profile"] as? String
    }

    func testRunWithANewNameBringsTheSandboxUpAndAScenarioOfAnotherShapeIsRefused() throws {
        let store = try makeStore(prefix: "lccli")
        let name = makeName(store: store)
        let scenario = store + "/short.json"
        try #"{"name": "short", "links": ["wifi"], "steps": [{"name": "a", "apply": "lte", "hold": "1s"}, {"name": "b", "clear": true, "hold": "1s"}]}"#
            .write(toFile: scenario, atomically: true, encoding: .utf8)
        let run = try linkcond(["run", scenario, "--name", name, "--report", store + "/short"], store: store)
        XCTAssertEqual(run.status, 0, run.errorOutput)
        XCTAssertTrue(run.errorOutput.contains("sandbox '\(name)' is not up: the run brings it up (wifi) and leaves it up"), run.errorOutput)
        XCTAssertTrue(FileManager.default.fileExists(atPath: store + "/short/timeline.html"))
        let status = try linkcond(["status", "--name", name], store: store)
        XCTAssertEqual(status.status, 0, "the sandbox the run made is not up and healthy: \(status.output)")

        let handover = try linkcond(["run", "handover", "--name", name, "--report", store + "/handover"], store: store)
        XCTAssertEqual(handover.status, 1)
        XCTAssertTrue(handover.errorOutput.contains(
            "scenario 'handover' is written for wifi and cellular (\"links\": [\"wifi\", \"cellular\"]), and sandbox '\(name)' has wifi alone"), handover.errorOutput)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store + "/handover"), "a run that could not start made its report folder")

        let typo = try linkcond(["run", "tunel"], store: store)
        XCTAssertEqual(typo.status, 1)
        XCTAssertTrue(typo.errorOutput.contains(#"no shipped scenario named "tunel" (did you mean "tunnel"?)"#), typo.errorOutput)
    }

    /// `linkcond scenarios` lists every shipped scenario with the links it declares (text and `--json`), and
    /// `linkcond profiles show NAME` prints a profile that reads back as the catalog's, a typo answered with
    /// the nearest name and exit 1.
    func testScenariosAndProfilesShowList() throws {
        let store = try makeStore(prefix: "lccli")
        let text = try linkcond(["scenarios"], store: store)
        XCTAssertEqual(text.status, 0, text.errorOutput)
        let rows = text.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        let listed = Dictionary(uniqueKeysWithValues: rows.dropFirst().filter { $0.count > 2 && $0[0] != "scenarios:" }.map { ($0[0], $0[1]) })
        XCTAssertEqual(listed, [
            "captive-portal": "wifi", "flaky-wifi": "wifi", "handover": "wifi+cellular", "ipv6-outage": "wifi",
            "slow-dns": "wifi", "tunnel": "wifi", "wifi-to-3g": "wifi+cellular",
        ], text.output)
        let json = try linkcond(["scenarios", "--json"], store: store)
        let entries = (try JSONSerialization.jsonObject(with: Data(json.output.utf8))) as? [[String: Any]] ?? []
        XCTAssertEqual(entries.count, 7, json.output)
        XCTAssertEqual(entries.first { $0["name"] as? String == "handover" }?["links"] as? [String], ["wifi", "cellular"], json.output)

        let shown = try linkcond(["profiles", "show", "edge"], store: store)
        XCTAssertEqual(shown.status, 0, shown.errorOutput)
        let edge = try ProfileCatalog.builtIn.profile(named: "edge")
        XCTAssertEqual(ProfileParser.jsonText(of: try ProfileParser.parse(text: shown.output, source: "stdout")), ProfileParser.jsonText(of: edge))
        XCTAssertEqual(shown.output, ProfileParser.jsonText(of: edge))
        let typo = try linkcond(["profiles", "show", "egde"], store: store)
        XCTAssertEqual(typo.status, 1)
        XCTAssertTrue(typo.errorOutput.contains(#"no profile named "egde" (did you mean "edge"?)"#), typo.errorOutput)
        XCTAssertTrue(typo.output.isEmpty, typo.output)
    }

    func testUpWithCellularAddsTheLinkToARunningSandboxAndKeepsItsConditions() throws {
        let store = try makeStore(prefix: "lccli")
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["apply", "edge", "--name", name], store: store).status, 0)
        let client = try NamedNamespace(existing: try SandboxTopology(name: name).clientNamespace)
        let before = try netlink(client).links().map(\.index)
        let up = try linkcond(["up", "--cellular", "--name", name], store: store)
        XCTAssertEqual(up.status, 0, up.errorOutput)
        XCTAssertTrue(up.output.hasPrefix("sandbox '\(name)' was up with wifi alone: added the cellular link ww0"), up.output)
        let status = try statusJSON(name, store: store)
        XCTAssertEqual(status["cellular"] as? Bool, true)
        XCTAssertEqual(status["healthy"] as? Bool, true, "\(status["problems"] ?? "")")
        XCTAssertEqual(try wifiProfile(name, store: store), "edge")
        // The same namespace, with ww0 added beside what was there.
        let links = try netlink(client).links()
        XCTAssertTrue(links.contains { $0.name == "ww0" && $0.isUp })
        XCTAssertEqual(Set(before).subtracting(links.map(\.index)), [], "an interface of the client went away")
        // The restarted engine holds edge on wifi again, and forwards the new link.
        let show = try linkcond(["show", "--name", name], store: store)
        XCTAssertTrue(show.output.contains("engine main: rate 200kbit delay 440ms"), show.output)
        XCTAssertTrue(show.output.contains("uplink cellular"), show.output)
        let ping = try Command.run("/usr/bin/ip", ["netns", "exec", client.name, "ping", "-c", "1", "-W", "2", "-I", "ww0", "198.19.0.2"])
        XCTAssertEqual(ping.status, 0, "no traffic over the new link: \(ping.output)")
        XCTAssertEqual(try linkcond(["up", "--cellular", "--name", name], store: store).output.hasPrefix("sandbox '\(name)' is up already"), true)
    }

    func testStatusShowsEachLinksProfileAndExitsAsLSBDoes() throws {
        let store = try makeStore(prefix: "lccli")
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["status", "--name", name], store: store).status, 3, "a sandbox that is not up")
        XCTAssertEqual(try linkcond(["apply", "lte", "--name", name], store: store).status, 0)
        let status = try linkcond(["status", "--name", name], store: store)
        XCTAssertEqual(status.status, 0)
        XCTAssertTrue(status.output.contains("  wifi: profile 'lte' applied "), status.output)
        XCTAssertEqual(try wifiProfile(name, store: store), "lte")
    }

    func testInlineConditionsAreCheckedAsAProfileAndChangeNothingWhenRefused() throws {
        let store = try makeStore(prefix: "lccli")
        let name = makeName(store: store)
        let refused = try linkcond(["apply", "--loss", "150%", "--name", name], store: store)
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.errorOutput, "linkcond: --loss: \"150%\" is out of range: expected a percentage from 0% to 100%\n")
        XCTAssertFalse(NamedNamespace.exists(try SandboxTopology(name: name).clientNamespace), "a refused apply made the sandbox")
        let applied = try linkcond(["apply", "--delay", "20ms", "--loss", "1%", "--uplink", "--name", name], store: store)
        XCTAssertEqual(applied.status, 0, applied.errorOutput)
        XCTAssertTrue(applied.output.contains("  downlink: no conditions\n  uplink:   20ms, loss 1%"), applied.output)
        let show = try linkcond(["show", "--name", name], store: store)
        XCTAssertTrue(show.output.contains("engine main: delay 20ms loss 1%"), show.output)
        XCTAssertEqual(try wifiProfile(name, store: store), "inline")
    }

    /// `--for`: the earlier conditions come back when the time is up, at once on Ctrl-C, and — when the command
    /// is killed — with the first change of the sandbox after the time is up.
    func testTimedConditionsComeBackHoweverTheCommandEnds() throws {
        let store = try makeStore(prefix: "lccli")
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["apply", "edge", "--name", name], store: store).status, 0)
        let timed = try linkcond(["apply", "3g", "--for", "1s", "--name", name], store: store)
        XCTAssertEqual(timed.status, 0, timed.errorOutput)
        XCTAssertTrue(timed.output.contains("then wifi back to 'edge'"), timed.output)
        XCTAssertTrue(timed.output.contains("after 1 s: put back what was there (wifi: back to 'edge')"), timed.output)
        XCTAssertEqual(try wifiProfile(name, store: store), "edge")

        let executable = try linkcondExecutable()
        for (signal, expected) in [(SIGINT, Int32(130)), (SIGKILL, Int32(-1))] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["apply", "100-loss", "--for", "2s", "--name", name]
            process.environment = ProcessInfo.processInfo.environment.merging(["LINKCOND_STORE": store]) { _, new in new }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            XCTAssertTrue(try eventually(timeout: 10, interval: 0.05) { try wifiProfile(name, store: store) == "100-loss" })
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
            if expected >= 0 {
                XCTAssertEqual(process.terminationStatus, expected)
                XCTAssertEqual(try wifiProfile(name, store: store), "edge", "Ctrl-C did not put edge back")
                continue
            }
            XCTAssertEqual(try wifiProfile(name, store: store), "100-loss")
            usleep(2_200_000)
            let show = try linkcond(["show", "--name", name], store: store)
            XCTAssertTrue(show.output.contains("is gone: the next apply, clear or run does"), show.output)
            let next = try linkcond(["apply", "lte", "--link", "wl0", "--name", name], store: store)
            XCTAssertTrue(next.errorOutput.contains("put back wifi: back to 'edge'"), next.errorOutput)
            XCTAssertEqual(try wifiProfile(name, store: store), "lte")
        }
    }
}
