import Foundation
import Glibc
import LinkcondBase
import LinkEmulation
import NetNamespace
import PacketEngine
import RouteNetlink
import XCTest

/// The carrier relay: a link change on one side of the wire reaches the other side.
final class CarrierRelayTests: EngineTestCase {
    /// Well under linkwatch's one-second batching of non-urgent events, far above the milliseconds it takes.
    private let bound = 0.5

    private func startRelay(_ lab: WireLab) throws -> CarrierRelay {
        let relay = try CarrierRelay(wire: lab.ends)
        addTeardownBlock { relay.stop() }
        try relay.start()
        return relay
    }

    /// Seconds until `link` in `links` has (or lacks) carrier, nil when that did not happen within `bound`.
    private func secondsUntil(_ links: RouteNetlinkClient, _ link: String, carrier: Bool) throws -> Double? {
        let start = Traffic.monotonicSeconds()
        let reached = try eventually(timeout: bound, interval: 0.001) { try links.link(named: link).carrier == carrier }
        return reached ? Traffic.monotonicSeconds() - start : nil
    }

    func testRouterSideDownTakesTheClientsCarrierAndUpBringsItBack() throws {
        let lab = try makeLab()
        let relay = try startRelay(lab)
        XCTAssertTrue(try eventually { try lab.clientLinks.link(named: "wl0").carrier }, "no carrier at the start")

        try lab.routerLinks.setLink("c-wl0", up: false)
        let lost = try secondsUntil(lab.clientLinks, "wl0", carrier: false)
        XCTAssertNotNil(lost, "the client kept carrier \(bound) s after the router's end went down: \(relay.statistics)")
        XCTAssertFalse(try lab.wireLinks.link(named: "cl-wl0").isUp, "the relay should have set the client-side end down")
        XCTAssertTrue(try lab.wireLinks.link(named: "rt-wl0").isUp, "the relay must not touch the end that lost carrier")

        try lab.routerLinks.setLink("c-wl0", up: true)
        XCTAssertNotNil(try secondsUntil(lab.clientLinks, "wl0", carrier: true), "carrier did not come back: \(relay.statistics)")
        XCTAssertTrue(try lab.wireLinks.link(named: "cl-wl0").isUp)
        XCTAssertEqual(relay.statistics.errors, 0, "\(relay.statistics)")
        print("carrier relay: router down seen by the client after \(String(format: "%.2f", (lost ?? .nan) * 1e3)) ms")
    }

    func testClientSideDownTakesTheRoutersCarrier() throws {
        let lab = try makeLab()
        let relay = try startRelay(lab)
        XCTAssertTrue(try eventually { try lab.routerLinks.link(named: "c-wl0").carrier })

        try lab.clientLinks.setLink("wl0", up: false)
        XCTAssertNotNil(try secondsUntil(lab.routerLinks, "c-wl0", carrier: false), "\(relay.statistics)")
        XCTAssertFalse(try lab.wireLinks.link(named: "rt-wl0").isUp)
        XCTAssertTrue(try lab.wireLinks.link(named: "cl-wl0").isUp)

        try lab.clientLinks.setLink("wl0", up: true)
        XCTAssertNotNil(try secondsUntil(lab.routerLinks, "c-wl0", carrier: true), "\(relay.statistics)")
        XCTAssertTrue(try lab.wireLinks.link(named: "rt-wl0").isUp)
    }

    func testBothSidesDownAndBackKeepAtMostOneEndDown() throws {
        let lab = try makeLab()
        let relay = try startRelay(lab)
        try lab.routerLinks.setLink("c-wl0", up: false)
        XCTAssertNotNil(try secondsUntil(lab.clientLinks, "wl0", carrier: false))
        try lab.clientLinks.setLink("wl0", up: false)
        usleep(50_000)
        // The client-side end is down (by the relay); its events are ignored, so the router side stays up.
        XCTAssertTrue(try lab.wireLinks.link(named: "rt-wl0").isUp)
        try lab.routerLinks.setLink("c-wl0", up: true)
        // The router is back but the client is still down: now the router must lose carrier instead.
        XCTAssertNotNil(try secondsUntil(lab.routerLinks, "c-wl0", carrier: false), "\(relay.statistics)")
        XCTAssertTrue(try lab.wireLinks.link(named: "cl-wl0").isUp)
        XCTAssertFalse(try lab.wireLinks.link(named: "rt-wl0").isUp)
        try lab.clientLinks.setLink("wl0", up: true)
        XCTAssertNotNil(try secondsUntil(lab.routerLinks, "c-wl0", carrier: true))
        XCTAssertNotNil(try secondsUntil(lab.clientLinks, "wl0", carrier: true))
        XCTAssertEqual(relay.statistics.errors, 0, "\(relay.statistics)")
    }

    /// A wire end taken down by someone else (an attachment's pulled cable) stays down: the client loses
    /// carrier, the router keeps it, and the end comes back only when that someone brings it up.
    func testAnEndHeldDownBySomeoneElseStaysDown() throws {
        let lab = try makeLab()
        let relay = try startRelay(lab)
        XCTAssertTrue(try eventually { try lab.clientLinks.link(named: "wl0").carrier }, "no carrier at the start")
        try lab.wireLinks.setLink("cl-wl0", up: false)
        XCTAssertNotNil(try secondsUntil(lab.clientLinks, "wl0", carrier: false), "\(relay.statistics)")
        usleep(300_000)
        XCTAssertFalse(try lab.wireLinks.link(named: "cl-wl0").isUp, "the relay brought a held end back up: \(relay.statistics)")
        XCTAssertTrue(try lab.wireLinks.link(named: "rt-wl0").isUp, "the relay took the far end down")
        XCTAssertTrue(try lab.routerLinks.link(named: "c-wl0").carrier, "the router lost carrier")
        // The router flaps meanwhile: the held end stays down all the same.
        try lab.routerLinks.setLink("c-wl0", up: false)
        try lab.routerLinks.setLink("c-wl0", up: true)
        usleep(300_000)
        XCTAssertFalse(try lab.wireLinks.link(named: "cl-wl0").isUp, "a router flap brought the held end up: \(relay.statistics)")
        try lab.wireLinks.setLink("cl-wl0", up: true)
        XCTAssertNotNil(try secondsUntil(lab.clientLinks, "wl0", carrier: true), "\(relay.statistics)")
        XCTAssertTrue(try lab.routerLinks.link(named: "c-wl0").carrier)
        XCTAssertEqual(relay.statistics.errors, 0, "\(relay.statistics)")
    }

    func testTrafficResumesAfterALinkFlapAndTotalLossKeepsCarrier() throws {
        let lab = try makeLab()
        let runtime = try startEngine(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        let relay = try startRelay(lab)
        XCTAssertTrue(try reply(from: lab.client, to: WireLab.routerV4))

        try lab.routerLinks.setLink("c-wl0", up: false)
        XCTAssertNotNil(try secondsUntil(lab.clientLinks, "wl0", carrier: false))
        try lab.routerLinks.setLink("c-wl0", up: true)
        XCTAssertNotNil(try secondsUntil(lab.clientLinks, "wl0", carrier: true))
        XCTAssertTrue(try reply(from: lab.client, to: WireLab.routerV4), "no traffic after the link came back")

        try runtime.perform(on: .uplink) { $0.mode = .dropAll }
        try runtime.perform(on: .downlink) { $0.mode = .dropAll }
        XCTAssertNil(try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 0.3))
        usleep(200_000)
        XCTAssertTrue(try lab.clientLinks.link(named: "wl0").carrier, "100 % loss took the client's carrier")
        XCTAssertTrue(try lab.routerLinks.link(named: "c-wl0").carrier, "100 % loss took the router's carrier")
        XCTAssertEqual(relay.statistics.changes, 2, "the relay acted on something other than the one flap: \(relay.statistics)")
    }

    private func reply(from namespace: NamedNamespace, to target: IPAddress) throws -> Bool {
        for _ in 0..<5 where try Traffic.ping(from: namespace, to: target, timeout: 1) != nil { return true }
        return false
    }
}
