import CLinkcondSystem
import Glibc

/// An open file descriptor, typed: every call retries `EINTR`, fails with a ``SystemError`` that names the
/// operation, and opens close-on-exec unless asked otherwise, so a process linkcond starts never inherits
/// a descriptor by accident.
///
/// A `FileDescriptor` is a plain value and does not own the descriptor: whoever opened it closes it once
/// (``close()``, ``closeAfter(_:)``), or hands it to an ``OwnedFileDescriptor``, which closes it when it
/// goes away.
///
/// ```swift
/// let file = try FileDescriptor.open("/proc/sys/net/ipv4/ip_forward", .writeOnly)
/// try file.closeAfter { _ = try file.writeAll("1".utf8) }
/// ```
@frozen
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    /// The C descriptor.
    public let rawValue: Int32

    /// The descriptor `rawValue` (not checked, not owned).
    @inlinable
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Descriptor 0.
    public static let standardInput = FileDescriptor(rawValue: 0)
    /// Descriptor 1.
    public static let standardOutput = FileDescriptor(rawValue: 1)
    /// Descriptor 2.
    public static let standardError = FileDescriptor(rawValue: 2)

    /// Whether a file is opened for reading, writing or both.
    @frozen
    public struct AccessMode: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// Reading only. `O_RDONLY`
        public static let readOnly = AccessMode(rawValue: O_RDONLY)
        /// Writing only. `O_WRONLY`
        public static let writeOnly = AccessMode(rawValue: O_WRONLY)
        /// Reading and writing. `O_RDWR`
        public static let readWrite = AccessMode(rawValue: O_RDWR)
    }

    /// How a file is opened, beyond its access mode.
    @frozen
    public struct OpenOptions: OptionSet, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// Create the file when it does not exist. `O_CREAT`
        public static let create = OpenOptions(rawValue: O_CREAT)
        /// With ``create``: fail with ``Errno/fileExists`` when it exists. `O_EXCL`
        public static let exclusiveCreate = OpenOptions(rawValue: O_EXCL)
        /// Cut the file to length 0. `O_TRUNC`
        public static let truncate = OpenOptions(rawValue: O_TRUNC)
        /// Every write goes to the end of the file. `O_APPEND`
        public static let append = OpenOptions(rawValue: O_APPEND)
        /// Calls do not block: they fail with ``Errno/wouldBlock`` instead (and opening a FIFO does not
        /// wait for the other end). `O_NONBLOCK`
        public static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
        /// Fail with ``Errno/tooManySymbolicLinkLevels`` when the last component is a symbolic link. `O_NOFOLLOW`
        public static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
        /// A terminal opened does not become the controlling terminal. `O_NOCTTY`
        public static let noControllingTerminal = OpenOptions(rawValue: O_NOCTTY)
        /// Fail unless the path is a directory. `O_DIRECTORY`
        public static let directory = OpenOptions(rawValue: O_DIRECTORY)
    }

    /// Opens `path` (`open(2)`), close-on-exec unless `closeOnExec` is false. `permissions` apply only when
    /// the file is created.
    public static func open(
        _ path: String, _ mode: AccessMode, options: OpenOptions = [], permissions: mode_t = 0o644,
        closeOnExec: Bool = true, retryOnInterrupt: Bool = true
    ) throws(SystemError) -> FileDescriptor {
        let flags = mode.rawValue | options.rawValue | (closeOnExec ? O_CLOEXEC : 0)
        let fd = try systemCall("open \(path)", retryOnInterrupt: retryOnInterrupt) {
            path.withCString { Glibc.open($0, flags, permissions) }
        }
        return FileDescriptor(rawValue: fd)
    }

    /// A pipe (`pipe2(2)`): what is written to `writeEnd` is read from `readEnd`. Both ends are
    /// close-on-exec unless `closeOnExec` is false.
    public static func pipe(closeOnExec: Bool = true, nonBlocking: Bool = false) throws(SystemError) -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
        var ends: (Int32, Int32) = (-1, -1)
        let flags = (closeOnExec ? O_CLOEXEC : 0) | (nonBlocking ? O_NONBLOCK : 0)
        _ = try withUnsafeMutableBytes(of: &ends) { raw throws(SystemError) in
            try systemCall("pipe2") { lcsys_pipe2(raw.baseAddress!.assumingMemoryBound(to: Int32.self), flags) }
        }
        return (FileDescriptor(rawValue: ends.0), FileDescriptor(rawValue: ends.1))
    }

    /// Reads at most `buffer.count` bytes at the file offset (`read(2)`); 0 at the end of the file.
    @inlinable
    public func read(into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("read", retryOnInterrupt: retryOnInterrupt) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads at most `buffer.count` bytes at `offset` without moving the file offset (`pread(2)`).
    @inlinable
    public func read(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("pread", retryOnInterrupt: retryOnInterrupt) { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Writes at most `buffer.count` bytes at the file offset (`write(2)`); returns how many were written.
    @inlinable
    public func write(_ buffer: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("write", retryOnInterrupt: retryOnInterrupt) { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes at most `buffer.count` bytes at `offset` without moving the file offset (`pwrite(2)`).
    @inlinable
    public func write(toAbsoluteOffset offset: Int64, _ buffer: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("pwrite", retryOnInterrupt: retryOnInterrupt) { Glibc.pwrite(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Writes all of `bytes`, calling `write(2)` as often as it takes; returns the count written.
    @discardableResult
    public func writeAll<Bytes: Sequence<UInt8>>(_ bytes: Bytes) throws(SystemError) -> Int {
        let outcome =
            bytes.withContiguousStorageIfAvailable { buffer in Result { () throws(SystemError) in try writeAll(UnsafeRawBufferPointer(buffer)) } }
            ?? Array(bytes).withUnsafeBytes { buffer in Result { () throws(SystemError) in try writeAll(buffer) } }
        return try outcome.get()
    }

    /// Writes the UTF-8 of `text` whole, as ``writeAll(_:)`` writes bytes. Not generic, so a command's first
    /// output costs no look-up of a sequence's conformances at run time.
    @discardableResult
    public func writeAll(_ text: String) throws(SystemError) -> Int {
        var text = text
        let outcome = text.withUTF8 { buffer in Result { () throws(SystemError) in try writeAll(UnsafeRawBufferPointer(buffer)) } }
        return try outcome.get()
    }

    private func writeAll(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        var offset = 0
        while offset < buffer.count {
            offset += try write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
        }
        return offset
    }

    /// Reads until the end of the file, or until `maximumCount` bytes were read, whichever comes first.
    /// Ask for one byte more than a limit to learn whether a file is over it.
    public func readToEnd(maximumCount: Int = .max) throws(SystemError) -> [UInt8] {
        var contents: [UInt8] = []
        // One buffer, uninitialized, for all the reads: a small file (/proc/PID/stat) costs one read and a
        // copy of what it holds.
        let outcome = withUnsafeTemporaryAllocation(byteCount: max(1, min(maximumCount, 64 * 1024)), alignment: 16) { buffer in
            Result { () throws(SystemError) in
                while contents.count < maximumCount {
                    let wanted = min(buffer.count, maximumCount - contents.count)
                    let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]))
                    if count == 0 { return }
                    contents.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                }
            }
        }
        try outcome.get()
        return contents
    }

    /// Closes the descriptor (`close(2)`). Never retried: Linux releases the descriptor even when `close`
    /// reports an error, so the number may already belong to someone else.
    public func close() throws(SystemError) {
        if Glibc.close(rawValue) != 0 {
            let code = Errno.current
            if code != .interrupted { throw systemFailure("close", code) }
        }
    }

    /// Runs `body`, then closes the descriptor whether or not `body` threw. A failure of `close` itself is
    /// not reported (the descriptor is released either way); close explicitly where it matters, as after
    /// writing a file whose data must have reached the disk.
    @discardableResult
    public func closeAfter<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        defer { try? close() }
        return try body()
    }
}
