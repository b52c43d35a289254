import Glibc

/// An error number as the kernel and libc report it (`errno`), with a name for each value linkcond meets.
///
/// ```swift
/// if error.errno == .interrupted { ... }     // EINTR
/// print(Errno.connectionRefused)             // "Connection refused"
/// ```
@frozen
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The C value, e.g. 4 for `EINTR`.
    public let rawValue: Int32

    /// The error number `rawValue`.
    @inlinable
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno`: read it right after the call that failed, before anything else can
    /// change it. Setting it sets `errno`.
    @inlinable
    public static var current: Errno {
        get { Errno(rawValue: Glibc.errno) }
        set { Glibc.errno = newValue.rawValue }
    }

    /// The C library's text for the error (`strerror`), e.g. `Interrupted system call`.
    public var description: String { String(cString: strerror(rawValue)) }

    /// Operation not permitted. `EPERM`
    public static let notPermitted = Errno(rawValue: EPERM)
    /// No such file or directory. `ENOENT`
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// No such process. `ESRCH`
    public static let noSuchProcess = Errno(rawValue: ESRCH)
    /// A signal arrived before the call could finish; the call may be made again. `EINTR`
    public static let interrupted = Errno(rawValue: EINTR)
    /// Input/output error. `EIO`
    public static let ioError = Errno(rawValue: EIO)
    /// No such device or address. `ENXIO`
    public static let noSuchAddressOrDevice = Errno(rawValue: ENXIO)
    /// The descriptor is not open (or not open for this operation): a programmer error. `EBADF`
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    /// No child process to wait for. `ECHILD`
    public static let noChildProcess = Errno(rawValue: ECHILD)
    /// Nothing to do now on a non-blocking descriptor, or a timeout passed. `EAGAIN`
    public static let resourceTemporarilyUnavailable = Errno(rawValue: EAGAIN)
    /// The same value as ``resourceTemporarilyUnavailable`` on Linux. `EWOULDBLOCK`
    public static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
    /// Cannot allocate memory. `ENOMEM`
    public static let noMemory = Errno(rawValue: ENOMEM)
    /// Permission denied. `EACCES`
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// A pointer handed to the kernel was invalid: a programmer error. `EFAULT`
    public static let badAddress = Errno(rawValue: EFAULT)
    /// Device or resource busy. `EBUSY`
    public static let resourceBusy = Errno(rawValue: EBUSY)
    /// File exists. `EEXIST`
    public static let fileExists = Errno(rawValue: EEXIST)
    /// No such device. `ENODEV`
    public static let noSuchDevice = Errno(rawValue: ENODEV)
    /// Not a directory. `ENOTDIR`
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    /// Is a directory. `EISDIR`
    public static let isDirectory = Errno(rawValue: EISDIR)
    /// Invalid argument. `EINVAL`
    public static let invalidArgument = Errno(rawValue: EINVAL)
    /// Too many open files in the system. `ENFILE`
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    /// Too many open files in this process. `EMFILE`
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// No space left on device. `ENOSPC`
    public static let noSpace = Errno(rawValue: ENOSPC)
    /// The reading end went away. `EPIPE`
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// Result out of range. `ERANGE`
    public static let outOfRange = Errno(rawValue: ERANGE)
    /// File name too long. `ENAMETOOLONG`
    public static let fileNameTooLong = Errno(rawValue: ENAMETOOLONG)
    /// Function not implemented. `ENOSYS`
    public static let noFunction = Errno(rawValue: ENOSYS)
    /// Too many levels of symbolic links (or `O_NOFOLLOW` met one). `ELOOP`
    public static let tooManySymbolicLinkLevels = Errno(rawValue: ELOOP)
    /// Socket operation on a descriptor that is not a socket. `ENOTSOCK`
    public static let notSocket = Errno(rawValue: ENOTSOCK)
    /// Message too long for the socket. `EMSGSIZE`
    public static let messageTooLong = Errno(rawValue: EMSGSIZE)
    /// Protocol not supported. `EPROTONOSUPPORT`
    public static let protocolNotSupported = Errno(rawValue: EPROTONOSUPPORT)
    /// Operation not supported. `EOPNOTSUPP`
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    /// Address family not supported by protocol. `EAFNOSUPPORT`
    public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
    /// Address already in use. `EADDRINUSE`
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    /// Cannot assign requested address. `EADDRNOTAVAIL`
    public static let addressNotAvailable = Errno(rawValue: EADDRNOTAVAIL)
    /// Network is down. `ENETDOWN`
    public static let networkDown = Errno(rawValue: ENETDOWN)
    /// Network is unreachable. `ENETUNREACH`
    public static let networkUnreachable = Errno(rawValue: ENETUNREACH)
    /// Software caused connection abort. `ECONNABORTED`
    public static let connectionAbort = Errno(rawValue: ECONNABORTED)
    /// Connection reset by peer. `ECONNRESET`
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    /// No buffer space available (for netlink: notifications were dropped). `ENOBUFS`
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)
    /// The socket is already connected. `EISCONN`
    public static let socketIsConnected = Errno(rawValue: EISCONN)
    /// The socket is not connected. `ENOTCONN`
    public static let socketNotConnected = Errno(rawValue: ENOTCONN)
    /// Connection timed out. `ETIMEDOUT`
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    /// Connection refused. `ECONNREFUSED`
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// No route to host. `EHOSTUNREACH`
    public static let noRouteToHost = Errno(rawValue: EHOSTUNREACH)
    /// A connect on this non-blocking socket is already under way. `EALREADY`
    public static let alreadyInProcess = Errno(rawValue: EALREADY)
    /// A connect on a non-blocking socket has started and goes on in the background. `EINPROGRESS`
    public static let nowInProgress = Errno(rawValue: EINPROGRESS)
}
