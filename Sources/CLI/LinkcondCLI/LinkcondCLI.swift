import Profiles
import Conditioning
import PathMonitor
import Scenarios
import Timeline
import Glibc
import JSONDocument
import NetNamespace
import Responders
import RouteNetlink
import Sandboxing

/// The `linkcond` command line: parses arguments, runs a command, maps errors to exit codes
/// (0 ok, 1 failure, 2 usage) with one clear sentence on stderr.
public enum LinkcondCLI {
    /// Runs the command line `arguments` (without the program name) and returns the exit code.
    public static func run(_ arguments: [String]) -> Int32 {
        Output.finish(execute(arguments))
    }

    private static func execute(_ arguments: [String]) -> Int32 {
        let root = CommandTree.root
        let parsed: ParsedCommand
        do {
            parsed = try root.parse(arguments)
        } catch {
            Output.error(error.description)
            FileHandleOutput.usage(root.usageLine(for: error.commandPath))
            return 2
        }
        if parsed.helpRequested || parsed.subcommandPath.isEmpty {
            Output.print(root.helpText(for: parsed.commandPath))
            return parsed.helpRequested ? 0 : 2
        }
        do {
            if parsed.subcommandPath[0] == "profiles" {
                return try parsed.subcommandPath.count > 1 ? ConditionCommands.showProfile(parsed) : ConditionCommands.profiles(parsed)
            }
            if parsed.subcommandPath[0] == "scenarios" {
                return try ScenariosCommand.run(parsed)
            }
            if parsed.subcommandPath[0] == "trace" {
                return try TraceCommand.run(parsed)
            }
            if geteuid() != 0 {
                throw SandboxError.notRoot
            }
            switch parsed.subcommandPath[0] {
            case "up": return try SandboxCommands.up(parsed)
            case "down": return try SandboxCommands.down(parsed)
            case "status": return try SandboxCommands.status(parsed)
            case "exec": return try SandboxCommands.exec(parsed)
            case "apply": return try ConditionCommands.apply(parsed)
            case "clear": return try ConditionCommands.clear(parsed)
            case "show": return try ConditionCommands.show(parsed)
            case "attach": return try AttachCommands.attach(parsed)
            case "detach": return try AttachCommands.detach(parsed)
            case "monitor": return try MonitorCommand.run(parsed)
            case "run": return try RunCommand.run(parsed)
            case "api": return try APICommand.run(parsed)
            case "doctor": return try DoctorCommand.run(parsed)
            case "serve": return try ServeCommand.run(parsed)
            case "engine": return try EngineCommand.run(parsed)
            default:
                Output.error("'\(parsed.subcommandPath[0])' is not implemented")
                return 1
            }
        } catch let error as UsageError {
            Output.error(error.description)
            FileHandleOutput.usage(root.usageLine(for: error.commandPath))
            return 2
        } catch let error as SandboxError {
            Output.error(error.description)
            return error.isInterrupted ? 130 : 1
        } catch let error as PathMonitorError {
            Output.error(error.description)
            return 1
        } catch let error as DocumentError {
            // A profile or scenario that was refused (ProfileError and ScenarioError are DocumentError).
            Output.error(error.description)
            return 1
        } catch let error as LabError {
            Output.error(error.description)
            return 1
        } catch let error as TimelineError {
            Output.error(error.description)
            return 1
        } catch let error as CommandFailure {
            Output.error(error.description)
            return error.exitCode
        } catch {
            Output.error("\(error)")
            return 1
        }
    }
}

enum FileHandleOutput {
    static func usage(_ line: String) {
        Output.errorRaw("usage: \(line)")
    }
}

extension SandboxError {
    var isInterrupted: Bool {
        if case .interrupted = self { return true }
        return false
    }
}
