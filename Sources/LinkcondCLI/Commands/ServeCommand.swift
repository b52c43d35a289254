import Conditioning
import Responders

/// `linkcond serve`: the sandbox server's responders, run by `up` inside the server namespace.
enum ServeCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let configuration = ResponderConfiguration(
            zone: SandboxTopology.zone,
            ipv4Address: SandboxTopology.serverIPv4.description,
            ipv6Address: SandboxTopology.serverIPv6.description,
            httpPort: SandboxTopology.httpPort,
            echoPort: SandboxTopology.echoPort,
            dnsPort: SandboxTopology.dnsPort,
            portalFlagPath: parsed.value("portal-flag"))
        let server = ResponderServer(configuration: configuration)
        Output.print("linkcond serve: answering on \(server.endpoints.joined(separator: ", "))")
        try server.runUntilTerminated()
        return 0
    }
}
