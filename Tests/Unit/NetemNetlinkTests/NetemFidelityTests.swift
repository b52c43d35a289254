import Conditioning
import Profiles
import Sandboxing
import XCTest

/// What netem cannot do of the fidelity fields is refused before any netlink write: delay and loss traces
/// (queues: NetemQueueBackendTests); a DropTail in packets is netem's `limit`; an ordered jitter
/// is installed as netem's own, and `show` says so.
extension NetemBackendTests {
    private func profile(_ downlink: String, source: String = "fidelity.json") throws -> Profile {
        try ProfileParser.parse(text: #"{"name": "fidelity", "downlink": {"# + downlink + "}}", source: source)
    }

    func testADropTailQueueInPacketsIsNetemsLimit() throws {
        let lab = try makeLab()
        try lab.backend.apply(try profile(#""rate": "1mbit", "delay": "10ms", "queue": "40 packets""#))
        XCTAssertEqual(try netem(lab.router, parent: .root).1.limit, 40)
    }

    func testDelayAndLossTracesAreRefusedBeforeAnyNetlinkWrite() throws {
        let folder = NSTemporaryDirectory() + "linkcond-netem-traces-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: folder) }
        try "0 10ms\n1000 50ms\n".write(toFile: folder + "/d.trace", atomically: true, encoding: .utf8)
        for (members, words) in [(#""delayTrace": "d.trace""#, "a delay trace"), (#""lossTrace": "d.trace""#, "a loss trace")] {
            let lab = try makeLab()
            let conditions = members.contains("loss") ? #""lossTrace": "l.trace""# : members
            if members.contains("loss") { try "0 1%\n".write(toFile: folder + "/l.trace", atomically: true, encoding: .utf8) }
            XCTAssertThrowsError(try lab.backend.apply(try profile(conditions, source: folder + "/fidelity.json"))) { error in
                guard case SandboxError.unsupported(let detail) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(detail.contains("follows \(words)"), detail)
            }
            XCTAssertEqual(lab.sentMessages, 0)
        }
    }

    func testOrderedJitterIsShownAsNetemsWithANote() throws {
        let lab = try makeLab()
        try lab.backend.apply(try profile(#""delay": "30ms", "jitter": {"amount": "10ms", "distribution": "normal"}"#))
        let transaction = lab.backend.sandbox.look()
        let downlink = try XCTUnwrap(try lab.backend.installed(in: transaction).first { $0.site.direction == .downlink })
        let stage = try XCTUnwrap(downlink.stages.first { $0.kind == "netem" })
        XCTAssertEqual(stage.agreesWithRecord, true)
        // The derived limit: 40 ms (delay + jitter) at 1 Gbit/s is 5 MB, in 64-byte packets with 25% headroom.
        XCTAssertEqual(stage.text, "delay 30ms ± 10ms normal (netem) limit 97657")
        XCTAssertTrue(stage.notes.first?.contains("ordered jitter model, which netem does not have") ?? false, "\(stage.notes)")
    }
}
