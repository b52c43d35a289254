import Conditioning
import Foundation
import PathMonitor
import Sandboxing
import Scenarios
import Timeline
import XCTest

/// Under 100% loss the link stays up, so the path monitor stays satisfied; only the prober notices. Through
/// `LinkLab`, the library API users' own tests use, with each backend (a concrete class per backend, below).
/// The userspace engine keeps carrier under 100% loss as netem does (loss is not a link change), so the
/// expectations are the same.
class ConditioningReachabilityTests: ConditioningTestCase {
    private func labOptions(_ store: SandboxStore) -> LinkLab.Options {
        LinkLab.Options(
            profile: "lte", reportDirectory: store.directory + "/reports", store: store, catalogDirectory: try? catalog().directory, backend: kind == .netem ? .netem : .userspace)
    }

    func checkHundredPercentLossIsSeenByTheProberNotByThePathMonitor() async throws {
        let store = SandboxStore(directory: NSTemporaryDirectory() + "lcit-lab-\(getpid())-\(UniqueName.next())")
        defer { try? FileManager.default.removeItem(atPath: store.directory) }
        let settings = ReachabilitySettings()
        try await LinkLab.with(labOptions(store)) { lab in
            XCTAssertEqual(lab.conditions.kind, kind, "the lab conditions its sandbox with another backend")
            try await lab.waitForReachability(.online, within: 10)
            try await lab.waitForPath(.satisfied, within: 2)

            let lossStart = lab.recorder.now()
            try lab.apply("100-loss")
            try await lab.waitForReachability(.offline, within: settings.detectionBound + 1)
            let detected = Double(lab.recorder.now() - lossStart) / 1e9
            XCTAssertLessThanOrEqual(detected, settings.detectionBound + 0.5, "offline seen after \(detected) s")

            let clearStart = lab.recorder.now()
            try lab.clear()
            try await lab.waitForReachability(.online, within: settings.recoveryBound + 1)
            let recovered = Double(lab.recorder.now() - clearStart) / 1e9
            XCTAssertLessThanOrEqual(recovered, settings.recoveryBound + 0.5, "online again after \(recovered) s")
            print("\(MeasurementTable.prefix) [\(kind.rawValue)] 100-loss: prober offline after \(String(format: "%.2f", detected)) s "
                + "(bound \(settings.detectionBound) s), online \(String(format: "%.2f", recovered)) s after clear (bound \(settings.recoveryBound) s)")

            // The path monitor never left "satisfied" during all of it.
            let pathStates = try lab.events().filter { $0.lane == .path && $0.t >= lossStart }.compactMap(\.state)
            XCTAssertTrue(pathStates.allSatisfy { $0 == "satisfied" }, "path states during the loss: \(pathStates)")
            XCTAssertEqual(lab.monitor.currentPath?.status, .satisfied)
        }
        XCTAssertTrue(store.names().isEmpty, "the lab sandbox was removed: \(store.names())")
    }
}

/// The prober under loss with netem (the kernel-VM tier).
final class NetemReachabilityTests: ConditioningReachabilityTests {
    override class var backendKind: BackendKind { .netem }

    func testHundredPercentLossIsSeenByTheProberNotByThePathMonitor() async throws {
        try await checkHundredPercentLossIsSeenByTheProberNotByThePathMonitor()
    }
}

/// The prober under loss with the userspace engine.
final class EngineReachabilityTests: ConditioningReachabilityTests {
    override class var backendKind: BackendKind { .userspace }

    func testHundredPercentLossIsSeenByTheProberNotByThePathMonitor() async throws {
        try await checkHundredPercentLossIsSeenByTheProberNotByThePathMonitor()
    }
}
