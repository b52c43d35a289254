import Glibc

/// Reading a JSON document file (a profile, a scenario) with a size cap, so a wrong path pointing at a
/// huge file fails at once instead of filling memory.
public enum DocumentFile {
    /// Why a file could not be read, in words ("cannot read the file: No such file or directory").
    public struct ReadError: Error, Sendable, Equatable {
        public var problem: String
        /// True when the file was readable but larger than allowed.
        public var tooLarge = false
    }

    /// The contents of `path`, at most `maximumSize` bytes.
    public static func read(_ path: String, maximumSize: Int) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw unreadable() }
        defer { close(fd) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw unreadable()
            }
            if count == 0 { return contents }
            contents.append(contentsOf: buffer[0..<count])
            if contents.count > maximumSize {
                throw ReadError(
                    problem: "the file is larger than \(maximumSize >= 1 << 20 ? "\(maximumSize >> 20) MiB" : "\(maximumSize) bytes")",
                    tooLarge: true)
            }
        }
    }

    private static func unreadable() -> ReadError {
        ReadError(problem: "cannot read the file: " + String(cString: strerror(errno)))
    }
}
