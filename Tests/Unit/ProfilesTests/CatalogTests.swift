import Foundation
import JSONDocument
import XCTest

@testable import Profiles

final class CatalogTests: XCTestCase {
    /// `profiles/` in the source tree.
    private static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("profiles").path

    private let catalog = ProfileCatalog(directory: CatalogTests.directory)

    // Units, from their definitions.
    private static func kbit(_ value: UInt64) -> UInt64 { value * 1000 }
    private static func mbit(_ value: UInt64) -> UInt64 { value * 1000 * 1000 }
    private static func ms(_ value: UInt64) -> UInt64 { value * 1000 * 1000 }
    private static func percent(_ value: Double) -> Double { value / 100 }

    /// A preset's buffer (profiles/FORMAT.md, "The catalog's buffers").
    private enum Buffer {
        /// What cellular links were measured to hold: 1.6 s at the direction's rate.
        case cellular
        /// A DropTail of this many packets (Linux's default interface queue, 1000).
        case packets(UInt32)
        /// A DropTail of this many bytes (a cable modem's measured 128 KB upload buffer).
        case bytes(UInt64)
        /// None: no rate, nothing waits.
        case none
    }

    /// One direction of a preset: bandwidth (nil = unlimited), one-way delay, loss, buffer.
    private struct Direction {
        var rate: UInt64?
        var delay: UInt64
        var loss: Double
        var buffer: Buffer

        var conditions: LinkConditions {
            var conditions = LinkConditions(rate: rate, delay: delay, loss: loss > 0 ? .random(probability: loss, correlation: 0) : nil)
            switch buffer {
            case .cellular: conditions.queue = .dropTail(.time(ms(1600)))
            case .packets(let packets): conditions.queue = .dropTail(.packets(packets))
            case .bytes(let bytes): conditions.queue = .dropTail(.bytes(bytes))
            case .none: break
            }
            return conditions
        }
    }

    private struct Preset {
        var name: String
        var down: Direction
        var up: Direction
        var dnsDelay: UInt64 = 0
        /// Words the description must contain: the source and its confidence.
        var source: [String]
    }

    /// REFERENCE.md §1 (Network Link Conditioner) and §2 (WebPageTest: RTT split in half per direction).
    private static let presets: [Preset] = [
        Preset(
            name: "100-loss", down: Direction(rate: nil, delay: 0, loss: percent(100), buffer: .none),
            up: Direction(rate: nil, delay: 0, loss: percent(100), buffer: .none), source: ["Network Link Conditioner", "confirmed"]),
        Preset(
            name: "high-latency-dns", down: Direction(rate: nil, delay: 0, loss: 0, buffer: .none),
            up: Direction(rate: nil, delay: 0, loss: 0, buffer: .none), dnsDelay: ms(3000),
            source: ["Network Link Conditioner", "confirmed"]),
        Preset(
            name: "very-bad-network", down: Direction(rate: mbit(1), delay: ms(500), loss: percent(10), buffer: .packets(1000)),
            up: Direction(rate: mbit(1), delay: ms(500), loss: percent(10), buffer: .packets(1000)),
            source: ["Network Link Conditioner", "confirmed"]),
        Preset(
            name: "edge", down: Direction(rate: kbit(240), delay: ms(400), loss: 0, buffer: .cellular),
            up: Direction(rate: kbit(200), delay: ms(440), loss: 0, buffer: .cellular), source: ["Network Link Conditioner", "confirmed"]),
        Preset(
            name: "3g", down: Direction(rate: kbit(780), delay: ms(100), loss: 0, buffer: .cellular),
            up: Direction(rate: kbit(330), delay: ms(100), loss: 0, buffer: .cellular),
            source: ["Network Link Conditioner", "3G, Average"]),
        Preset(
            name: "dsl", down: Direction(rate: mbit(2), delay: ms(5), loss: 0, buffer: .packets(1000)),
            up: Direction(rate: kbit(256), delay: ms(5), loss: 0, buffer: .packets(1000)),
            source: ["Network Link Conditioner", "secondary sources"]),
        Preset(
            name: "lte", down: Direction(rate: mbit(50), delay: ms(50), loss: 0, buffer: .cellular),
            up: Direction(rate: mbit(10), delay: ms(65), loss: 0, buffer: .cellular),
            source: ["Network Link Conditioner", "delays confirmed, rates from secondary sources"]),
        Preset(
            name: "wifi", down: Direction(rate: mbit(40), delay: ms(1), loss: 0, buffer: .packets(1000)),
            up: Direction(rate: mbit(33), delay: ms(1), loss: 0, buffer: .packets(1000)),
            source: ["Network Link Conditioner", "secondary sources"]),
        Preset(
            name: "wifi-80211ac", down: Direction(rate: mbit(250), delay: ms(1), loss: 0, buffer: .packets(1000)),
            up: Direction(rate: mbit(100), delay: ms(1), loss: 0, buffer: .packets(1000)), source: ["Network Link Conditioner", "unconfirmed"]),
        Preset(
            name: "3g-lossy", down: Direction(rate: kbit(780), delay: ms(100), loss: percent(1), buffer: .cellular),
            up: Direction(rate: kbit(330), delay: ms(100), loss: 0, buffer: .cellular), source: ["Network Link Conditioner", "3G, Lossy"]),
        Preset(
            name: "edge-lossy", down: Direction(rate: kbit(240), delay: ms(400), loss: percent(1), buffer: .cellular),
            up: Direction(rate: kbit(200), delay: ms(440), loss: percent(1), buffer: .cellular),
            source: ["Network Link Conditioner", "Edge, Lossy"]),
        Preset(
            name: "2g", down: Direction(rate: kbit(280), delay: ms(800) / 2, loss: 0, buffer: .cellular),
            up: Direction(rate: kbit(256), delay: ms(800) / 2, loss: 0, buffer: .cellular), source: ["WebPageTest", "2G"]),
        Preset(
            name: "cable", down: Direction(rate: kbit(5000), delay: ms(28) / 2, loss: 0, buffer: .packets(1000)),
            up: Direction(rate: kbit(1000), delay: ms(28) / 2, loss: 0, buffer: .bytes(128_000)), source: ["WebPageTest", "Cable"]),
        Preset(
            name: "4g", down: Direction(rate: kbit(9000), delay: ms(170) / 2, loss: 0, buffer: .cellular),
            up: Direction(rate: kbit(9000), delay: ms(170) / 2, loss: 0, buffer: .cellular), source: ["WebPageTest", "4G"]),
    ]

    /// linkcond's own "works but drops and jitters" link, each way.
    private static let lossyDirection = LinkConditions(
        rate: mbit(5), delay: ms(40), jitter: ms(20), delayCorrelation: percent(25), distribution: .normal,
        loss: .random(probability: percent(3), correlation: percent(25)), queue: .dropTail(.packets(1000)))

    func testCatalogHoldsExactlyTheExpectedProfiles() throws {
        let expected = (Self.presets.map(\.name) + ["lossy"]).sorted()
        XCTAssertEqual(try catalog.names(), expected)
        XCTAssertEqual(try catalog.all().map(\.name), expected)
    }

    func testEveryPresetMatchesTheReference() throws {
        for preset in Self.presets {
            let profile = try catalog.profile(named: preset.name)
            XCTAssertEqual(profile.name, preset.name)
            XCTAssertEqual(profile.downlink, preset.down.conditions, preset.name)
            XCTAssertEqual(profile.uplink, preset.up.conditions, preset.name)
            XCTAssertEqual(profile.dnsDelay, preset.dnsDelay, preset.name)
            XCTAssertEqual(profile.source, catalog.path(of: preset.name))
            for word in preset.source {
                XCTAssertTrue(profile.description.contains(word), "\(preset.name): description lacks \"\(word)\"")
            }
            if preset.down.rate != nil {
                XCTAssertTrue(profile.description.contains("Buffer: a DropTail of "), "\(preset.name): the description names no buffer")
            }
        }
    }

    func testLossyIsAWorkingLinkThatDropsAndJitters() throws {
        let lossy = try catalog.profile(named: "lossy")
        XCTAssertEqual(lossy.downlink, Self.lossyDirection)
        XCTAssertEqual(lossy.uplink, Self.lossyDirection)
        XCTAssertEqual(lossy.dnsDelay, 0)
        XCTAssertTrue(lossy.description.contains("linkcond's own"))
    }

    func testEveryCatalogFileRoundTrips() throws {
        for profile in try catalog.all() {
            let text = ProfileParser.jsonText(of: profile)
            XCTAssertEqual(try ProfileParser.parse(text: text, source: profile.source ?? ""), profile, profile.name)
            XCTAssertFalse(profile.isNeutral, profile.name)
            XCTAssertNoThrow(try ProfileParser.validate(profile))
        }
    }

    func testUnknownNameListsTheCatalog() throws {
        XCTAssertThrowsError(try catalog.profile(named: "edgy")) { error in
            let error = error as? ProfileError
            XCTAssertEqual(error?.kind, .notFound)
            XCTAssertEqual(error?.file, Self.directory)
            XCTAssertEqual(error?.problem, #"no profile named "edgy" (did you mean "edge"?)"#)
            XCTAssertEqual(
                error?.expected,
                "one of 100-loss, 2g, 3g, 3g-lossy, 4g, cable, dsl, edge, edge-lossy, high-latency-dns, lossy, lte, "
                    + "very-bad-network, wifi, wifi-80211ac, or a path to a profile file (with a '/' or ending in .json)"
            )
        }
        XCTAssertThrowsError(try catalog.profile(named: "FORMAT")) { error in
            XCTAssertEqual((error as? ProfileError)?.problem, #"no profile named "FORMAT""#)
        }
    }

    func testPathsAreLoadedDirectly() throws {
        let path = try XCTUnwrap(catalog.path(of: "edge"))
        XCTAssertNil(ProfileCatalog.builtIn.path(of: "edge"))
        XCTAssertTrue(ProfileCatalog.isPath(path))
        XCTAssertTrue(ProfileCatalog.isPath("mine.json"))
        XCTAssertFalse(ProfileCatalog.isPath("edge"))
        XCTAssertEqual(try catalog.profile(named: path).name, "edge")
        XCTAssertEqual(try ProfileCatalog.find(path).name, "edge")
        XCTAssertEqual(try ProfileCatalog.find("3g", directory: Self.directory).name, "3g")
    }

    // MARK: Locating the catalog

    private func temporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-catalog-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }

    private func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func testLocateOrder() throws {
        let root = try temporaryDirectory()
        let explicit = root + "/explicit"
        let fromEnvironment = root + "/env"
        let system = root + "/system"
        let tree = root + "/checkout"
        for directory in [explicit, fromEnvironment, system, tree + "/.build/debug"] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try write(#"{"name": "edge"}"#, to: tree + "/profiles/edge.json")
        let executable = tree + "/.build/debug/linkcond"
        let environment = [ProfileCatalog.environmentVariable: fromEnvironment]

        func locate(_ directory: String?, _ environment: [String: String], _ executable: String?, _ system: String)
            throws -> String?
        {
            try ProfileCatalog.locate(
                directory: directory, environment: environment, executablePath: executable, systemDirectory: system
            )
            .directory
        }
        XCTAssertEqual(try locate(explicit, environment, executable, system), explicit)
        XCTAssertEqual(try locate(nil, environment, executable, system), fromEnvironment)
        XCTAssertEqual(try locate(nil, [:], executable, system), tree + "/profiles")
        XCTAssertEqual(
            try locate(nil, [ProfileCatalog.environmentVariable: ""], executable, system), tree + "/profiles")
        XCTAssertEqual(try locate(nil, [:], root + "/elsewhere/linkcond", system), system)
        XCTAssertEqual(try locate(nil, [:], nil, system), system)

        // Nothing on disk: the catalog compiled into the library.
        XCTAssertNil(try locate(nil, [:], root + "/elsewhere/linkcond", root + "/missing"))
        XCTAssertThrowsError(try locate(root + "/nope", [:], nil, system)) { error in
            XCTAssertEqual(
                (error as? ProfileError)?.description,
                "\(root)/nope: the given catalog directory is not a directory: expected a directory of profile files such as edge.json"
            )
        }
        XCTAssertThrowsError(try locate(nil, [ProfileCatalog.environmentVariable: root + "/nope"], nil, system)) {
            error in
            XCTAssertEqual((error as? ProfileError)?.problem, "LINKCOND_PROFILES is not a directory")
        }
    }

    func testCatalogProfileNamesMustMatchTheirFiles() throws {
        let root = try temporaryDirectory()
        try write(#"{"name": "other"}"#, to: root + "/mine.json")
        let catalog = ProfileCatalog(directory: root)
        XCTAssertThrowsError(try catalog.profile(named: "mine")) { error in
            let error = error as? ProfileError
            XCTAssertEqual(error?.kind, .conflict)
            XCTAssertEqual(
                error?.description,
                #"\#(root)/mine.json: $.name: the name "other" differs from the file name: expected "mine", the file name without .json"#
            )
        }
        XCTAssertThrowsError(try catalog.all())
        // Loaded by path, the same file is fine.
        XCTAssertEqual(try catalog.profile(named: root + "/mine.json").name, "other")
    }

    func testBrokenCatalogFileStopsAll() throws {
        let root = try temporaryDirectory()
        try write(#"{"name": "good"}"#, to: root + "/good.json")
        try write(#"{"name": "broken", "downlink": {"rate": "fast"}}"#, to: root + "/broken.json")
        try write("not a profile", to: root + "/README.md")
        let catalog = ProfileCatalog(directory: root)
        XCTAssertEqual(try catalog.names(), ["broken", "good"])
        XCTAssertThrowsError(try catalog.all()) { error in
            XCTAssertEqual((error as? ProfileError)?.path?.description, "$.downlink.rate")
        }
        XCTAssertEqual(try catalog.profile(named: "good").name, "good")
        XCTAssertThrowsError(try ProfileCatalog(directory: root + "/missing").names()) { error in
            XCTAssertEqual((error as? ProfileError)?.kind, .notFound)
        }
    }
}
