import Foundation
import Glibc
import XCTest

@testable import Netlink

/// Inputs `scripts/fuzz` found that once crashed; each is also in `Fuzz/regressions/`.
final class FuzzRegressionTests: XCTestCase {
    /// The bytes of a hex string (two digits a byte).
    private func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// An error code of INT32_MIN has no errno: negating it trapped (Fuzz/regressions/rtnetlink-messages/
    /// error-code-int32-min, a netem request whose payload the fuzzer read as an error message).
    func testErrorCodeThatCannotBeNegatedIsMalformed() throws {
        let datagram = bytes(
            "6c000000240005053a270c6b00000000000000800300000000000100ffffffff000000000a0001006e400000000008000700"
                + "010000000c000400295c8f0200000000000000000000000000000c000300000000400000000008000700010000000c0004"
                + "00295c8f0200000000")
        let messages = try NetlinkMessage.parse(datagram: datagram)
        XCTAssertEqual(messages.count, 1)
        XCTAssertThrowsError(try messages[0].decodeError(operation: "fuzz")) { error in
            XCTAssertEqual((error as? NetlinkError)?.kind, .malformed)
            XCTAssertEqual("\(error)", "fuzz: malformed netlink reply (error code -2147483648 is not an errno)")
        }
        let error = NetlinkMessage(type: NetlinkMessage.error, payload: hostBytes(Int32.min) + [UInt8](repeating: 0, count: 16))
        XCTAssertThrowsError(try error.decodeError(operation: "x"))
        // The most negative errno that can be negated still decodes.
        let lowest = NetlinkMessage(type: NetlinkMessage.error, payload: hostBytes(Int32.min + 1) + message(type: 1, sequence: 0, portID: 0))
        XCTAssertEqual(try lowest.decodeError(operation: "x").errno, Int32.max)
    }
}
