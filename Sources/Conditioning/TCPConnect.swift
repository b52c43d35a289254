import Glibc
import RouteNetlink

/// Opens a TCP connection to `address`:`port` from the calling thread's network namespace and closes it
/// again; returns nil on success or the errno of the failure. Waits at most `timeout` seconds.
func tcpConnect(to address: IPAddress, port: UInt16, timeout: Double) -> Int32? {
    let family = address.isIPv4 ? AF_INET : AF_INET6
    let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return errno }
    defer { close(fd) }
    var result: Int32
    if address.isIPv4 {
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &socketAddress.sin_addr) { $0.copyBytes(from: address.bytes) }
        result = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    } else {
        var socketAddress = sockaddr_in6()
        socketAddress.sin6_family = sa_family_t(AF_INET6)
        socketAddress.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { $0.copyBytes(from: address.bytes) }
        result = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
    }
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
