import Glibc

/// Opens a TCP connection to `address`:`port` from the calling thread's network namespace and closes it
/// again; returns nil on success or the errno of the failure. Waits at most `timeout` seconds.
public func tcpConnect(to address: IPAddress, port: UInt16, timeout: Double) -> Int32? {
    let fd = socket(address.family.socketDomain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return errno }
    defer { close(fd) }
    let result = SocketAddress(address, port: port).withSockaddr { connect(fd, $0, $1) }
    if result == 0 { return nil }
    guard errno == EINPROGRESS else { return errno }
    var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    let ready = poll(&poller, 1, Int32(timeout * 1000))
    if ready <= 0 { return ready == 0 ? ETIMEDOUT : errno }
    var socketError: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length)
    return socketError == 0 ? nil : socketError
}
