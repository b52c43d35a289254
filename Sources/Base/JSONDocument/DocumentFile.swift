import Glibc
import LinkcondSystem

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
        guard stat(path, &info) == 0 else { throw unreadable(path, .current) }
        try requireRegular(info, path: path, expected: expected)
        let file: FileDescriptor
        do throws(SystemError) {
            file = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking, .noControllingTerminal])
        } catch {
            throw unreadable(path, error.errno)
        }
        let contents = try file.closeAfter { () throws(DocumentError) -> [UInt8] in
            let opened: stat
            do throws(SystemError) {
                opened = try file.status()
            } catch {
                throw unreadable(path, error.errno)
            }
            try requireRegular(opened, path: path, expected: expected)
            do throws(SystemError) {
                // One byte more than allowed tells a file that is over the limit.
                return try file.readToEnd(maximumCount: min(maximumSize, Int.max - 1) + 1)
            } catch {
                throw unreadable(path, error.errno)
            }
        }
        guard contents.count <= maximumSize else {
            let limit = maximumSize >= 1 << 20 ? "\(maximumSize >> 20) MiB" : "\(maximumSize) bytes"
            throw DocumentError(.unreadable, file: path, problem: "the file is larger than \(limit)", expected: expected)
        }
        return contents
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
    private static func unreadable(_ path: String, _ errno: Errno) -> DocumentError {
        DocumentError(.unreadable, file: path, problem: "cannot read the file: \(errno)")
    }
}
