import Foundation
import Sandboxing
import XCTest

/// The state file's text (no privileges needed): written and read without Codable, in the format
/// JSONEncoder wrote, so files of either kind read back the same.
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
        state.conditions = SandboxState.AppliedConditions(profile: "edge", source: "/p/edge.json", appliedAt: "2026-12-01T13:52:09Z", links: ["wifi"], targets: ["198.18.9.0/24"])
        return state
    }

    func testAStateReadsBackAsItWasWritten() throws {
        let store = try makeStore()
        for state in [fullState("s1"), SandboxState(name: "s2", cellular: false)] {
            try store.save(state)
            XCTAssertEqual(store.record(state.name), .state(state))
        }
    }

    func testFilesOfJSONEncoderAndOfTheStoreReadTheSame() throws {
        let store = try makeStore()
        let state = fullState("old")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(state).write(to: URL(fileURLWithPath: store.path(for: "old")))
        XCTAssertEqual(store.record("old"), .state(state), "a file JSONEncoder wrote")

        try store.save(state)
        let written = try Data(contentsOf: URL(fileURLWithPath: store.path(for: "old")))
        XCTAssertEqual(try JSONDecoder().decode(SandboxState.self, from: written), state, "JSONDecoder reads what the store writes")
        let text = String(decoding: written, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("{\n  \"backend\""), "keys sorted, indented: \(text)")
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
        var fields = try XCTUnwrap(String(decoding: try JSONEncoder().encode(fullState("bad")), as: UTF8.self) as String?)
        fields = fields.replacingOccurrences(of: "\"pid\":4242", with: "\"pid\":\"4242\"")
        try fields.write(toFile: store.path(for: "bad"), atomically: false, encoding: .utf8)
        XCTAssertEqual(store.record("bad"), .unreadable(detail: "is not a linkcond state file (bad 'processes.0.pid')"))
    }
}
