// swift-tools-version:6.0
import PackageDescription

// Ranks, lowest first. A target's rank is the length of its longest chain of dependencies; it imports only
// targets of lower ranks, so targets on one line never import each other. scripts/check-structure checks this
// comment against the real graph. The folders at the end group the ranks into tiers.
//   CMnl, CSpawn, CPacket, CCrashReport, CLinkcondSystem, bare-forwarder, AllocationCounting, TestRandomness   C shims; a C floor; test support
//   LinkcondSystem, CNetlinkFloor                              descriptors, sockets, errno, EINTR; a C floor
//   LinkcondBase, Netlink, JSONDocument                        addresses, clock, DNS; netlink; JSON
//   NetlinkTesting, RouteNetlink, NetNamespace, Profiles, Timeline   fake transport; rtnetlink; namespaces, the socket factory; profiles; reports
//   Responders, LinkEmulation, Sandboxing, PathMonitor         the server; the link model; the sandbox; the monitor
//   PacketEngine, EngineControl                                engine I/O; its messages
//   Engine, Conditioning, EngineBenchIO                        the engine process; the backends; the bench's readers
//   Scenarios, linkcond-bench                                  scenarios, runner, LinkLab; the benchmark
//   ControlAPI                                                 the control API: HTTP/1.1 and JSON over the library
//   LinkcondCLI                                                the command line; no logic a library user needs
//   linkcond                                                   the executable
let package = Package(
    name: "linkcond",
    products: [
        .library(name: "LinkcondSystem", targets: ["LinkcondSystem"]),
        .library(name: "Netlink", targets: ["Netlink"]),
        .library(name: "RouteNetlink", targets: ["RouteNetlink"]),
        .library(name: "NetNamespace", targets: ["NetNamespace"]),
        .library(name: "Profiles", targets: ["Profiles"]),
        .library(name: "Conditioning", targets: ["Conditioning"]),
        .library(name: "PathMonitor", targets: ["PathMonitor"]),
        .library(name: "Timeline", targets: ["Timeline"]),
        .library(name: "Scenarios", targets: ["Scenarios"]),
        .library(name: "ControlAPI", targets: ["ControlAPI"]),
        .library(name: "PacketEngine", targets: ["PacketEngine"]),
        .executable(name: "linkcond", targets: ["linkcond"]),
    ],
    targets: [
        .systemLibrary(
            name: "CMnl",
            pkgConfig: "libmnl",
            providers: [.apt(["libmnl-dev"])]
        ),
        // The system layer's window on GNU-only calls (accept4, pipe2); a header, nothing to link.
        .systemLibrary(name: "CLinkcondSystem"),
        .target(name: "LinkcondSystem", dependencies: ["CLinkcondSystem"]),
        .target(name: "CSpawn"),
        // A crashing process's last word (signal and thread) in its log.
        .target(name: "CCrashReport"),
        .target(name: "LinkcondBase", dependencies: ["LinkcondSystem"]),
        .target(name: "Netlink", dependencies: ["CMnl", "LinkcondSystem"]),
        // For tests only: a fake byte transport and encoders of kernel replies (no product links it).
        .target(name: "NetlinkTesting", dependencies: ["Netlink", "CMnl"]),
        // For linkcond-bench only: the same requests sent with raw libmnl from C, the floor to compare with.
        .target(name: "CNetlinkFloor", dependencies: ["CMnl"]),
        .target(name: "RouteNetlink", dependencies: ["Netlink", "CMnl", "LinkcondBase", "LinkcondSystem"]),
        .target(name: "NetNamespace", dependencies: ["Netlink", "CMnl", "CSpawn", "LinkcondSystem"]),
        .target(name: "Responders", dependencies: ["LinkcondBase", "LinkcondSystem", "NetNamespace"]),
        .target(name: "JSONDocument", dependencies: ["LinkcondSystem"]),
        .target(name: "Profiles", dependencies: ["JSONDocument", "LinkcondBase"]),
        .target(name: "LinkEmulation", dependencies: ["Profiles", "LinkcondBase"]),
        .target(name: "CPacket"),
        .target(name: "PacketEngine", dependencies: ["CPacket", "LinkEmulation", "NetNamespace", "RouteNetlink", "LinkcondBase", "LinkcondSystem"]),
        // The floor the engine is measured against: a bare AF_PACKET forwarder in C (linkcond-bench runs it).
        .executableTarget(name: "bare-forwarder"),
        // For linkcond-bench (and the tests of what it measures) only: the engine's readers other than its own
        // ring (recvmmsg, GSO cut in the engine), a fixed-delay scheduler to time departures against, and the
        // probes that time it from outside (kernel capture stamps at both ends, a timerfd's wake-ups).
        .target(name: "EngineBenchIO", dependencies: ["PacketEngine", "LinkEmulation", "NetNamespace", "LinkcondBase", "CPacket"]),
        // For tests only: counts the calling thread's heap allocations (replaces malloc and friends in the test
        // executable; no product links it).
        .target(name: "AllocationCounting"),
        .target(name: "TestRandomness"),
        .target(name: "EngineControl", dependencies: ["Profiles", "LinkEmulation", "JSONDocument", "LinkcondBase", "LinkcondSystem"]),
        .target(
            name: "Engine",
            dependencies: ["EngineControl", "PacketEngine", "LinkEmulation", "Profiles", "JSONDocument", "NetNamespace", "RouteNetlink", "Netlink", "LinkcondBase", "CCrashReport"]),
        .target(name: "Sandboxing", dependencies: ["RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase", "LinkcondSystem", "JSONDocument"]),
        .target(name: "Conditioning", dependencies: ["Profiles", "Sandboxing", "EngineControl", "LinkEmulation", "RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase", "LinkcondSystem", "JSONDocument"]),
        .target(name: "PathMonitor", dependencies: ["RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase", "LinkcondSystem"]),
        .target(name: "Timeline", dependencies: ["LinkcondBase", "LinkcondSystem"]),
        .target(
            name: "Scenarios",
            dependencies: [
                "Timeline", "Profiles", "Sandboxing", "Conditioning", "PathMonitor", "NetNamespace", "JSONDocument", "Responders",
                "LinkcondBase", "LinkcondSystem",
            ]),
        .target(
            name: "ControlAPI",
            dependencies: [
                "Scenarios", "Conditioning", "Sandboxing", "Profiles", "PathMonitor", "Timeline", "Responders", "NetNamespace", "JSONDocument",
                "LinkcondBase", "LinkcondSystem",
            ]),
        .target(
            name: "LinkcondCLI",
            dependencies: [
                "ControlAPI", "Scenarios", "Timeline", "Profiles", "Sandboxing", "Conditioning", "PathMonitor", "Responders", "RouteNetlink", "NetNamespace", "LinkcondBase",
                "Engine", "PacketEngine",
                "JSONDocument", "LinkcondSystem",
            ]),
        // The command starts with the Swift runtime and Foundation linked in (-static-stdlib): a process
        // starts in about half the time (linkcond --help 3.7 ms of CPU instead of 8.0), which every
        // `linkcond apply` and every sandbox's server and engine pay. Only libc, libm, libstdc++ and libmnl
        // stay shared. Foundation's own static dependencies are named here because SwiftPM adds them only
        // with --static-swift-stdlib (which would also rebuild every module). Debug and release alike: the
        // link takes no measurably longer (about 2 s either way). lld, because GNU ld prints a warning for
        // the mktemp that static Foundation contains.
        // Not position-independent (-no-pie): a PIE of this size carries 78,000 relative relocations, and the
        // loader applying them copied on write most of its data pages at every start — 3.9 million cycles in
        // the loader, 94% of them relocating, and most of the rest page faults. Linked at a fixed address the
        // loader spends 0.37 million (LD_DEBUG=statistics) and `linkcond --help` 1.9 ms of CPU against 1.45 ms
        // for `tc -V` (perf stat -r 100, task-clock), where the PIE took 3.7 ms. The cost: the executable's
        // own code and data are not placed at a random address (its libraries, stack and heap still are).
        // The C++ runtime and the unwinder linked in too (the Swift runtime and Foundation's ICU are C++): the
        // toolchain's own -lstdc++ and -lgcc_s find StaticRuntime/'s linker scripts first (-L ahead of the
        // compiler's directories), which name libstdc++.a and libgcc_eh.a. The process then maps only libc and
        // libm (and libmnl) at start: the loader's work fell from 1.04 to 0.12 million cycles and a
        // Foundation hello-world from 2.1–3.6 ms to 1.5–2.5 ms of CPU (LD_DEBUG=statistics, perf stat -r 300).
        // No symbol of the executable's own is exported (--no-export-dynamic; the driver asks for
        // --export-dynamic): every public symbol of every module was in the dynamic symbol table (10,336),
        // which glibc's dladdr — called by the runtime and Foundation as they start — walks one by one; with
        // 522 `linkcond --help` went from 1.81–1.90 to 1.63–1.74 ms of CPU against 1.31–1.57 for `tc -V`
        // (perf stat -r 100–150). Nothing looks the executable's symbols up by name (no plugin, no dlsym).
        .executableTarget(
            name: "linkcond", dependencies: ["LinkcondCLI"],
            exclude: ["StaticRuntime"],
            linkerSettings: [
                .unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xclang-linker", "-no-pie", "-Xlinker", "--no-export-dynamic"], .when(platforms: [.linux])),
                .unsafeFlags(["-Xclang-linker", "-L\(Context.packageDirectory)/Sources/CLI/linkcond/StaticRuntime"], .when(platforms: [.linux])),
                .linkedLibrary("CoreFoundation", .when(platforms: [.linux])),
                .linkedLibrary("_FoundationICU", .when(platforms: [.linux])),
                .linkedLibrary("_FoundationCShims", .when(platforms: [.linux])),
                .linkedLibrary("_FoundationCollections", .when(platforms: [.linux])),
            ]),
        .executableTarget(
            name: "linkcond-bench",
            dependencies: [
                "Conditioning", "PathMonitor", "RouteNetlink", "NetNamespace", "Netlink", "LinkcondBase", "Profiles", "Sandboxing",
                "CNetlinkFloor", "CMnl", "PacketEngine", "LinkEmulation", "EngineBenchIO", "LinkcondSystem",
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
            dependencies: ["Conditioning", "EngineControl", "Profiles", "JSONDocument", "LinkEmulation", "Sandboxing", "RouteNetlink", "Netlink", "NetlinkTesting", "LinkcondBase", "CMnl"]),
        .testTarget(name: "RespondersTests", dependencies: ["Responders", "LinkcondBase"]),
        // The engine control protocol's codec, both ends.
        .testTarget(name: "EngineControlTests", dependencies: ["EngineControl", "Profiles", "LinkEmulation", "JSONDocument"]),
        // The engine's loop against an embedded wire, its ring and its segmenting reader on synthetic frames (no root).
        .testTarget(
            name: "PacketEngineTests", dependencies: ["PacketEngine", "EngineBenchIO", "LinkEmulation", "Profiles", "CPacket", "AllocationCounting"]),
        // The engine between real namespaces (root).
        .testTarget(
            name: "PacketEngineIntegrationTests",
            dependencies: [
                "PacketEngine", "EngineBenchIO", "LinkEmulation", "Profiles", "NetNamespace", "RouteNetlink", "Netlink", "LinkcondBase", "CPacket",
            ]),
        .testTarget(name: "JSONDocumentTests", dependencies: ["JSONDocument"]),
        .testTarget(name: "LinkcondSystemTests", dependencies: ["LinkcondSystem"]),
        .testTarget(name: "ProfilesTests", dependencies: ["Profiles", "JSONDocument", "TestRandomness"]),
        .testTarget(name: "LinkEmulationTests", dependencies: ["LinkEmulation", "Profiles", "AllocationCounting", "TestRandomness"]),
        .testTarget(name: "CLITests", dependencies: ["LinkcondCLI", "Profiles", "JSONDocument", "Sandboxing"]),
        .testTarget(name: "PathMonitorTests", dependencies: ["PathMonitor", "RouteNetlink", "LinkcondBase", "LinkcondSystem", "TestRandomness"]),
        .testTarget(name: "SandboxingTests", dependencies: ["Sandboxing", "RouteNetlink", "LinkcondBase"]),
        .testTarget(name: "TimelineTests", dependencies: ["Timeline"], resources: [.copy("Snapshots")]),
        .testTarget(name: "ScenariosTests", dependencies: ["Scenarios", "Timeline", "JSONDocument", "Profiles", "Conditioning"]),
        // The control API's HTTP reading, routes and bodies, over socket pairs (no root).
        .testTarget(name: "ControlAPITests", dependencies: ["ControlAPI", "JSONDocument", "LinkcondSystem", "LinkcondBase", "Sandboxing", "Profiles"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["LinkcondBase", "LinkcondSystem", "RouteNetlink", "NetNamespace", "Netlink", "Profiles", "LinkEmulation", "Sandboxing", "Conditioning", "Responders", "PathMonitor", "Scenarios", "Timeline", "JSONDocument", "ControlAPI", "CPacket"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Where each target lives: one folder per tier of the layers above (Sources/<tier>/<target>), the benchmark
// and its C floors apart from the product (Bench/<target>), and the tests by whether they need root
// (Tests/Unit: no privileges, `scripts/test --fast`; Tests/Integration: real namespaces, root; Tests/Support:
// what tests link, never a product).
let folders: [String: [String]] = [
    "Sources/Base": ["CMnl", "CSpawn", "CPacket", "CCrashReport", "CLinkcondSystem", "LinkcondSystem", "LinkcondBase", "JSONDocument"],
    "Sources/Kernel": ["Netlink", "NetlinkTesting", "RouteNetlink", "NetNamespace"],
    "Sources/Model": ["Profiles", "LinkEmulation", "Timeline"],
    "Sources/Engine": ["PacketEngine", "EngineControl", "Engine"],
    "Sources/Lab": ["Sandboxing", "Responders", "Conditioning", "PathMonitor", "Scenarios", "ControlAPI"],
    "Sources/CLI": ["LinkcondCLI", "linkcond"],
    "Bench": ["linkcond-bench", "CNetlinkFloor", "bare-forwarder", "EngineBenchIO"],
    "Tests/Unit": [
        "NetlinkTests", "RouteNetlinkTests", "NetemNetlinkTests", "RespondersTests", "EngineControlTests", "JSONDocumentTests",
        "ProfilesTests", "LinkEmulationTests", "CLITests", "PathMonitorTests", "SandboxingTests", "TimelineTests", "ScenariosTests",
        "PacketEngineTests", "LinkcondSystemTests", "ControlAPITests",
    ],
    "Tests/Integration": ["IntegrationTests", "PacketEngineIntegrationTests"],
    "Tests/Support": ["AllocationCounting", "TestRandomness"],
]
for target in package.targets {
    guard let folder = folders.first(where: { $0.value.contains(target.name) })?.key else {
        fatalError("Package.swift: target \(target.name) is in no folder of `folders`")
    }
    target.path = "\(folder)/\(target.name)"
}
