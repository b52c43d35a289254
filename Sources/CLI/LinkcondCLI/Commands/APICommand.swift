import ControlAPI
import Glibc
import Sandboxing

/// `linkcond api`: serves the control API until SIGINT or SIGTERM.
enum APICommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let store = SandboxStore.standard
        var endpoints: [APIEndpoint] = [.unix(path: parsed.value("socket") ?? APIConfiguration.socketPath(in: store))]
        if let listen = parsed.value("listen") {
            do {
                endpoints.append(try APIEndpoint.loopback(listen))
            } catch {
                throw UsageError("'--listen \(listen)': \(error.message)", commandPath: parsed.commandPath)
            }
        }
        let server = ControlAPIServer(APIConfiguration(store: store, executable: try SandboxCommands.ownExecutable(), endpoints: endpoints))
        Interrupts.install()
        let bound: [APIEndpoint]
        do {
            bound = try server.start()
        } catch {
            throw CommandFailure(error.message)
        }
        for endpoint in bound {
            if case .tcp = endpoint, let token = server.token {
                Output.print("linkcond api: serving on \(endpoint); send 'Authorization: Bearer \(token.value)' (the token is also in \(APIConfiguration.tokenPath(in: store)), mode 0600)")
            } else {
                Output.print("linkcond api: serving on \(endpoint)")
            }
        }
        while !Interrupts.received { usleep(50_000) }
        Output.error("stopping: putting back the conditions this server put on for a while, ending the event streams")
        server.stop()
        return 0
    }
}
