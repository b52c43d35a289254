import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import Sandboxing
import XCTest

/// Where the userspace engine is more faithful to a real link than netem, each shown with real traffic
/// through the engine in a real sandbox (the model: `Sources/LinkEmulation/DirectionEmulator.swift`):
///
/// - latency is delay + serialization + queueing: a burst's k-th frame arrives k frame times plus the delay
///   after the burst starts;
/// - jitter keeps the frames' order (netem reorders on jitter: 65 inversions in 200 packets at
///   `delay 30ms 15ms`) unless the profile asks for reordering;
/// - no silent tail drop at netem's default of 1000 frames: the limit comes from the bandwidth-delay
///   product, and what a small limit drops is exactly what the engine counts as queue-dropped;
/// - a corrupted TCP segment is caught and dropped by the receiver's checksum (the engine never leaves
///   offloads that would let the receiver skip the check), so the data that arrives is intact.
///
/// Every number expected here comes from the profile and the engine's documented model, none from an
/// earlier run. Each test makes its own sandbox and removes it, pass or fail.
final class EngineFidelityTests: ConditioningTestCase {
    override class var backendKind: BackendKind { .userspace }

    private var clientAddress: IPAddress { SandboxPlan.wifiSubnet.peerIPv4.address }

    private func apply(_ uplink: LinkConditions, to measured: MeasuredSandbox, name: String) throws {
        let profile = Profile(name: name, uplink: uplink)
        _ = try measured.backend.apply(profile, links: nil)
        let held = try EngineWitness.show(measured.engineSocket)
        XCTAssertTrue(EngineWitness.same(held.uplink.conditions, try EngineWitness.encoded(uplink)), "the engine does not hold \(name)")
    }

    private func namespaces(_ measured: MeasuredSandbox) throws -> (client: NamedNamespace, server: NamedNamespace) {
        (try NamedNamespace(existing: measured.topology.clientNamespace), try NamedNamespace(existing: measured.topology.serverNamespace))
    }

    // MARK: latency = delay + serialization + queueing

    /// 25 full-size frames (1500 bytes on the wire) sent back to back into `rate 2mbit delay 40ms`: each
    /// takes 6 ms to serialize, so the k-th (k = 1…25) waits (k − 1) × 6 ms behind the frames before it,
    /// takes 6 ms itself, then propagates 40 ms: it arrives k × 6 ms + 40 ms after the burst started — the
    /// last one 190 ms, a delay line of 40 ms after a transmitter that is busy for 150 ms.
    ///
    /// Arrival times are the kernel's receive stamps (SO_TIMESTAMPNS) in the server namespace, so the test
    /// reads no scheduling delay of its own reader. No frame may arrive early (the engine never sends before
    /// a frame's time); the median lateness stays within 2 ms (the engine keeps its departure times: this is
    /// the check that catches an engine late as a rule, which the conditioning suite's round trips take as
    /// their control), and the largest within 1 ms of the largest departure lateness the engine itself
    /// recorded (a busy machine wakes its thread late now and then, and its histogram shows by how much; a
    /// frame later than that was held by the model, not the machine); the median spacing of successive
    /// arrivals is the frame time within 2%. (netem's rule gives these same times for a burst
    /// into a fixed delay; it differs when queueing meets jitter, where a queued packet's own delay is
    /// absorbed by its wait.)
    func testLatencyIsDelayPlusSerializationPlusQueueing() throws {
        let measured = try makeMeasuredSandbox()
        let rate = 2_000_000.0
        let delay = 0.040
        try apply(LinkConditions(rate: UInt64(rate), delay: UInt64(delay * 1e9)), to: measured, name: "burst-2mbit-40ms")
        let burst = NumberedDatagrams(count: 25, payload: 1458, interval: 0)
        let frameTime = Double(wireBytes(payload: burst.payload) * 8) / rate
        XCTAssertEqual(frameTime, 0.006, accuracy: 1e-12, "1500-byte frames at 2 Mbit/s")
        let (client, server) = try namespaces(measured)
        let outcome = try burst.run(from: client, clientAddress, to: server, SandboxPlan.serverIPv4, drain: 0.5)
        let table = MeasurementTable(kind, "latency = delay + serialization + queueing: 25 × 1500 B back to back, 2mbit, 40ms")
        defer { table.print() }

        table.check(outcome.arrivals.count == burst.count && outcome.inversions == 0, "arrivals", "uplink",
                    expected: "\(burst.count), in order", measured: "\(outcome.arrivals.count), \(outcome.inversions) inversions",
                    "frames were lost or reordered")
        var lateness: [Double] = []
        var points: [(Double, Double)] = []
        for arrival in outcome.arrivals.sorted(by: { $0.sequence < $1.sequence }) {
            let k = Double(arrival.sequence + 1)
            let expected = k * frameTime + delay
            let measuredOffset = Double(arrival.received - outcome.start) / 1e9
            lateness.append(measuredOffset - expected)
            points.append((k, measuredOffset))
            if [1, 2, 13, 25].contains(arrival.sequence + 1) {
                table.add("frame \(arrival.sequence + 1)", "uplink", expected: "\(Int(k)) × 6 ms + 40 ms = \(MeasureFormat.ms(expected))",
                          measured: MeasureFormat.ms(measuredOffset), verdict: "info")
            }
        }
        guard lateness.count >= 3 else { return XCTFail("too few arrivals: \(outcome.arrivals.count)") }
        let sorted = lateness.sorted()
        let median = sorted[sorted.count / 2]
        let engineLatest = Double(try EngineWitness.show(measured.engineSocket).uplink.latenessMaximum ?? 0) / 1e9
        let latest = engineLatest + 0.001
        table.check(sorted[0] >= -0.0005 && median >= -0.0005 && median <= 0.002 && sorted.last! <= latest, "lateness", "uplink",
                    expected: "≥ -0.5 ms, median ≤ 2 ms, max ≤ \(MeasureFormat.ms(latest)) (the engine's latest departure + 1 ms)",
                    measured: "min \(MeasureFormat.ms(sorted[0])), median \(MeasureFormat.ms(median)), max \(MeasureFormat.ms(sorted.last!))",
                    "the arrivals do not follow k × frame time + delay")
        // The transmitter's pace: successive frames arrive one frame time apart (the median spacing, so one
        // frame the machine delivered late does not decide it).
        let times = points.map(\.1)
        let spacings = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
        let spacing = spacings[spacings.count / 2]
        table.check(abs(spacing - frameTime) <= 0.02 * frameTime, "spacing", "uplink",
                    expected: "\(MeasureFormat.ms(frameTime)) ± 2% (median)", measured: String(format: "%.3f ms (median)", spacing * 1000),
                    "frames do not leave the transmitter one frame time apart")
        XCTAssertTrue(try measured.sandbox.down())
    }

    // MARK: jitter keeps order

    /// 1000 numbered datagrams, one every millisecond, through `delay 30ms jitter 15ms` (uniform): each frame
    /// draws a delay from 15…45 ms, far more than the 1 ms between frames, so netem would deliver many out of
    /// order. The engine keeps the order (its delay wanders smoothly in time, correlation length 70 ms here;
    /// the rare frame whose draw would overtake the one before waits for it), so there are no inversions, no
    /// frame arrives sooner than the smallest delay, and over the second the stream lasts (14 correlation
    /// lengths; 200 ms once was too short to see it wander 10 ms) the one-way delays spread. With `reorder 25%` added, the frames the engine picks skip
    /// the delay line and overtake earlier ones: there are inversions, and the engine counts them.
    func testJitterKeepsOrderUnlessTheProfileReorders() throws {
        let measured = try makeMeasuredSandbox()
        let (client, server) = try namespaces(measured)
        let long = NumberedDatagrams(count: 1000, payload: 64, interval: 0.001)
        let stream = NumberedDatagrams(count: 200, payload: 64, interval: 0.001)
        let table = MeasurementTable(kind, "jitter keeps order: 1000 datagrams 1 ms apart, delay 30ms jitter 15ms")
        defer { table.print() }

        let jittered = LinkConditions(delay: 30_000_000, jitter: 15_000_000)
        try apply(jittered, to: measured, name: "jitter-30ms-15ms")
        var before = try EngineWitness.show(measured.engineSocket).uplink.counters
        let ordered = try long.run(from: client, clientAddress, to: server, SandboxPlan.serverIPv4, drain: 0.3)
        var delta = try EngineWitness.show(measured.engineSocket).uplink.counters - before
        let oneWay = ordered.arrivals.map(\.oneWay)
        let spread = (oneWay.max() ?? 0) - (oneWay.min() ?? 0)
        table.check(ordered.arrivals.count == long.count && ordered.inversions == 0 && delta.reordered == 0, "order", "uplink",
                    expected: "1000 arrive, 0 inversions",
                    measured: "\(ordered.arrivals.count) arrive, \(ordered.inversions) inversions, \(delta.reordered) reordered",
                    "jitter reordered frames although the profile does not ask for reordering")
        table.check((oneWay.min() ?? 0) >= 0.015 - 0.0005 && spread >= 0.010, "one-way", "uplink",
                    expected: "≥ 15.0 ms, spread ≥ 10 ms",
                    measured: "\(MeasureFormat.ms(oneWay.min() ?? 0))…\(MeasureFormat.ms(oneWay.max() ?? 0))",
                    "a frame came sooner than the smallest delay, or the jitter was not applied")

        var reordering = jittered
        reordering.reorder = Reorder(0.25)
        try apply(reordering, to: measured, name: "jitter-reorder-25")
        before = try EngineWitness.show(measured.engineSocket).uplink.counters
        let shuffled = try stream.run(from: client, clientAddress, to: server, SandboxPlan.serverIPv4, drain: 0.3)
        delta = try EngineWitness.show(measured.engineSocket).uplink.counters - before
        // About 25% of the frames are picked (binomial, N = 200: 50 ± 20 at 99.9%); each overtakes the frames
        // still in the delay line, so there are at least as many inversions as frames picked.
        table.check(shuffled.arrivals.count == stream.count && shuffled.inversions >= delta.reordered && delta.reordered >= 30
                        && delta.reordered <= 70, "reorder 25%", "uplink",
                    expected: "inversions ≥ reordered, reordered 50 ± 20",
                    measured: "\(shuffled.arrivals.count) arrive, \(shuffled.inversions) inversions, \(delta.reordered) reordered",
                    "a profile asking for reordering did not reorder, or the engine miscounted")
        XCTAssertTrue(try measured.sandbox.down())
    }

    // MARK: no silent tail drops

    /// Sends `count` datagrams of `payload` bytes back to back from the client and returns what the server
    /// received, with the engine's uplink counters and the server's UDP receive-buffer errors over the burst.
    private func burst(
        _ measured: MeasuredSandbox, count: Int, payload: Int, drain: Double
    ) throws -> (sent: Int, received: Int, engine: EngineWitness.Counters, socketDrops: Int) {
        let (client, server) = try namespaces(measured)
        let udpBefore = try UDPCounters.read(server)
        let before = try EngineWitness.show(measured.engineSocket).uplink.counters
        let outcome = try NumberedDatagrams(count: count, payload: payload, interval: 0)
            .run(from: client, clientAddress, to: server, SandboxPlan.serverIPv4, drain: drain)
        let after = try EngineWitness.show(measured.engineSocket).uplink.counters
        let socketDrops = try UDPCounters.read(server).receiveBufferErrors - udpBefore.receiveBufferErrors
        return (outcome.sent, outcome.arrivals.count, after - before, socketDrops)
    }

    /// `rate 5mbit delay 200ms`: the derived limit is the bandwidth-delay product in 64-byte frames with 25%
    /// headroom, 2442 frames. A burst of 1900 small frames (142 bytes on the wire, 227 µs each at 5 Mbit/s:
    /// 432 ms of transmitter time) leaves the sender in a few milliseconds, so some 1700 wait for the
    /// transmitter at once — netem's default limit of 1000 would tail-drop 700 of them. Here all 1900 cross,
    /// and the engine counts no drop. The same burst with `limit 1000` (the control: it shows the burst does
    /// exceed 1000) and a burst of 500 with `limit 16` drop frames, and the frames that did not arrive are
    /// exactly those the engine counts as queue-dropped (the receiver's socket dropped none).
    ///
    /// The bursts stay below the 2048 frames of the engine's receive ring (PacketEngine's TPACKET_V2 ring):
    /// a burst that outruns the engine's reading by more than that is lost in the kernel before the model
    /// sees it, and no counter of the engine shows it (seen here under load with 5000-frame bursts: 2147 and
    /// 806 frames never offered). Every check below also asserts that the engine was offered every frame sent.
    func testNoSilentTailDropAtAThousandFrames() throws {
        let measured = try makeMeasuredSandbox()
        let conditions = LinkConditions(rate: 5_000_000, delay: 200_000_000)
        XCTAssertEqual(conditions.derivedQueueLimit(), 2442, "5 Mbit/s × 200 ms = 125 000 B = 1954 frames of 64 B, + 25%")
        let table = MeasurementTable(kind, "no silent tail drops: bursts of small frames, 5mbit, 200ms")
        defer { table.print() }

        try apply(conditions, to: measured, name: "bdp-5mbit-200ms")
        let whole = try burst(measured, count: 1900, payload: 100, drain: 0.8)
        table.check(whole.sent == 1900 && whole.received == 1900 && whole.engine.queueDropped == 0 && whole.engine.lost == 0
                        && whole.engine.offered >= 1900, "limit 2442", "uplink",
                    expected: "1900 of 1900 arrive, 0 queue-dropped",
                    measured: "\(whole.received) of \(whole.sent) arrive, \(whole.engine.queueDropped) queue-dropped of \(whole.engine.offered) offered",
                    "a burst within the derived limit was tail-dropped, or frames never reached the engine")

        for (limit, count): (UInt32, Int) in [(1000, 1900), (16, 500)] {
            var limited = conditions
            limited.queueLimit = limit
            try apply(limited, to: measured, name: "bdp-limit-\(limit)")
            let dropped = try burst(measured, count: count, payload: 100, drain: 0.8)
            let missing = dropped.sent - dropped.received
            // Frames other than the burst's (ARP, neighbour discovery) offered meanwhile: normally none.
            let others = dropped.engine.offered - dropped.sent
            table.check(
                missing > 0 && dropped.socketDrops == 0 && dropped.engine.lost == 0 && others >= 0
                    && dropped.engine.queueDropped >= missing && dropped.engine.queueDropped <= missing + others,
                "limit \(limit)", "uplink", expected: "missing = queue-dropped > 0",
                measured: "\(missing) of \(dropped.sent) missing, \(dropped.engine.queueDropped) queue-dropped, "
                    + "\(dropped.socketDrops) socket drops, \(others) other frames",
                limit == 1000 ? "the burst did not exceed 1000 frames (so the check above proves nothing), or a drop went uncounted"
                    : "what the engine counts as queue-dropped is not what did not arrive")
        }
        try checkEngineCounters(measured, table, step: "end")
        XCTAssertTrue(try measured.sandbox.down())
    }

    // MARK: corruption is caught by the receiver's checksum

    /// `corrupt 5%` both ways on a TCP transfer of 2 MB from the client to the server: the engine flips one
    /// bit in the transport segment of about 5% of the frames; the receiving kernels' TCP checksums catch
    /// them (`InCsumErrors` in `/proc/net/snmp`, read inside each namespace: the server for data segments,
    /// the client for acknowledgements) and drop them, TCP retransmits, and the 2 MB arrive intact. Every
    /// corrupted TCP segment is caught, so each namespace's checksum errors match (within 10%, for the rare
    /// bit that breaks the header before the checksum is checked) what the engine corrupted towards it.
    func testCorruptedTCPSegmentsAreDroppedByTheReceiversChecksum() throws {
        let measured = try makeMeasuredSandbox()
        let (client, server) = try namespaces(measured)
        let corrupt = LinkConditions(corrupt: Chance(0.05))
        _ = try measured.backend.apply(Profile(name: "corrupt-5", downlink: corrupt, uplink: corrupt), links: nil)
        let table = MeasurementTable(kind, "corrupt 5% both ways: a 2 MB TCP transfer, client to server")
        defer { table.print() }

        let tcpBefore = (server: try SNMPCounters.read(server, protocol: "Tcp"), client: try SNMPCounters.read(client, protocol: "Tcp"))
        let engineBefore = try EngineWitness.show(measured.engineSocket)
        let transfer = try CheckedTCPTransfer.run(bytes: 2 << 20, from: client, to: SandboxPlan.serverIPv4, in: server)
        // The connection's last segments (FIN, the final ACK) cross after the receiver has read the end of the
        // stream: let them, so both counts cover the same frames.
        usleep(300_000)
        let engineAfter = try EngineWitness.show(measured.engineSocket)
        let tcpAfter = (server: try SNMPCounters.read(server, protocol: "Tcp"), client: try SNMPCounters.read(client, protocol: "Tcp"))

        table.check(transfer.intact, "data", "uplink", expected: "\(transfer.sentBytes) B, hash \(String(transfer.sentHash, radix: 16))",
                    measured: "\(transfer.receivedBytes) B, hash \(String(transfer.receivedHash, radix: 16)) in "
                        + "\(String(format: "%.2f", transfer.seconds)) s" + (transfer.error.map { ", \($0)" } ?? ""),
                    "the data that arrived is not the data sent")
        for (direction, namespace, before, after) in [
            (LinkMeasurement.Direction.uplink, "server", tcpBefore.server, tcpAfter.server),
            (.downlink, "client", tcpBefore.client, tcpAfter.client),
        ] {
            let engine = engineAfter.direction(direction).counters - engineBefore.direction(direction).counters
            let caught = (after["InCsumErrors"] ?? 0) - (before["InCsumErrors"] ?? 0)
            let share = engine.offered > 0 ? Double(engine.corrupted) / Double(engine.offered) : 0
            let bound = z999 * (0.05 * 0.95 / Double(max(engine.offered, 1))).squareRoot()
            table.check(
                caught > 0 && caught <= engine.corrupted && Double(caught) >= 0.9 * Double(engine.corrupted) && abs(share - 0.05) <= bound,
                "checksum", direction.rawValue,
                expected: "\(namespace) InCsumErrors ≈ corrupted, 5.00% ± \(String(format: "%.2f", bound * 100))",
                measured: "\(caught) InCsumErrors, \(engine.corrupted) corrupted of \(engine.offered) (\(MeasureFormat.percent(share)))",
                "the receiver's checksum did not catch what the engine corrupted")
        }
        XCTAssertTrue(try measured.sandbox.down())
    }
}
