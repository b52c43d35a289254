import Profiles

/// linkcond's command tree: every command, option and help text in one place.
public enum CommandTree {
    static let nameOption = OptionSpec.value(
        "name", short: "n", help: "the sandbox (or attachment) to act on", defaultDescription: "default")

    /// The root command.
    public static let root = CommandSpec(
        "linkcond",
        abstract: "A network-condition lab: put a bad network between a device and a server, and watch what happens.",
        discussion: """
            linkcond builds a sandbox of network namespaces (client, router, server, and with the userspace
            backend a wire between client and router) joined by veth pairs, puts a network profile on the
            client's links (netem through netlink, or linkcond's userspace engine on kernels without netem),
            and runs programs as the "client" device. Nothing in the host's own network namespace is
            touched. It needs root.
            """,
        subcommands: [up, down, status, exec, apply, clear, show, attach, detach, profiles, scenarios, trace, monitor, run, api, doctor, serve, engine],
        examples: [
            "sudo linkcond up",
            "sudo linkcond exec -- curl -s http://server.linkcond.test/generate_204",
            "sudo linkcond apply edge",
            "sudo linkcond down",
        ])

    static let up = CommandSpec(
        "up",
        abstract: "Create the sandbox (client, router and server namespaces) and start its server.",
        discussion: """
            The client reaches the server through the router over IPv4 (198.18.0.0/15) and IPv6
            (2001:2::/48). The server answers HTTP (/generate_204 gives 204), TCP and UDP echo on port 7,
            and DNS for *.linkcond.test. Running 'up' on a sandbox that is up and healthy changes nothing;
            a broken one (something deleted from outside, a process that died) is rebuilt. --backend
            chooses how conditions will be made: netem needs a kernel with sch_netem; userspace adds a wire
            namespace with linkcond's engine in each client link and works on any kernel; auto (the default)
            takes netem when the kernel has it. What was made is recorded in /run/linkcond/NAME.json (or
            $LINKCOND_STORE), and everything is named after the sandbox, so 'down' removes it even after a
            crash. One command at a time changes a sandbox; a second one waits (LINKCOND_LOCK_TIMEOUT, 60 s).
            """,
        options: [
            nameOption,
            .flag("cellular", help: "also give the client a cellular interface ww0 (route metric 200, behind wl0's 100); added to a sandbox that is up without it"),
            .value("backend", help: "how conditions are made: netem qdiscs, or linkcond's userspace engine (any kernel)", defaultDescription: "auto: netem when the kernel has it", allowedValues: ["auto", "netem", "userspace"]),
            .flag("json", help: "print the resulting status as JSON"),
        ],
        examples: ["sudo linkcond up", "sudo linkcond up --name lab2 --cellular"])

    static let down = CommandSpec(
        "down",
        abstract: "Remove a sandbox: stop its server and delete its namespaces (an attachment's name detaches it).",
        options: [
            nameOption,
            .flag("all", help: "remove every sandbox linkcond recorded, and detach every attachment"),
        ],
        mutuallyExclusive: [["name", "all"]],
        examples: ["sudo linkcond down", "sudo linkcond down --all"])

    static let status = CommandSpec(
        "status",
        abstract: "Show the sandboxes, each link's profile, their interfaces, addresses and routes, read back from the kernel.",
        options: [
            OptionSpec.value("name", short: "n", help: "only this sandbox", defaultDescription: "all"),
            .flag("json", help: "print JSON"),
        ])

    static let exec = CommandSpec(
        "exec",
        abstract: "Run a command as the device, in the client namespace; its exit code is passed through.",
        discussion: """
            The command sees the client's interfaces and routes, and resolves names with the sandbox's DNS
            server (/etc/netns/CLIENT/resolv.conf is its /etc/resolv.conf), as with 'ip netns exec'.
            """,
        options: [nameOption],
        passthrough: PositionalSpec("command", help: "the command and its arguments", isRequired: true, isVariadic: true),
        examples: [
            "sudo linkcond exec -- curl -s -o /dev/null -w '%{http_code}' http://server.linkcond.test/generate_204",
            "sudo linkcond exec -- ping -c 3 server.linkcond.test",
        ])

    static let apply = CommandSpec(
        "apply",
        abstract: "Put a network profile, or conditions given as options, on the sandbox's wire (creates the sandbox when it is not up).",
        discussion: """
            PROFILE is a catalog name (see 'linkcond profiles') or a path to a profile file. Instead of one,
            conditions can be given as options, as with tcset or 'tc ... netem': --delay 100ms --jitter 10ms
            --loss 1% --rate 1mbit, on both directions, or with --downlink or --uplink on one; they make a
            profile named 'inline' that is read and checked exactly as a profile file. With --for 30s the
            conditions hold for that long and then what was there before comes back — at once when the command
            is interrupted, and, if it is killed, with the first change of the sandbox after the time is up. The
            profile is parsed and checked before anything changes. With netem, qdiscs are installed through
            netlink on both ends of the client's links (uplink on the client's end, downlink on the router's);
            with the userspace backend (kernels without netem), linkcond's engine in the wire namespace takes
            the profile over its control socket. Either way what is held is read back and compared with what was
            sent. Applying another profile replaces the conditions in place: there is never a moment without
            conditions.
            """,
        options: [
            nameOption,
            .value("backend", help: "how conditions are made: netem qdiscs, or linkcond's userspace engine (any kernel)", defaultDescription: "auto: netem when the kernel has it", allowedValues: ["auto", "netem", "userspace"]),
            .value("link", help: "only this client link", defaultDescription: "every link", allowedValues: ["wl0", "ww0"]),
            .flag("json", help: "print what was done as JSON"),
        ] + InlineConditions.options.map { OptionSpec.value($0.option, help: $0.help) } + [
            .flag("downlink", help: "the options condition the downlink (towards the device) only"),
            .flag("uplink", help: "the options condition the uplink (from the device) only"),
            .value("for", valueName: "duration", help: "keep the conditions this long (such as 30s), then put back what was there"),
        ],
        positionals: [PositionalSpec("profile", help: "a catalog name such as 'edge', or a path to a profile JSON file", isRequired: false)],
        mutuallyExclusive: [["downlink", "uplink"]],
        examples: [
            "sudo linkcond apply edge", "sudo linkcond apply profiles/100-loss.json --name lab2",
            "sudo linkcond apply --delay 100ms --jitter 10ms --loss 1% --rate 1mbit", "sudo linkcond apply 100-loss --for 10s",
        ])

    static let clear = CommandSpec(
        "clear",
        abstract: "Remove the conditions: the sandbox's links carry traffic unimpaired again.",
        options: [nameOption, .value("link", help: "only this client link", defaultDescription: "every link", allowedValues: ["wl0", "ww0"])])

    static let attach = CommandSpec(
        "attach",
        abstract: "Condition a namespace you already have — a container's, a pod's, your own — both directions, on either backend.",
        discussion: """
            Give exactly one target: --netns NAME (in /run/netns), --netns-path PATH (/proc/PID/ns/net, a
            runtime's netns file), --pid PID, or --container ID|NAME (podman, docker, nerdctl or crictl,
            whichever is installed and knows it). linkcond moves the target's interface (--dev, by default the
            one of its default route) into a wire namespace of its own (lca-NAME-wire) and puts a veth in its
            place with the same name, index, hardware address, MTU, addresses, routes and settings; the
            wire joins the two through linkcond's engine (userspace) or netem with mirred redirects (netem).
            The peer sees a carrier blip; open connections keep going. Then 'apply PROFILE --name NAME',
            'show', 'clear', 'exec', 'monitor' and 'run' act on it, and 'detach --name NAME' puts
            everything back as it was. The host's own namespace and linkcond's sandboxes are refused.
            """,
        options: [
            .value("netns", valueName: "name", help: "a named network namespace (ip netns list)"),
            .value("netns-path", valueName: "path", help: "a network namespace file: /proc/PID/ns/net, a runtime's netns file"),
            .value("pid", help: "the network namespace of this process"),
            .value("container", valueName: "id", help: "a container, by id or name (podman, docker, nerdctl, crictl)"),
            .value("dev", valueName: "iface", help: "the interface to condition", defaultDescription: "the interface of the default route"),
            OptionSpec.value("name", short: "n", help: "the attachment's name", defaultDescription: "derived from the target"),
            .value("backend", help: "how conditions are made: netem qdiscs, or linkcond's userspace engine (any kernel)", defaultDescription: "auto: netem when the kernel has it", allowedValues: ["auto", "netem", "userspace"]),
            .flag("json", help: "print the attachment's status as JSON"),
        ],
        mutuallyExclusive: [["netns", "netns-path", "pid", "container"]],
        examples: [
            "sudo linkcond attach --container web",
            "sudo linkcond attach --netns app --dev eth0 --name app",
            "sudo linkcond apply 3g --name web",
            "sudo linkcond detach --name web",
        ])

    static let detach = CommandSpec(
        "detach",
        abstract: "Undo an attachment: the original interface goes home with its addresses and routes, the wire goes.",
        discussion: """
            Also finishes an attach or detach that was interrupted (Ctrl-C, kill -9, a crash) at any point.
            The target keeps what it changed on the interface while attached (addresses, routes, up or down).
            """,
        options: [
            OptionSpec.value("name", short: "n", help: "the attachment"),
            .flag("all", help: "detach every attachment"),
        ],
        mutuallyExclusive: [["name", "all"]],
        examples: ["sudo linkcond detach --name web"])

    static let show = CommandSpec(
        "show",
        abstract: "Show the conditions the backend holds (netem's qdiscs or the engine), read back in profile terms, with counters.",
        options: [nameOption, .flag("json", help: "print JSON")])

    static let profiles = CommandSpec(
        "profiles",
        abstract: "List the profile catalog, or show one profile as JSON.",
        options: [.flag("json", help: "print JSON")],
        subcommands: [
            CommandSpec(
                "show", abstract: "Print a profile as JSON, in the profile format (what 'apply' would put on).",
                positionals: [PositionalSpec("profile", help: "a catalog name such as 'edge', or a path to a profile file")],
                examples: ["linkcond profiles show edge", "linkcond profiles show edge > mine.json"]),
        ],
        examples: ["linkcond profiles", "linkcond profiles show 3g"])

    static let scenarios = CommandSpec(
        "scenarios",
        abstract: "List the shipped scenarios ('linkcond run NAME' runs one).",
        options: [.flag("json", help: "print JSON")])

    static let monitor = CommandSpec(
        "monitor",
        abstract: "Stream path updates (and reachability probes with --probe) as they happen, until Ctrl-C.",
        discussion: """
            The path monitor follows the client namespace's links, addresses and routes through rtnetlink
            (or the host's own, read-only, with --host) and prints every change: status (satisfied,
            unsatisfied with a reason, requiresConnection), the interfaces in use, IPv4/IPv6/DNS support,
            and whether the path is expensive. The first line is the baseline. With --probe, the
            reachability prober also runs (HTTP /generate_204, DNS, TCP) and prints its state and samples.
            """,
        options: [
            nameOption,
            .flag("host", help: "watch the host's own namespace instead of a sandbox (read-only)"),
            .flag("json", help: "one JSON object a line, with a timestamp in seconds since start"),
            .flag("probe", help: "also run the reachability prober"),
        ],
        mutuallyExclusive: [["name", "host"]],
        examples: ["sudo linkcond monitor", "sudo linkcond monitor --json --probe", "linkcond monitor --host"])

    static let run = CommandSpec(
        "run",
        abstract: "Run a scenario: change conditions over time, record everything, judge the expectations.",
        discussion: """
            SCENARIO is a path or the name of a shipped scenario ('linkcond scenarios' lists them). The run uses
            a sandbox of its own, with the links the scenario declares, removed afterwards; with --name it runs
            in that sandbox — brought up when it is not (and left up), refused when its links differ from the
            scenario's "links" — and puts back what it changed. --name may also name an attachment: there the
            steps condition its spliced link and the watchers run in its target; a wifi link step on the router
            side pulls (down) or plugs back (up) the target's cable — its interface loses carrier, nothing in
            the target is touched, and the cable is plugged back when the run ends (after a crash, by 'detach'
            or the next run); a scenario that needs a sandbox's addresses, routes, portal, a link's client side,
            a cellular link or server (prober expectations) is refused. The path monitor, the
            reachability prober and, with --observe, your own command (run in the client namespace; each JSON
            line it prints becomes an event on the "app" lane, its "state" field the lane's state) are recorded
            to events.jsonl as things happen; then timeline.json, junit.xml, timeline.html and summary.md are
            written to the report directory. Exit code 1 when an expectation fails, 130 when interrupted.
            """,
        options: [
            OptionSpec.value("name", short: "n", help: "run in this sandbox (brought up when it is not) or on this attachment, instead of a fresh sandbox"),
            .value("report", valueName: "dir", help: "where to write events.jsonl and the reports", defaultDescription: "linkcond-reports/SCENARIO"),
            .value("observe", valueName: "command", help: "a command to run as the device; its JSON lines become the app lane"),
            .value("backend", help: "how conditions are made: netem qdiscs, or linkcond's userspace engine (any kernel)", defaultDescription: "auto: netem when the kernel has it", allowedValues: ["auto", "netem", "userspace"]),
        ],
        positionals: [PositionalSpec("scenario", help: "a scenario file, or a name from scenarios/")],
        examples: [
            "sudo linkcond run scenarios/tunnel.json --report out/",
            "sudo linkcond run captive-portal --observe 'python3 myapp_monitor.py'",
        ])

    static let api = CommandSpec(
        "api",
        abstract: "Serve the control API: sandboxes, conditions, events and runs over HTTP/1.1 and JSON, for tests in any language.",
        discussion: """
            Serves on a Unix socket beside the state files (/run/linkcond/linkcond-api.sock, or $LINKCOND_STORE;
            mode 0600, so root alone connects) and, with --listen, on a loopback TCP port, where every request
            carries the bearer token it prints and keeps in linkcond-api.token (0600). The endpoints are in
            api/openapi.yaml: GET/POST /v1/sandboxes, DELETE /v1/sandboxes/NAME, POST .../apply (a profile's
            name, a profile document, or {"downlink": {...}, "uplink": {...}}, with "link" and "for"),
            POST .../clear, GET .../show and .../status (the --json documents), GET .../events (JSON lines until
            the client leaves), POST .../run (a scenario; the answer names its report folder). Errors are the
            CLI's sentences with a fitting HTTP status. No client can hold up another: a thread per
            connection, a request must arrive whole within 5 s, at most 128 connections. Runs until Ctrl-C or
            SIGTERM, then puts back the conditions it put on for a while.
            """,
        options: [
            .value("socket", valueName: "path", help: "the Unix socket to serve on", defaultDescription: "STORE/linkcond-api.sock"),
            .value("listen", valueName: "address:port", help: "also serve on this loopback TCP address, such as 127.0.0.1:8477 (bearer token)"),
        ],
        examples: [
            "sudo linkcond api",
            "sudo curl -s --unix-socket /run/linkcond/linkcond-api.sock http://linkcond/v1/sandboxes",
            "sudo linkcond api --listen 127.0.0.1:8477",
        ])

    static let doctor = CommandSpec(
        "doctor",
        abstract: "Check which kernel features linkcond can use (netem, tbf, htb, ifb, veth, namespaces) and which backend works.",
        discussion: """
            Each feature is tried for real in a throwaway namespace, and a refusal is shown in the kernel's
            own words. Nothing outside that namespace is changed. Exits 1 when the backend asked for (by
            default 'auto': netem, or the userspace engine where the kernel has no netem) cannot work here.
            """,
        options: [
            .value("backend", help: "the backend to check for", defaultDescription: "auto", allowedValues: ["auto", "netem", "userspace"]),
            .flag("json", help: "print JSON"),
        ])

    static let serve = CommandSpec(
        "serve",
        abstract: "Run the sandbox server's responders in the current namespace (started by 'up').",
        discussion: """
            Answers HTTP on port 80 (/generate_204 gives 204, / a small page), TCP and UDP echo on port 7,
            and DNS on port 53 for *.linkcond.test, until it receives SIGTERM or SIGINT. 'linkcond up'
            starts it inside the server namespace; there is rarely a reason to run it by hand.
            """,
        options: [
            nameOption,
            .value("portal-flag", valueName: "path", help: "while this file exists, /generate_204 answers as a captive portal"),
        ])

    static let engine = CommandSpec(
        "engine",
        abstract: "Run a sandbox's userspace engine in the current (wire) namespace (started by 'up').",
        discussion: """
            Forwards frames between the wire's veth ends (cl-wl0/rt-wl0, and cl-ww0/rt-ww0 with cellular)
            through the impairment model, relays carrier from one side to the other, and takes profiles on
            its control socket (STORE/NAME.engine.sock) until it receives SIGTERM or SIGINT. 'linkcond up'
            starts it inside the wire namespace with the userspace backend; there is rarely a reason to run
            it by hand. LINKCOND_ENGINE_PRIORITY=N runs the forwarding threads SCHED_FIFO at priority N.
            """,
        options: [
            nameOption,
            .value("store", valueName: "dir", help: "the sandbox store holding the control socket", defaultDescription: "/run/linkcond"),
            .flag("attached", help: "an attachment's engine: its wire ends are in the attachment's state, and their peers are left as they are"),
        ])

    static let trace = CommandSpec(
        "trace",
        abstract: "Delivery traces (Mahimahi's format) for a profile's \"trace\": summarize one, or make one from rates.",
        discussion: """
            A trace has one millisecond per line: when one 1500-byte delivery opportunity occurs; it repeats
            with its last line as the period. A profile direction with "trace": "FILE" (next to the profile)
            delivers by it instead of a fixed rate (userspace backend).
            """,
        subcommands: [
            CommandSpec(
                "summary", abstract: "Duration, mean rate and percentiles of the rate per second of a trace file.",
                options: [.flag("json", help: "print JSON (with the rate of every second)")],
                positionals: [PositionalSpec("trace", help: "a trace file")],
                examples: ["linkcond trace summary profiles/traces/lte-driving.trace"]),
            CommandSpec(
                "from-csv", abstract: "Write a trace that delivers the rates of a TIME,RATE CSV.",
                discussion: """
                    Each row: the time its rate starts (seconds, or with a unit such as 1500ms; the first at 0)
                    and the rate (bits per second, or with a unit such as 12mbit). A row's rate lasts until the
                    next row; the last row's as long as the one before it.
                    """,
                positionals: [PositionalSpec("csv", help: "the CSV file"), PositionalSpec("output", help: "the trace file to write")],
                examples: ["linkcond trace from-csv rates.csv drive.trace"]),
        ],
        examples: ["linkcond trace summary drive.trace", "linkcond trace from-csv rates.csv drive.trace"])
}
