import CPacket
import Glibc

/// Sends a direction's batches out of its send socket, one `sendmmsg` per call. The sink owns the socket.
final class PacketSink: FrameSink {
    private let socket: PacketSocket

    init(socket: PacketSocket) {
        self.socket = socket
    }

    @inline(__always)
    func send(_ batch: SendBatch, from start: Int) -> SendResult {
        let sent = Int(cpk_sendmmsg(socket.fileDescriptor, batch.messages + start, UInt32(batch.count - start), 0))
        if sent > 0 { return .sent(sent) }
        let code = errno
        return code == EINTR ? .interrupted : .failed(code)
    }

    func close() {
        socket.close()
    }

    func currentMTU() -> Int { socket.currentMTU() }
}
