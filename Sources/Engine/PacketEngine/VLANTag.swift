/// Puts back the 802.1Q/802.1ad tag the kernel took out of a frame.
///
/// A veth hands a tagged frame to packet sockets untagged: `__netif_receive_skb_core` moves the outer tag
/// into the skb (`skb_vlan_untag`) before any tap sees it, and `tpacket_rcv` reports it beside the frame
/// (`tp_vlan_tci`, `tp_vlan_tpid`, with `TP_STATUS_VLAN_VALID` and `TP_STATUS_VLAN_TPID_VALID` in
/// `tp_status`; `PACKET_AUXDATA` carries the same for `recvmsg`). Sent on as it was read, the frame would
/// leave the engine untagged and land in the untagged network. The engine writes the tag back into the
/// frame, in front of its EtherType, before the model sees it (the classifier reads up to two tags), so the
/// frame crosses as it was sent. A second (inner) tag is never taken out and needs nothing.
enum VLANTag {
    /// Bytes of a tag: its TPID and its TCI.
    static let size = 4
    /// The TPID of an 802.1Q tag, for a kernel that does not report the TPID.
    static let dot1Q: UInt16 = 0x8100
    /// Bytes of a `struct virtio_net_hdr`.
    static let virtioHeaderSize = 10

    /// Inserts the tag `tpid`/`tci` into the frame whose `headroom` bytes (a `virtio_net_hdr`, or nothing)
    /// and MAC addresses start at `start`: the headroom and the two addresses move `size` bytes towards
    /// the front, and the tag goes between them and the EtherType. The `size` bytes before `start` must be
    /// free; the frame (with its headroom) then starts at `start - size` and is `size` bytes longer. A
    /// `virtio_net_hdr`'s checksum start and header length move with the payload.
    @inline(__always)
    static func insert(at start: UnsafeMutableRawPointer, headroom: Int, tpid: UInt16, tci: UInt16) {
        let front = start - size
        front.copyMemory(from: start, byteCount: headroom + 12)
        front.storeBytes(of: tpid.bigEndian, toByteOffset: headroom + 12, as: UInt16.self)
        front.storeBytes(of: tci.bigEndian, toByteOffset: headroom + 14, as: UInt16.self)
        guard headroom >= virtioHeaderSize else { return }
        // struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset (little-endian
        // for a socket, as virtio 1.0 and tpacket_rcv's vio_le() have it on this machine).
        let flags = front.load(as: UInt8.self)
        let gsoType = front.load(fromByteOffset: 1, as: UInt8.self)
        if flags & 1 != 0 {  // VIRTIO_NET_HDR_F_NEEDS_CSUM
            let checksumStart = UInt16(littleEndian: front.loadUnaligned(fromByteOffset: 6, as: UInt16.self))
            front.storeBytes(of: (checksumStart &+ UInt16(size)).littleEndian, toByteOffset: 6, as: UInt16.self)
        }
        if gsoType != 0 {  // VIRTIO_NET_HDR_GSO_NONE is 0
            let headerLength = UInt16(littleEndian: front.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            front.storeBytes(of: (headerLength &+ UInt16(size)).littleEndian, toByteOffset: 2, as: UInt16.self)
        }
    }
}
