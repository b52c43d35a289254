import Foundation
import Glibc
import NetNamespace

/// `/proc` views of this process and of a namespace, for checks that the engine leaves nothing behind.

/// This process's open descriptors with what they point to (`3 -> socket:[1234]`).
func openDescriptors() -> Set<String> {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return Set(entries.compactMap { entry -> String? in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)") else { return nil }
        return "\(entry) -> \(target)"
    })
}

/// The descriptors among `descriptors` (as ``openDescriptors()`` lists them) that would survive an exec:
/// those without `O_CLOEXEC` in `/proc/self/fdinfo/N`.
func inheritableDescriptors(_ descriptors: Set<String>) -> [String] {
    descriptors.filter { entry in
        guard let number = entry.split(separator: " ").first,
            let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(number)", encoding: .utf8),
            let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
            let flags = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8)
        else { return false }
        return flags & 0o2_000_000 == 0
    }.sorted()
}

/// Names of this process's threads that belong to the engine (`lc-uplink`, `lc-downlink`, `lc-carrier`).
func engineThreads() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }.filter { $0 == "lc-uplink" || $0 == "lc-downlink" || $0 == "lc-carrier" }
}

/// The number of AF_PACKET sockets open in `namespace` (`/proc/net/packet` as a thread inside it sees it).
func packetSockets(in namespace: NamedNamespace) throws -> Int {
    let text = try namespace.run { try String(contentsOfFile: "/proc/thread-self/net/packet", encoding: .utf8) }
    return text.split(separator: "\n").count - 1
}

/// `/proc/net/snmp` of a namespace: counters by group (`Tcp`, `Udp`, `Ip`…) and name.
struct SNMPCounters {
    var all: [String: [String: Int]]

    subscript(group: String, name: String) -> Int { all[group]?[name] ?? 0 }

    static func read(in namespace: NamedNamespace) throws -> SNMPCounters {
        // /proc/net is /proc/self/net, the main thread's namespace; thread-self is the reading thread's.
        let text = try namespace.run { try String(contentsOfFile: "/proc/thread-self/net/snmp", encoding: .utf8) }
        var all: [String: [String: Int]] = [:]
        let lines = text.split(separator: "\n")
        var index = 0
        while index + 1 < lines.count {
            let names = lines[index].split(separator: " ")
            let values = lines[index + 1].split(separator: " ")
            if let group = names.first, group == values.first {
                var counters: [String: Int] = [:]
                for (name, value) in zip(names.dropFirst(), values.dropFirst()) { counters[String(name)] = Int(value) }
                all[String(group.dropLast())] = counters
            }
            index += 2
        }
        return SNMPCounters(all: all)
    }
}
