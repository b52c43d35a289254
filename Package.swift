// swift-tools-version:6.0
import PackageDescription

// Layers, lowest first. A target imports only targets of lower layers (scripts/check-structure checks it);
// targets on one line are one layer and never import each other.
//   CMnl, CSpawn, CPacket (C)   libmnl and kernel headers; fork/setns/exec; packet-socket shims
//   CNetlinkFloor (C)       the benchmark's raw-libmnl floor
//   LinkcondBase, JSONDocument   addresses, sockets, clock, DNS wire format, the sandbox plan; strict JSON
//   Netlink                 generic netlink over libmnl
//   NetlinkTesting          a fake byte transport, for tests above netlink
//   RouteNetlink, NetNamespace   typed rtnetlink; named namespaces
//   Profiles                the profile model, reader, validation and catalog (no kernel)
//   LinkEmulation           the userspace engine's impairment model (no sockets)
//   PacketEngine            the engine's data plane: AF_PACKET between the wire's veths, carrier relay
//   EngineControl           the engine's control socket and messages
//   Engine                  the engine as a process (`linkcond engine`)
//   Responders              the sandbox server: HTTP 204, echo, DNS
//   Sandboxing              the sandbox: topology, state, lifecycle, actions, lock
//   Conditioning            the backends that put profiles on the wire (netem, the engine), doctor, measurements
//   PathMonitor             path monitor, reachability prober, hint model
//   Timeline                events, recorder, metrics, reports
//   Scenarios               scenario files, runner, LinkLab
//   LinkcondCLI             the command line; no logic a library user needs
//   linkcond, linkcond-bench, bare-forwarder   the executables (bare-forwarder: the engine's floor in C)
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
        .target(name: "LinkcondBase"),
        .target(name: "Netlink", dependencies: ["CMnl"]),
        // For tests only: a fake byte transport and encoders of kernel replies (no product links it).
        .target(name: "NetlinkTesting", dependencies: ["Netlink", "CMnl"]),
        // For linkcond-bench only: the same requests sent with raw libmnl from C, the floor to compare with.
        .target(name: "CNetlinkFloor", dependencies: ["CMnl"]),
        .target(name: "RouteNetlink", dependencies: ["Netlink", "CMnl", "LinkcondBase"]),
        .target(name: "NetNamespace", dependencies: ["Netlink", "CMnl", "CSpawn"]),
        .target(name: "Responders", dependencies: ["LinkcondBase"]),
        .target(name: "JSONDocument"),
        .target(name: "Profiles", dependencies: ["JSONDocument", "LinkcondBase"]),
        .target(name: "LinkEmulation", dependencies: ["Profiles", "LinkcondBase"]),
        .target(name: "CPacket"),
        .target(name: "PacketEngine", dependencies: ["CPacket", "LinkEmulation", "NetNamespace", "RouteNetlink", "Netlink", "CMnl", "LinkcondBase"]),
        // The floor the engine is measured against: a bare AF_PACKET forwarder in C (linkcond-bench runs it).
        .executableTarget(name: "bare-forwarder"),
        .target(name: "EngineControl", dependencies: ["Profiles", "LinkEmulation", "JSONDocument", "LinkcondBase"]),
        .target(
            name: "Engine",
            dependencies: ["EngineControl", "PacketEngine", "LinkEmulation", "Profiles", "NetNamespace", "RouteNetlink", "Netlink", "LinkcondBase"]),
        .target(name: "Sandboxing", dependencies: ["RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase", "JSONDocument"]),
        .target(name: "Conditioning", dependencies: ["Profiles", "Sandboxing", "EngineControl", "LinkEmulation", "RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase"]),
        .target(name: "PathMonitor", dependencies: ["RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase"]),
        .target(name: "Timeline", dependencies: ["LinkcondBase"]),
        .target(
            name: "Scenarios",
            dependencies: ["Timeline", "Profiles", "Sandboxing", "Conditioning", "PathMonitor", "NetNamespace", "RouteNetlink", "JSONDocument", "Responders", "LinkcondBase"]),
        .target(
            name: "LinkcondCLI",
            dependencies: [
                "Scenarios", "Timeline", "Profiles", "Sandboxing", "Conditioning", "PathMonitor", "Responders", "RouteNetlink", "NetNamespace", "LinkcondBase",
                "Engine", "PacketEngine",
                "JSONDocument",
            ]),
        // The command starts with the Swift runtime and Foundation linked in (-static-stdlib): a process
        // starts in about half the time (linkcond --help 3.7 ms of CPU instead of 8.0), which every
        // `linkcond apply` and every sandbox's server and engine pay. Only libc, libm, libstdc++ and libmnl
        // stay shared. Foundation's own static dependencies are named here because SwiftPM adds them only
        // with --static-swift-stdlib (which would also rebuild every module). Debug and release alike: the
        // link takes no measurably longer (about 2 s either way). lld, because GNU ld prints a warning for
        // the mktemp that static Foundation contains.
        .executableTarget(
            name: "linkcond", dependencies: ["LinkcondCLI"],
            linkerSettings: [
                .unsafeFlags(["-static-stdlib", "-use-ld=lld"], .when(platforms: [.linux])),
                .linkedLibrary("CoreFoundation", .when(platforms: [.linux])),
                .linkedLibrary("_FoundationICU", .when(platforms: [.linux])),
                .linkedLibrary("_FoundationCShims", .when(platforms: [.linux])),
                .linkedLibrary("_FoundationCollections", .when(platforms: [.linux])),
            ]),
        .executableTarget(
            name: "linkcond-bench",
            dependencies: [
                "Conditioning", "PathMonitor", "RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase", "Profiles", "Sandboxing",
                "CNetlinkFloor", "CMnl", "PacketEngine", "LinkEmulation",
            ]),

        .testTarget(name: "NetlinkTests", dependencies: ["Netlink", "NetlinkTesting", "CMnl"]),
        .testTarget(
            name: "RouteNetlinkTests",
            dependencies: ["RouteNetlink", "Netlink", "NetlinkTesting", "CMnl", "LinkcondBase"],
            resources: [.copy("Fixtures")]
        ),
        // The netem backend's netlink conversation, over the fake transport (no root needed).
        .testTarget(
            name: "NetemNetlinkTests",
            dependencies: ["Conditioning", "Profiles", "Sandboxing", "RouteNetlink", "Netlink", "NetlinkTesting", "LinkcondBase", "CMnl"]),
        .testTarget(name: "RespondersTests", dependencies: ["Responders", "LinkcondBase"]),
        // The engine client's hand-written JSON against the engine's Codable messages.
        .testTarget(name: "EngineControlTests", dependencies: ["EngineControl", "Profiles", "LinkEmulation"]),
        .testTarget(
            name: "PacketEngineTests", dependencies: ["PacketEngine", "LinkEmulation", "NetNamespace", "RouteNetlink", "Netlink", "LinkcondBase"]),
        .testTarget(name: "JSONDocumentTests", dependencies: ["JSONDocument"]),
        .testTarget(name: "ProfilesTests", dependencies: ["Profiles", "JSONDocument"]),
        .testTarget(name: "LinkEmulationTests", dependencies: ["LinkEmulation", "Profiles"]),
        .testTarget(name: "CLITests", dependencies: ["LinkcondCLI", "Profiles", "JSONDocument"]),
        .testTarget(name: "PathMonitorTests", dependencies: ["PathMonitor", "RouteNetlink", "LinkcondBase"]),
        .testTarget(name: "TimelineTests", dependencies: ["Timeline"], resources: [.copy("Snapshots")]),
        .testTarget(name: "ScenariosTests", dependencies: ["Scenarios", "Timeline", "JSONDocument", "Profiles", "Conditioning"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["LinkcondBase", "RouteNetlink", "NetNamespace", "Netlink", "Profiles", "Sandboxing", "Conditioning", "Responders", "PathMonitor", "Scenarios", "Timeline"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
