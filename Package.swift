// swift-tools-version:6.0
import PackageDescription

// Layers, lowest first. Nothing low imports anything high:
// CMnl/CSpawn -> Netlink -> RouteNetlink, NetNamespace -> Conditioning -> LinkcondCLI -> linkcond
let package = Package(
    name: "linkcond",
    products: [
        .library(name: "Netlink", targets: ["Netlink"]),
        .library(name: "RouteNetlink", targets: ["RouteNetlink"]),
        .library(name: "NetNamespace", targets: ["NetNamespace"]),
        .library(name: "Profiles", targets: ["Profiles"]),
        .library(name: "Conditioning", targets: ["Conditioning"]),
        .library(name: "PathMonitor", targets: ["PathMonitor"]),
        .library(name: "Timeline", targets: ["Timeline"]),
        .library(name: "Scenarios", targets: ["Scenarios"]),
        .library(name: "PacketEngine", targets: ["PacketEngine"]),
        .executable(name: "linkcond", targets: ["linkcond"]),
    ],
    targets: [
        .systemLibrary(
            name: "CMnl",
            pkgConfig: "libmnl",
            providers: [.apt(["libmnl-dev"])]
        ),
        .target(name: "CSpawn"),
        .target(name: "Netlink", dependencies: ["CMnl"]),
        .target(name: "RouteNetlink", dependencies: ["Netlink", "CMnl"]),
        .target(name: "NetNamespace", dependencies: ["Netlink", "CMnl", "CSpawn"]),
        .target(name: "Responders"),
        .target(name: "JSONDocument"),
        .target(name: "Profiles", dependencies: ["JSONDocument"]),
        .target(name: "LinkEmulation", dependencies: ["Profiles"]),
        .target(name: "CPacket"),
        .target(name: "PacketEngine", dependencies: ["CPacket", "LinkEmulation", "NetNamespace", "RouteNetlink", "Netlink", "CMnl"]),
        // The floor the engine is measured against: a bare AF_PACKET forwarder in C (linkcond-bench runs it).
        .executableTarget(name: "bare-forwarder"),
        .target(name: "Conditioning", dependencies: ["Profiles", "RouteNetlink", "NetNamespace", "Netlink", "JSONDocument"]),
        .target(name: "PathMonitor", dependencies: ["RouteNetlink", "NetNamespace", "Netlink", "Responders", "CMnl"]),
        .target(name: "Timeline"),
        .target(
            name: "Scenarios",
            dependencies: ["Timeline", "Profiles", "Conditioning", "PathMonitor", "NetNamespace", "RouteNetlink", "JSONDocument", "Responders"]),
        .target(
            name: "LinkcondCLI",
            dependencies: [
                "Scenarios", "Timeline", "Profiles", "Conditioning", "PathMonitor", "Responders", "RouteNetlink", "NetNamespace", "Netlink",
                "JSONDocument",
            ]),
        .executableTarget(name: "linkcond", dependencies: ["LinkcondCLI"]),
        .executableTarget(
            name: "linkcond-bench",
            dependencies: ["Conditioning", "PathMonitor", "RouteNetlink", "NetNamespace", "Netlink", "PacketEngine", "LinkEmulation", "CPacket"]),

        .testTarget(name: "NetlinkTests", dependencies: ["Netlink", "CMnl"]),
        .testTarget(
            name: "RouteNetlinkTests",
            dependencies: ["RouteNetlink", "Netlink"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "RespondersTests", dependencies: ["Responders"]),
        .testTarget(
            name: "PacketEngineTests", dependencies: ["PacketEngine", "LinkEmulation", "NetNamespace", "RouteNetlink", "Netlink", "CPacket"]),
        .testTarget(name: "JSONDocumentTests", dependencies: ["JSONDocument"]),
        .testTarget(name: "ProfilesTests", dependencies: ["Profiles", "JSONDocument"]),
        .testTarget(name: "CLITests", dependencies: ["LinkcondCLI", "Profiles", "JSONDocument"]),
        .testTarget(name: "PathMonitorTests", dependencies: ["PathMonitor", "RouteNetlink", "Netlink"]),
        .testTarget(name: "TimelineTests", dependencies: ["Timeline"], resources: [.copy("Snapshots")]),
        .testTarget(name: "ScenariosTests", dependencies: ["Scenarios", "Timeline", "JSONDocument", "Profiles", "Conditioning"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["RouteNetlink", "NetNamespace", "Netlink", "Profiles", "Conditioning", "Responders", "PathMonitor", "Scenarios", "Timeline"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
