import Foundation
import Sandboxing
import XCTest

/// The state file's text (no privileges needed): written and read with JSONDocument, every link's
/// conditions with the profile's document; files of the previous version still read.
final class SandboxStateFileTests: XCTestCase {
    private func makeStore() throws -> SandboxStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lcstate-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return SandboxStore(directory: directory)
    }

    private func fullState(_ name: String) -> SandboxState {
        var state = SandboxState(name: name, cellular: true, wire: true, backend: "userspace")
        state.namespaces = ["lc-\(name)-client", "lc-\(name)-router"]
        state.processes = [
            RecordedProcess(role: .engine, pid: 4242, startTime: 9_876_543_210, executable: "/usr/local/bin/linkcond", marker: "/run/linkcond/\(name)"),
            RecordedProcess(role: .server, pid: 17, startTime: 3, executable: "/opt/link \"cond\"\\x", marker: "m\u{1}"),
        ]
        state.complete = true
        state.conditions["wifi"] = SandboxState.AppliedConditions(
            profile: "edge", source: "/p/edge.json", appliedAt: "2026-12-01T13:52:09Z", targets: ["198.18.9.0/24"],
            document: .object([("name", .string("edge")), ("downlink", .object([("rate", .string("240kbit"))])), ("targets", .array([]))]))
        state.conditions["cellular"] = SandboxState.AppliedConditions(profile: "3g", source: nil, appliedAt: "2026-12-01T13:52:10Z")
        return state
    }

    func testAStateReadsBackAsItWasWritten() throws {
        let store = try makeStore()
        for state in [fullState("s1"), SandboxState(name: "s2", cellular: false)] {
            try store.save(state)
            XCTAssertEqual(store.record(state.name), .state(state))
        }
    }

    func testTheStoreWritesKeysSortedAndIndented() throws {
        let store = try makeStore()
        try store.save(fullState("sorted"))
        let text = try String(contentsOfFile: store.path(for: "sorted"), encoding: .utf8)
        XCTAssertTrue(text.hasPrefix("{\n  \"backend\""), "keys sorted, indented: \(text)")
        XCTAssertTrue(text.contains("\"version\": 3"), text)
    }

    /// A file of version 2 (what the previous release wrote: one profile for the links it names, or for
    /// all of them) reads as each of those links holding it, and is written back as version 3.
    func testAFileOfTheEarlierVersionStillReads() throws {
        let store = try makeStore()
        let old = #"""
            {"backend": "userspace", "cellular": true, "complete": true, "createdAt": "2026-12-01T13:52:09Z",
             "conditions": {"appliedAt": "2026-12-01T13:53:00Z", "profile": "lte", "source": "/p/lte.json"},
             "name": "old", "namespaces": ["lc-old-client"], "processes": [], "version": 2, "wire": true}
            """#
        try old.write(toFile: store.path(for: "old"), atomically: false, encoding: .utf8)
        guard case let .state(state) = store.record("old") else { return XCTFail("\(store.record("old"))") }
        let lte = SandboxState.AppliedConditions(profile: "lte", source: "/p/lte.json", appliedAt: "2026-12-01T13:53:00Z")
        XCTAssertEqual(state.conditions, ["wifi": lte, "cellular": lte])
        let oneLink = old.replacingOccurrences(of: #""profile": "lte","#, with: #""profile": "lte", "links": ["cellular"],"#)
        try oneLink.write(toFile: store.path(for: "old"), atomically: false, encoding: .utf8)
        guard case let .state(narrow) = store.record("old") else { return XCTFail("\(store.record("old"))") }
        XCTAssertEqual(narrow.conditions, ["cellular": lte])
        try store.save(narrow)
        guard case let .state(again) = store.record("old") else { return XCTFail("\(store.record("old"))") }
        XCTAssertEqual(again.conditions, narrow.conditions)
        XCTAssertEqual(again.version, SandboxState.currentVersion)
    }

    func testAFileThatIsNotAStateSaysWhy() throws {
        let store = try makeStore()
        let cases: [(String, String)] = [
            ("{\"version\": 2, \"na", "is not a linkcond state file"),
            ("{}", "is not a linkcond state file (no 'name')"),
            ("[1]", "is not a linkcond state file (not an object)"),
            ("  \n", "is empty"),
        ]
        for (text, expected) in cases {
            try text.write(toFile: store.path(for: "bad"), atomically: false, encoding: .utf8)
            guard case let .unreadable(detail) = store.record("bad") else { return XCTFail("\(text.debugDescription) was read") }
            XCTAssertTrue(detail.hasPrefix(expected), "\(text.debugDescription): \(detail)")
        }
        try store.save(fullState("bad"))
        var fields = try String(contentsOfFile: store.path(for: "bad"), encoding: .utf8)
        XCTAssertTrue(fields.contains("\"pid\": 4242"), fields)
        fields = fields.replacingOccurrences(of: "\"pid\": 4242", with: "\"pid\": \"4242\"")
        try fields.write(toFile: store.path(for: "bad"), atomically: false, encoding: .utf8)
        XCTAssertEqual(store.record("bad"), .unreadable(detail: "is not a linkcond state file (bad 'processes.0.pid')"))
    }
}
