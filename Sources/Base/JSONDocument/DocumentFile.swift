import Glibc

/// Reading a document file (a profile, a scenario): only a regular file, and at most a given size, so
/// that a wrong path fails at once instead of blocking on a FIFO or a device, or filling memory.
public enum DocumentFile {
    /// The contents of the regular file `path`, at most `maximumSize` bytes. Anything else is an
    /// `.unreadable` ``DocumentError`` naming `path`: a file that cannot be opened or read ("cannot read
    /// the file: No such file or directory"), one that is not a regular file ("it is a FIFO, not a regular
    /// file"), or one larger than `maximumSize`; the last two expect `expected` (say, "a profile file").
    ///
    /// The type is checked with `stat` before opening, so that opening cannot block, and again with `fstat`
    /// on the opened file (opened non-blocking), in case the path was replaced in between.
    public static func read(_ path: String, maximumSize: Int, expected: String) throws(DocumentError) -> [UInt8] {
        var info = stat()
        guard stat(path, &info) == 0 else { throw unreadable(path) }
        try requireRegular(info, path: path, expected: expected)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw unreadable(path) }
        defer { close(fd) }
        guard fstat(fd, &info) == 0 else { throw unreadable(path) }
        try requireRegular(info, path: path, expected: expected)
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

    /// What a file of mode `mode` is, in words: "a FIFO", "a directory", "a regular file"...
    public static func kindName(mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "an unknown kind of file"
        }
    }

    private static func requireRegular(_ info: stat, path: String, expected: String) throws(DocumentError) {
        guard info.st_mode & S_IFMT != S_IFREG else { return }
        throw DocumentError(
            .unreadable, file: path, problem: "it is \(kindName(mode: info.st_mode)), not a regular file",
            expected: expected)
    }

    /// A file that cannot be opened or read names no expectation: the system's reason says it all.
    private static func unreadable(_ path: String) -> DocumentError {
        DocumentError(.unreadable, file: path, problem: "cannot read the file: " + String(cString: strerror(errno)))
    }
}
