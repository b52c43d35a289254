/// What an app may believe about the network, from path updates alone.
///
/// It is a hint, never a gate: requests are allowed in every state.
public enum NetworkHint: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// No path update has been received yet (the state at start — not ``unavailable``).
    case unknown
    /// The last path was satisfied (``NetworkPath/Status/satisfied``).
    case available
    /// An interface could be used after some action (``NetworkPath/Status/requiresConnection``).
    case needsConnection
    /// Nothing can carry traffic (``NetworkPath/Status/unsatisfied``). The only state with an offline banner.
    case unavailable

    /// The hint for a path status: satisfied → available, requiresConnection → needsConnection,
    /// unsatisfied → unavailable.
    public init(_ status: NetworkPath.Status) {
        switch status {
        case .satisfied: self = .available
        case .requiresConnection: self = .needsConnection
        case .unsatisfied: self = .unavailable
        }
    }

    public var description: String { rawValue }
}

/// How much an app should download, from the path's cost flags. The cost flags drive nothing else.
public enum DownloadStrategy: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Neither expensive nor constrained: download everything.
    case full
    /// Expensive (cellular, a hotspot): skip prefetching and large optional downloads.
    case reduced
    /// Constrained (a low-data mode), whatever the expense: only what the user asked for.
    case minimal

    /// The strategy for a pair of cost flags; constrained wins over expensive.
    public init(isExpensive: Bool, isConstrained: Bool) {
        self = isConstrained ? .minimal : isExpensive ? .reduced : .full
    }

    public var description: String { rawValue }
}

/// What ``NetworkHintModel/attempt(_:)`` says about a user action.
public struct ActionAttempt: Sendable, Equatable {
    /// Always true: the hint is a hint, not a gate, so the app performs the action in every state.
    public let shouldPerform: Bool
    /// True when the hint was ``NetworkHint/unavailable``: the action is kept and handed back, once, in
    /// ``HintChange/replay`` when the hint becomes available — unless ``NetworkHintModel/resolve(_:)``
    /// removes it first (the attempt succeeded after all).
    public let isQueuedForReplay: Bool
}

/// What one path update (or monitor stop) changed in a ``NetworkHintModel``.
public struct HintChange<Action: Hashable & Sendable>: Sendable, Equatable {
    /// False when the update came from another generation (a cancelled monitor) and was dropped.
    /// A dropped update changes nothing.
    public var isAccepted: Bool
    public var previousHint: NetworkHint
    public var hint: NetworkHint
    public var previousStrategy: DownloadStrategy
    public var strategy: DownloadStrategy
    /// True when `isExpensive` or `isConstrained` changed (even if the strategy did not).
    public var costFlagsChanged: Bool
    /// User actions queued while unavailable, handed back exactly once when the hint became available,
    /// in the order they were first attempted. Empty in every other change.
    public var replay: [Action]

    /// True when the hint itself changed.
    public var hintChanged: Bool { previousHint != hint }
    /// True when the download strategy changed.
    public var strategyChanged: Bool { previousStrategy != strategy }
    /// True when the offline banner appeared or went away.
    public var bannerChanged: Bool { (previousHint == .unavailable) != (hint == .unavailable) }
    /// True when nothing an app acts on changed: same hint, same cost flags, nothing to replay.
    public var isEmpty: Bool { !hintChanged && !costFlagsChanged && replay.isEmpty }
}

/// The app-level network hint: four states fed by path updates, kept apart from request outcomes.
///
/// - The hint starts in ``NetworkHint/unknown`` and follows each accepted path's status.
/// - Monitors have generations. To (re)start monitoring, call ``beginMonitor()`` first — it bumps the
///   generation and returns it — then cancel the old monitor and start a new one whose handler passes that
///   generation to ``apply(_:generation:)``. Updates carrying any other generation (late events of a
///   cancelled monitor) are dropped: neither the hint nor the cost flags change.
/// - The cost flags (`isExpensive`, `isConstrained`) are flags, not states; they only choose a
///   ``DownloadStrategy``. They are taken from satisfied paths and keep their last values otherwise
///   (an unsatisfied path reports no interface, hence no cost).
/// - Request outcomes go to ``requests`` through ``record(_:)`` and never touch the hint.
/// - Requests are always allowed; only ``NetworkHint/unavailable`` shows an offline banner.
/// - A user action attempted while unavailable is queued (once, however often it is attempted) and handed
///   back exactly once when the hint becomes available; repeated or duplicate updates hand back nothing more.
///
/// A value type: mutate it from one isolation domain (an actor, the main actor) and act on the returned
/// ``HintChange``.
public struct NetworkHintModel<Action: Hashable & Sendable>: Sendable, Equatable {
    /// The current hint.
    public private(set) var hint: NetworkHint = .unknown
    /// The expensive flag of the last satisfied path (cost flags keep their values while not satisfied).
    public private(set) var isExpensive = false
    /// The constrained flag of the last satisfied path.
    public private(set) var isConstrained = false
    /// The generation returned by the last ``beginMonitor()``; 0 before the first.
    public private(set) var generation: UInt64 = 0
    /// The last accepted path, nil before the first.
    public private(set) var path: NetworkPath?
    /// How the app's requests went. Separate from the hint, which it never changes.
    public private(set) var requests: RequestOutcomeModel
    /// User actions waiting for the hint to become available, first attempted first.
    public private(set) var pendingActions: [Action] = []

    /// - Parameter failureThreshold: passed to the ``RequestOutcomeModel``.
    public init(failureThreshold: Int = 3) {
        requests = RequestOutcomeModel(failureThreshold: failureThreshold)
    }

    /// True only while the hint is ``NetworkHint/unavailable``.
    public var showsOfflineBanner: Bool { hint == .unavailable }

    /// Always true, in every state: the hint is a hint, not a gate.
    public var allowsRequests: Bool { true }

    /// The download strategy the cost flags call for.
    public var downloadStrategy: DownloadStrategy {
        DownloadStrategy(isExpensive: isExpensive, isConstrained: isConstrained)
    }

    /// Starts a new monitor generation and returns it. Call this before cancelling the old monitor and
    /// creating the new one; from now on only updates with the returned generation are accepted.
    /// The hint, cost flags and queued actions stay as they are until the new monitor reports.
    public mutating func beginMonitor() -> UInt64 {
        generation += 1
        return generation
    }

    /// Stops monitoring: bumps the generation, so every event still in flight is dropped, and sets the hint
    /// to ``NetworkHint/unknown`` (without a monitor there is nothing to go by). The cost flags and queued
    /// actions are kept.
    @discardableResult
    public mutating func stopMonitor() -> HintChange<Action> {
        generation += 1
        let before = (hint, downloadStrategy)
        hint = .unknown
        path = nil
        return HintChange(
            isAccepted: true, previousHint: before.0, hint: hint, previousStrategy: before.1,
            strategy: downloadStrategy, costFlagsChanged: false, replay: [])
    }

    /// Applies a path delivered by the monitor of `generation` (the value ``beginMonitor()`` returned when
    /// that monitor was started — not ``PathUpdate/generation``, which a monitor counts for itself).
    ///
    /// An update of another generation is dropped and changes nothing. An accepted update sets the hint
    /// from `path.status`, takes the cost flags from a satisfied path, and, when the hint is now available,
    /// hands back the queued user actions (then forgets them, so they are handed back once).
    @discardableResult
    public mutating func apply(_ path: NetworkPath, generation: UInt64) -> HintChange<Action> {
        let previousHint = hint
        let previousStrategy = downloadStrategy
        guard generation == self.generation, generation != 0 else {
            return HintChange(
                isAccepted: false, previousHint: previousHint, hint: previousHint, previousStrategy: previousStrategy,
                strategy: previousStrategy, costFlagsChanged: false, replay: [])
        }
        self.path = path
        hint = NetworkHint(path.status)
        var costFlagsChanged = false
        if path.status == .satisfied, path.isExpensive != isExpensive || path.isConstrained != isConstrained {
            isExpensive = path.isExpensive
            isConstrained = path.isConstrained
            costFlagsChanged = true
        }
        var replay: [Action] = []
        if hint == .available, !pendingActions.isEmpty {
            replay = pendingActions
            pendingActions = []
        }
        return HintChange(
            isAccepted: true, previousHint: previousHint, hint: hint, previousStrategy: previousStrategy,
            strategy: downloadStrategy, costFlagsChanged: costFlagsChanged, replay: replay)
    }

    /// Applies a ``PathUpdate`` delivered by the monitor of `generation` (see ``apply(_:generation:)``).
    @discardableResult
    public mutating func apply(_ update: PathUpdate, generation: UInt64) -> HintChange<Action> {
        apply(update.path, generation: generation)
    }

    /// Notes that the user attempted `action`. The app should perform it whatever this returns (requests
    /// are always allowed); while the hint is unavailable the action is also queued for one replay when
    /// the hint becomes available. Attempting the same action again while it is queued does not queue it twice.
    @discardableResult
    public mutating func attempt(_ action: Action) -> ActionAttempt {
        guard hint == .unavailable else { return ActionAttempt(shouldPerform: true, isQueuedForReplay: false) }
        if !pendingActions.contains(action) { pendingActions.append(action) }
        return ActionAttempt(shouldPerform: true, isQueuedForReplay: true)
    }

    /// Removes `action` from the replay queue (it succeeded, or the user gave up). Returns whether it was queued.
    @discardableResult
    public mutating func resolve(_ action: Action) -> Bool {
        guard let index = pendingActions.firstIndex(of: action) else { return false }
        pendingActions.remove(at: index)
        return true
    }

    /// Records how one of the app's requests ended, in ``requests``. Never changes the hint, the cost flags
    /// or the queued actions.
    public mutating func record(_ outcome: RequestOutcome) {
        requests.record(outcome)
    }
}
