import Conditioning
import LinkcondBase
import Responders

/// `linkcond serve`: the sandbox server's responders, run by `up` inside the server namespace.
enum ServeCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let configuration = ResponderConfiguration(
            zone: SandboxPlan.zone,
            ipv4Address: SandboxPlan.serverIPv4.description,
            ipv6Address: SandboxPlan.serverIPv6.description,
            httpPort: SandboxPlan.httpPort,
            echoPort: SandboxPlan.echoPort,
            dnsPort: SandboxPlan.dnsPort,
            portalFlagPath: parsed.value("portal-flag"))
        let server = ResponderServer(configuration: configuration)
        Output.print("linkcond serve: answering on \(server.endpoints.joined(separator: ", "))")
        try server.runUntilTerminated()
        return 0
    }
}
