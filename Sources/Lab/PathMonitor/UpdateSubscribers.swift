/// The `AsyncStream` subscribers of a monitor or prober: kept inside the owner's lock, each new stream
/// starts with the latest update, keeps the newest `bufferSize` when its consumer falls behind, and ends
/// when the owner is cancelled.
struct UpdateSubscribers<Update: Sendable> {
    private struct Subscriber {
        let id: UInt64
        let continuation: AsyncStream<Update>.Continuation
    }

    private var subscribers: [Subscriber] = []
    private var nextID: UInt64 = 0

    /// Makes a stream, already holding `latest` if there is one. `onTermination` runs with the
    /// subscriber's id when the consumer stops listening; it should call `remove(_:)` under the owner's lock.
    mutating func add(latest: Update?, bufferSize: Int, onTermination: @escaping @Sendable (UInt64) -> Void) -> AsyncStream<Update> {
        let (stream, continuation) = AsyncStream<Update>.makeStream(bufferingPolicy: .bufferingNewest(max(1, bufferSize)))
        nextID += 1
        let id = nextID
        subscribers.append(Subscriber(id: id, continuation: continuation))
        if let latest { continuation.yield(latest) }
        continuation.onTermination = { _ in onTermination(id) }
        return stream
    }

    /// The continuations, for yielding outside the lock.
    var continuations: [AsyncStream<Update>.Continuation] { subscribers.map(\.continuation) }

    mutating func remove(_ id: UInt64) {
        subscribers.removeAll { $0.id == id }
    }

    /// Removes every subscriber and returns their continuations, to be finished outside the lock.
    mutating func removeAll() -> [AsyncStream<Update>.Continuation] {
        defer { subscribers = [] }
        return continuations
    }
}
