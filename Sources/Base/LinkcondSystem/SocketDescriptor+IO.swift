import Glibc

extension SocketDescriptor {
    /// Sends from `buffer` on a connected socket (`send(2)`); returns how many bytes went. `MSG_NOSIGNAL`
    /// in `flags` turns a closed peer into ``Errno/brokenPipe`` instead of a `SIGPIPE`.
    @inlinable
    public func send(_ buffer: UnsafeRawBufferPointer, flags: Int32 = 0, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("send", retryOnInterrupt: retryOnInterrupt) { Glibc.send(rawValue, buffer.baseAddress, buffer.count, flags) }
    }

    /// Sends `buffer` as one datagram to `address` (`sendto(2)`).
    @inlinable
    public func send(
        _ buffer: UnsafeRawBufferPointer, to address: some SocketAddressConvertible, flags: Int32 = 0, retryOnInterrupt: Bool = true
    ) throws(SystemError) -> Int {
        try address.withUnsafeSocketAddress { pointer, length throws(SystemError) in
            try systemCall("sendto \(address)", retryOnInterrupt: retryOnInterrupt) {
                sendto(rawValue, buffer.baseAddress, buffer.count, flags, pointer, length)
            }
        }
    }

    /// Sends all of `buffer` on a connected socket, calling `send(2)` as often as it takes.
    public func sendAll(_ buffer: UnsafeRawBufferPointer, flags: Int32 = 0) throws(SystemError) {
        var offset = 0
        while offset < buffer.count {
            offset += try send(UnsafeRawBufferPointer(rebasing: buffer[offset...]), flags: flags)
        }
    }

    /// Receives into `buffer` (`recv(2)`): the byte count, 0 at the end of a stream. With `MSG_TRUNC` a
    /// datagram's own length, even when `buffer` was smaller.
    @inlinable
    public func receive(into buffer: UnsafeMutableRawBufferPointer, flags: Int32 = 0, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("recv", retryOnInterrupt: retryOnInterrupt) { recv(rawValue, buffer.baseAddress, buffer.count, flags) }
    }

    /// Receives one datagram into `buffer` and where it came from (`recvfrom(2)`).
    @inlinable
    public func receive(
        into buffer: UnsafeMutableRawBufferPointer, from sender: inout SocketAddressStorage, flags: Int32 = 0, retryOnInterrupt: Bool = true
    ) throws(SystemError) -> Int {
        try sender.withUnsafeMutableSocketAddress { pointer, length throws(SystemError) in
            try systemCall("recvfrom", retryOnInterrupt: retryOnInterrupt) {
                recvfrom(rawValue, buffer.baseAddress, buffer.count, flags, pointer, length)
            }
        }
    }

    /// Sends the message `message` describes (`sendmsg(2)`): scattered buffers, an address, control data.
    @inlinable
    public func sendMessage(_ message: UnsafePointer<msghdr>, flags: Int32 = 0, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("sendmsg", retryOnInterrupt: retryOnInterrupt) { sendmsg(rawValue, message, flags) }
    }

    /// Receives one message into the buffers `message` describes (`recvmsg(2)`), filling in its address,
    /// control data and flags.
    @inlinable
    public func receiveMessage(_ message: UnsafeMutablePointer<msghdr>, flags: Int32 = 0, retryOnInterrupt: Bool = true) throws(SystemError) -> Int {
        try systemCall("recvmsg", retryOnInterrupt: retryOnInterrupt) { recvmsg(rawValue, message, flags) }
    }
}
