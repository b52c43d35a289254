import Glibc

/// Reading a document file (a profile, a scenario) with a size cap, so that a wrong path pointing at a
/// huge file fails at once instead of filling memory.
public enum DocumentFile {
    /// The contents of `path`, at most `maximumSize` bytes. Anything else is an `.unreadable`
    /// ``DocumentError`` naming `path`: a file that cannot be opened or read ("cannot read the file: No such
    /// file or directory"), or one larger than `maximumSize`, which expects `expected` (say, "a profile
    /// file").
    public static func read(_ path: String, maximumSize: Int, expected: String) throws(DocumentError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw unreadable(path) }
        defer { close(fd) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw unreadable(path)
            }
            if count == 0 { return contents }
            contents.append(contentsOf: buffer[0..<count])
            if contents.count > maximumSize {
                let limit = maximumSize >= 1 << 20 ? "\(maximumSize >> 20) MiB" : "\(maximumSize) bytes"
                throw DocumentError(
                    .unreadable, file: path, problem: "the file is larger than \(limit)", expected: expected)
            }
        }
    }

    /// A file that cannot be opened or read names no expectation: the system's reason says it all.
    private static func unreadable(_ path: String) -> DocumentError {
        DocumentError(.unreadable, file: path, problem: "cannot read the file: " + String(cString: strerror(errno)))
    }
}
