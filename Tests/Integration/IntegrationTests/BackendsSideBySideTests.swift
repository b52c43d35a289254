import Conditioning
import Foundation
import Profiles
import XCTest

/// Both backends side by side, once: the same catalog profile through netem qdiscs and through the userspace
/// engine, on the same kernel (the VM tier's, which has sch_netem), one after the other in sandboxes of
/// their own. Each is measured and checked against the profile exactly as the conditioning suite checks it
/// (``ConditioningTestCase/measureProfile(_:kind:file:line:)``: read-back, round trip, loss, throughput), and
/// the two are compared with each other: the losses they measured agree within the 99.9% bound of a
/// difference of two such measurements, and the table shows both round trips beside their baselines.
///
/// `very-bad-network` has all that both backends model alike (delay, rate and random loss, each way), and
/// the loss is large enough (10%) that the comparison means something after a few seconds of traffic. This
/// is also netem's measurement of that profile (NetemProfileTests has no method of its own for it, so the VM
/// tier measures it once).
/// Skipped where the kernel has no netem, failed there with LINKCOND_REQUIRE_NETEM=1 (the VM tier sets it).
final class BackendsSideBySideTests: ConditioningTestCase {
    override class var backendKind: BackendKind { .netem }

    func testTheSameProfileThroughNetemAndTheEngine() throws {
        // Made again when the machine stalled meanwhile, as each profile's measurement is (a CI rehearsal: netem
        // lost 27.25% of very-bad-network's downlink where it loses 10%, in a run that took no stall watch).
        try measuredAgainIfTheMachineStalled { try measureSideBySide() }
    }

    private func measureSideBySide() throws {
        let profile = try catalog().profile(named: "very-bad-network")
        _ = try linkcondExecutable()  // the engine's executable, before netem's half takes its time
        let netem = try measureProfile(profile, kind: .netem)
        let engine = try measureProfile(profile, kind: .userspace)

        let table = MeasurementTable(.netem, "side by side: \(profile.name) through netem and through the engine")
        defer { table.print() }
        func roundTrip(_ measurement: ProfileMeasurement) -> String {
            "\(measurement.roundTripMedian.map(MeasureFormat.ms) ?? "-") (baseline \(MeasureFormat.ms(measurement.baseline.roundTripMedian)))"
        }
        table.add("round trip", "both", expected: "netem \(roundTrip(netem))", measured: "engine \(roundTrip(engine))", verdict: "info")
        for direction in [LinkMeasurement.Direction.uplink, .downlink] {
            let model = DirectionModel(direction, of: profile)
            guard let p = model.expectedLoss, p > 0, p < 1, let a = netem.loss[direction], let b = engine.loss[direction] else {
                XCTFail("\(direction): \(profile.name) should lose a share of its packets, measured on both backends")
                continue
            }
            // Two independent estimates of the same p: their difference has the variance of both.
            let variance = p * (1 - p) * model.lossVarianceInflation
            let bound = lossZ * (variance / Double(max(a.read, 1)) + variance / Double(max(b.read, 1))).squareRoot()
            table.check(
                abs(a.fraction - b.fraction) <= bound, "loss", direction.rawValue,
                expected: "netem \(MeasureFormat.percent(a.fraction)) (\(a.lost)/\(a.read))",
                measured: "engine \(MeasureFormat.percent(b.fraction)) (\(b.lost)/\(b.read)), differ by ≤ \(String(format: "%.2f", bound * 100))",
                "the backends lose different shares of the same profile's packets")
        }
    }
}
