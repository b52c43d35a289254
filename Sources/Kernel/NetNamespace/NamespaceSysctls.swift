import Glibc
import LinkcondSystem

/// Many sysctls of one namespace read or written from one thread that joined it: an interface's own
/// settings (`net/ipv4/conf/IFACE/*`, `net/ipv6/conf/IFACE/*`, `net/ipv4/neigh/IFACE/*`…), which
/// `/proc/sys/net` shows for the namespace of the thread that opens them.
extension NamedNamespace {
    /// The value of every readable file under each of `directories` (paths below `/proc/sys`, such as
    /// `net/ipv4/conf/eth0`), by path below `/proc/sys` (`net/ipv4/conf/eth0/forwarding`), without the
    /// trailing newline. A directory that does not exist gives nothing; a file that cannot be read (a
    /// write-only one, `stable_secret` before it is set) is left out. Equivalent to
    /// `ip netns exec NAME sysctl net.ipv4.conf.eth0 …`.
    public func readSysctls(under directories: [String]) throws(NamespaceError) -> [String: String] {
        do {
            return try run { () -> [String: String] in
                var values: [String: String] = [:]
                for directory in directories {
                    guard let listing = opendir("/proc/sys/\(directory)") else { continue }
                    defer { closedir(listing) }
                    while let entry = readdir(listing) {
                        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                        guard name != ".", name != "..", entry.pointee.d_type == UInt8(DT_REG) else { continue }
                        let key = "\(directory)/\(name)"
                        guard let file = try? FileDescriptor.open("/proc/sys/\(key)", .readOnly),
                            let bytes = file.closeAfter({ try? file.readToEnd(maximumCount: 4096) })
                        else { continue }
                        var text = String(decoding: bytes, as: UTF8.self)
                        while text.hasSuffix("\n") { text.removeLast() }
                        values[key] = text
                    }
                }
                return values
            }
        } catch let error as NamespaceError {
            throw error
        } catch {
            throw .system(operation: "read sysctls in \(name)", errno: EIO)
        }
    }

    /// Writes each value to its file below `/proc/sys` (`net/ipv6/conf/eth0/accept_dad` = `0`), in order,
    /// all from one thread in the namespace; returns the keys that could not be written with their errno
    /// (the others are written whatever one of them does). Equivalent to
    /// `ip netns exec NAME sysctl -w KEY=VALUE …`.
    @discardableResult
    public func writeSysctls(_ values: [(key: String, value: String)]) throws(NamespaceError) -> [(key: String, errno: Int32)] {
        do {
            return try run { () -> [(key: String, errno: Int32)] in
                var failures: [(key: String, errno: Int32)] = []
                for (key, value) in values {
                    do throws(SystemError) {
                        let file = try FileDescriptor.open("/proc/sys/\(key)", .writeOnly)
                        try file.closeAfter { () throws(SystemError) in try file.writeAll(value.utf8) }
                    } catch {
                        failures.append((key, error.errno.rawValue))
                    }
                }
                return failures
            }
        } catch let error as NamespaceError {
            throw error
        } catch {
            throw .system(operation: "write sysctls in \(name)", errno: EIO)
        }
    }
}
