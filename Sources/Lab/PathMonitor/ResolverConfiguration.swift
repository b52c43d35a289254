import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// The parts of a resolv.conf (resolv.conf(5)) the prober uses: nameservers and search domains.
public struct ResolverConfiguration: Sendable, Equatable {
    /// The `nameserver` addresses, in file order (a `%zone` suffix is dropped; lines that are not IP
    /// literals are skipped, as glibc skips them).
    public var nameservers: [IPAddress]
    /// The last `search` (or `domain`) line's domains.
    public var searchDomains: [String]

    public init(nameservers: [IPAddress] = [], searchDomains: [String] = []) {
        self.nameservers = nameservers
        self.searchDomains = searchDomains
    }

    /// The nameservers glibc uses when the file names none: the local machine.
    public static let defaultNameservers = [IPAddress("127.0.0.1")!]

    /// Parses resolv.conf text. Comments start with `#` or `;`; keywords must start a line.
    public init(parsing text: String) {
        self.init()
        // isNewline, not == "\n": "\r\n" is a single Character.
        for line in text.split(whereSeparator: \.isNewline) {
            guard let first = line.first, first != "#", first != ";" else { continue }
            let content = line.split(whereSeparator: { $0 == "#" || $0 == ";" }).first ?? line[...]
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let keyword = words.first else { continue }
            switch keyword {
            case "nameserver":
                if words.count >= 2, let address = IPAddress(String(words[1].split(separator: "%")[0])) {
                    nameservers.append(address)
                }
            case "search", "domain":
                searchDomains = Array(words.dropFirst())
            default:
                break
            }
        }
    }

    /// Where a process in `namespace` finds its resolv.conf: `/etc/netns/NAME/resolv.conf` when that file
    /// exists (`ip netns exec` bind-mounts it over `/etc/resolv.conf`), `/etc/resolv.conf` otherwise or for
    /// the host (`nil`).
    public static func path(for namespace: NamedNamespace?) -> String {
        if let namespace {
            let own = "\(namespace.etcPath)/resolv.conf"
            if access(own, F_OK) == 0 { return own }
        }
        return "/etc/resolv.conf"
    }

    /// The configuration a process in `namespace` sees; empty when the file cannot be read.
    public static func load(for namespace: NamedNamespace?) -> ResolverConfiguration {
        load(path: path(for: namespace))
    }

    /// The configuration in the file at `path`; empty when it cannot be read.
    public static func load(path: String) -> ResolverConfiguration {
        guard let file = fopen(path, "r") else { return ResolverConfiguration() }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // resolv.conf is small; 64 KiB is more than any real one.
        while bytes.count < 65536 {
            let count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return ResolverConfiguration(parsing: String(decoding: bytes, as: UTF8.self))
    }

    /// ``nameservers``, or ``defaultNameservers`` when there are none.
    public var effectiveNameservers: [IPAddress] {
        nameservers.isEmpty ? Self.defaultNameservers : nameservers
    }
}
