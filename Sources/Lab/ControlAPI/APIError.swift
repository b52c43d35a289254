import JSONDocument
import PathMonitor
import Sandboxing
import Scenarios
import Timeline

/// How the control API answers a request it cannot carry out: an HTTP status and one sentence — the one the
/// CLI would print for the same mistake — sent as `{"error": SENTENCE, "status": N}`.
public struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status.
    public var status: Int
    /// What was wrong, where, and what to do.
    public var message: String
    /// Headers the answer carries (`Allow`, `WWW-Authenticate`, `Retry-After`).
    public var headers: [APIHeader]

    /// An error answered with `status`.
    public init(_ status: Int, _ message: String, headers: [APIHeader] = []) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    public var description: String { message }

    /// The answer a failure of the library becomes: its own sentence, with the status that fits it — 404 for a
    /// sandbox that is not up, 409 for one that is busy or of another shape, 400 for a body that is not JSON,
    /// 422 for a document the format refuses, 500 for what went wrong inside.
    public static func from(_ error: any Error) -> APIError {
        switch error {
        case let error as APIError: return error
        case let error as SandboxError: return APIError(status(of: error), error.description)
        case let error as DocumentError: return APIError(error.kind == .syntax ? 400 : 422, error.description)
        case let error as LabError:
            switch error {
            case .timedOut: return APIError(504, error.description)
            case .reportDirectory: return APIError(422, error.description)
            case .needsCellular, .wrongShape, .sandboxExists, .conflictingSandboxes, .notOnAttachment, .scenarioNeedsSandbox:
                return APIError(409, error.description)
            }
        case let error as TimelineError: return APIError(500, error.description)
        case let error as PathMonitorError: return APIError(500, error.description)
        default: return APIError(500, "\(error)")
        }
    }

    private static func status(of error: SandboxError) -> Int {
        switch error {
        case .notUp: 404
        case .invalidName: 400
        case .busy, .unsupported: 409
        case .interrupted: 503
        case .namespace, .netlink, .state, .serverNotReady, .process, .notRoot, .conditionsMismatch: 500
        }
    }

    /// `{"error": "…", "status": 404}`.
    var json: JSONValue {
        .object([("error", .string(message)), ("status", .number(JSONNumber(status)))])
    }
}

/// A header field of an answer.
public struct APIHeader: Sendable, Equatable {
    /// The field's name, as written (`Retry-After`).
    public var name: String
    /// Its value.
    public var value: String

    /// `name: value`.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
