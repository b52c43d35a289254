/// How one of the app's own requests ended.
///
/// Request outcomes say something about the request, the server or the link's quality — never about
/// whether a path exists. They are kept in a ``RequestOutcomeModel``, apart from the path hint, which they
/// never overwrite: a timeout on a satisfied path is not "offline".
public enum RequestOutcome: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The request completed.
    case success
    /// No answer within the request's timeout.
    case timeout
    /// The server refused the credentials (HTTP 401/403 and the like).
    case authenticationFailed
    /// The server answered with an error (an HTTP 5xx status, for example).
    case serverError(status: Int)
    /// The connection failed below the application protocol (refused, reset, unreachable, DNS failure).
    case transportError(String)

    /// True for everything but ``success``.
    public var isFailure: Bool { self != .success }

    public var description: String {
        switch self {
        case .success: "success"
        case .timeout: "timeout"
        case .authenticationFailed: "authenticationFailed"
        case let .serverError(status): "serverError(\(status))"
        case let .transportError(detail): "transportError(\(detail))"
        }
    }
}

/// The app's record of how its requests went, kept apart from the path hint.
///
/// This model has no access to the path hint and nothing in it changes the hint: the hint follows path
/// updates only. Use it for what request outcomes are good for — "the server is having trouble", "requests
/// keep timing out on this link" — and show that differently from "offline".
public struct RequestOutcomeModel: Sendable, Equatable {
    /// The most recent outcome, nil before the first request ends.
    public private(set) var lastOutcome: RequestOutcome?
    /// Failures since the last success.
    public private(set) var consecutiveFailures: Int = 0
    /// Requests recorded so far.
    public private(set) var total: Int = 0
    /// Failed requests recorded so far.
    public private(set) var failures: Int = 0
    /// How many consecutive failures make ``isFailing`` true.
    public var failureThreshold: Int

    /// - Parameter failureThreshold: consecutive failures after which ``isFailing`` is true (at least 1).
    public init(failureThreshold: Int = 3) {
        self.failureThreshold = max(1, failureThreshold)
    }

    /// True when the last ``failureThreshold`` requests (or more) all failed.
    public var isFailing: Bool { consecutiveFailures >= failureThreshold }

    /// Records the outcome of one request.
    public mutating func record(_ outcome: RequestOutcome) {
        lastOutcome = outcome
        total += 1
        if outcome.isFailure {
            failures += 1
            consecutiveFailures += 1
        } else {
            consecutiveFailures = 0
        }
    }
}
