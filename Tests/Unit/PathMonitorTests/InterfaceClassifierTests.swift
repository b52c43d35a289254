import Foundation
import RouteNetlink
import XCTest

@testable import PathMonitor

final class InterfaceClassifierTests: XCTestCase {
    private var sysfs: URL?

    override func tearDown() {
        if let sysfs { try? FileManager.default.removeItem(at: sysfs) }
        sysfs = nil
        super.tearDown()
    }

    private static func link(
        _ name: String, kind: String? = nil, hardwareType: HardwareType = .ether, flags: LinkFlags = .up
    ) -> Link {
        Link(
            index: 5, name: name, kind: kind, flags: flags, hardwareType: hardwareType, operationalState: .up,
            carrier: true)
    }

    /// A fake sysfs root: `class/net/NAME` for each entry, with the given subdirectories and `uevent` text.
    private func makeSysfs(_ devices: [String: (directories: [String], uevent: String?)]) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-sysfs-\(UUID().uuidString)")
        sysfs = root
        for (name, device) in devices {
            let base = root.appendingPathComponent("class/net/\(name)")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            for directory in device.directories {
                try FileManager.default.createDirectory(
                    at: base.appendingPathComponent(directory), withIntermediateDirectories: true)
            }
            if let uevent = device.uevent {
                try Data(uevent.utf8).write(to: base.appendingPathComponent("uevent"))
            }
        }
        return root.path
    }

    // MARK: Names

    func testTypeFromName() {
        let cases: [(String, InterfaceType?)] = [
            ("wl0", .wifi), ("wlan0", .wifi), ("wlp2s0", .wifi), ("wlx001122334455", .wifi),
            ("ww0", .cellular), ("wwan0", .cellular), ("wwp0s20f0u6", .cellular), ("rmnet0", .cellular),
            ("rmnet_data0", .cellular),
            ("en0", .wiredEthernet), ("enp3s0", .wiredEthernet), ("eno1", .wiredEthernet), ("eth0", .wiredEthernet),
            ("eth1", .wiredEthernet),
            ("lo", .loopback),
            ("x0", nil), ("c-wl0", nil), ("docker0", nil), ("br0", nil), ("veth1a2b", nil), ("tun0", nil), ("", nil),
            ("lo0", nil), ("w", nil), ("e", nil),
        ]
        for (name, type) in cases {
            XCTAssertEqual(InterfaceClassifier.typeFromName(name), type, name)
        }
    }

    func testClassifyByName() {
        let classifier = InterfaceClassifier()
        // The sandbox's veth ends: Ethernet hardware type, kind veth, typed by name.
        XCTAssertEqual(classifier.classify(Self.link("wl0", kind: "veth")), .wifi)
        XCTAssertEqual(classifier.classify(Self.link("wlan0", kind: "veth")), .wifi)
        XCTAssertEqual(classifier.classify(Self.link("ww0", kind: "veth")), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("wwan0", kind: "veth")), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("rmnet0", kind: "veth")), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("en0", kind: "veth")), .wiredEthernet)
        XCTAssertEqual(classifier.classify(Self.link("eth0", kind: "veth")), .wiredEthernet)
        XCTAssertEqual(classifier.classify(Self.link("eth0")), .wiredEthernet)
        // A name alone (no loopback flag, no loopback hardware type) still says loopback.
        XCTAssertEqual(classifier.classify(Self.link("lo", hardwareType: .none)), .loopback)
    }

    // MARK: Flags and hardware types

    func testLoopbackByFlagOrHardwareType() {
        let classifier = InterfaceClassifier()
        XCTAssertEqual(
            classifier.classify(Self.link("lo", hardwareType: .loopback, flags: [.up, .loopback])),
            .loopback)
        XCTAssertEqual(classifier.classify(Self.link("x0", flags: .loopback)), .loopback)
        XCTAssertEqual(classifier.classify(Self.link("wl0", flags: .loopback)), .loopback, "flag beats name")
        XCTAssertEqual(classifier.classify(Self.link("x0", hardwareType: .loopback)), .loopback)
    }

    func testHardwareTypes() {
        let classifier = InterfaceClassifier()
        XCTAssertEqual(classifier.classify(Self.link("x0")), .wiredEthernet, "ARPHRD_ETHER without a kind: hardware NIC")
        XCTAssertEqual(classifier.classify(Self.link("x0", kind: "veth")), .other, "a veth without a telling name")
        XCTAssertEqual(classifier.classify(Self.link("br0", kind: "bridge")), .other)
        XCTAssertEqual(classifier.classify(Self.link("x0", hardwareType: .rawIP)), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("ppp0", hardwareType: .ppp)), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("x0", hardwareType: .ppp)), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("tun0", kind: "tun", hardwareType: .none)), .other)
        XCTAssertEqual(classifier.classify(Self.link("x0", hardwareType: .none)), .other)
    }

    // MARK: Overrides

    func testOverridesComeFirst() {
        let classifier = InterfaceClassifier(overrides: ["wl0": .cellular, "x0": .wifi, "lo": .other, "eth0": .wifi])
        XCTAssertEqual(classifier.classify(Self.link("wl0", kind: "veth")), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("x0", kind: "veth")), .wifi)
        XCTAssertEqual(
            classifier.classify(Self.link("lo", hardwareType: .loopback, flags: [.up, .loopback])),
            .other)
        XCTAssertEqual(classifier.classify(Self.link("eth0")), .wifi)
        // Names not overridden classify as usual; overrides match whole names only.
        XCTAssertEqual(classifier.classify(Self.link("ww0", kind: "veth")), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("wl01", kind: "veth")), .wifi)
        XCTAssertEqual(classifier.classify(Self.link("x01", kind: "veth")), .other)
    }

    func testOverrideBeatsSysfs() throws {
        let root = try makeSysfs(["x0": (["wireless"], nil)])
        let classifier = InterfaceClassifier(overrides: ["x0": .wiredEthernet], sysfsRoot: root)
        XCTAssertEqual(classifier.classify(Self.link("x0")), .wiredEthernet)
    }

    // MARK: sysfs

    func testSysfsWirelessDirectoryMeansWifi() throws {
        let root = try makeSysfs([
            "x0": (["wireless"], "INTERFACE=x0\nIFINDEX=5\n"),
            "x1": (["phy80211"], nil),
        ])
        let classifier = InterfaceClassifier(sysfsRoot: root)
        XCTAssertEqual(classifier.classify(Self.link("x0")), .wifi)
        XCTAssertEqual(classifier.classify(Self.link("x1", kind: "veth")), .wifi)
    }

    func testSysfsUeventDevtype() throws {
        let root = try makeSysfs([
            "x0": ([], "INTERFACE=x0\nIFINDEX=5\nDEVTYPE=wwan\n"),
            "x1": ([], "DEVTYPE=wlan\nINTERFACE=x1\nIFINDEX=6\n"),
            "x2": ([], "DEVTYPE=bridge\nINTERFACE=x2\n"),
            "x3": ([], "INTERFACE=x3\nIFINDEX=8\n"),
            "x4": ([], "INTERFACE=x4\nDEVTYPE=wwan"),  // no final newline
            "wl9": ([], "INTERFACE=wl9\nDEVTYPE=wwan\n"),
        ])
        let classifier = InterfaceClassifier(sysfsRoot: root)
        XCTAssertEqual(classifier.classify(Self.link("x0")), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("x1")), .wifi)
        XCTAssertEqual(classifier.classify(Self.link("x4", kind: "veth")), .cellular)
        // sysfs beats the name.
        XCTAssertEqual(classifier.classify(Self.link("wl9", kind: "veth")), .cellular)
        // Nothing telling in sysfs: fall through to the hardware type and the name.
        XCTAssertEqual(classifier.classify(Self.link("x2", kind: "bridge")), .other)
        XCTAssertEqual(classifier.classify(Self.link("x3")), .wiredEthernet)
        // Not in sysfs at all (another namespace's device): fall through too.
        XCTAssertEqual(classifier.classify(Self.link("ww0", kind: "veth")), .cellular)
        XCTAssertEqual(classifier.classify(Self.link("absent", kind: "veth")), .other)
        // Loopback is decided before sysfs.
        XCTAssertEqual(classifier.classify(Self.link("x0", flags: [.up, .loopback])), .loopback)
    }

    func testSysfsIsNotReadWithoutARoot() throws {
        let root = try makeSysfs(["x0": (["wireless"], "DEVTYPE=wlan\n")])
        XCTAssertEqual(InterfaceClassifier(sysfsRoot: root).classify(Self.link("x0")), .wifi)
        XCTAssertEqual(InterfaceClassifier(sysfsRoot: nil).classify(Self.link("x0")), .wiredEthernet)
        XCTAssertEqual(
            InterfaceClassifier(sysfsRoot: root + "/missing").classify(Self.link("x0")), .wiredEthernet,
            "a root without the device")
    }
}
