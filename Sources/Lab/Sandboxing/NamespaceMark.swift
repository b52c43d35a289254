import Netlink
import NetNamespace
import RouteNetlink

/// The proof that a named namespace is the one linkcond made for a sandbox or an attachment's wire: the
/// alias of its loopback device (`ip -n NS link set dev lo alias 'linkcond STORE/NAME'`), written inside
/// the new namespace *before* it gets its name, so a namespace of linkcond's carries it from the first
/// instant its name exists.
///
/// A name proves nothing: two stores (a test's and the user's) or another tool can hold a sandbox of the
/// same name, and `ip netns add` makes any name. `up` refuses a namespace of its names that another owns,
/// and `down`/`detach` delete only those that carry this store's and this sandbox's mark.
public enum NamespaceMark {
    /// Who a namespace of a sandbox's names belongs to.
    public enum Owner: Sendable, Equatable {
        /// Nothing by that name, or a plain file a crash left before a namespace was mounted on it.
        case nothing
        /// This sandbox of this store: its mark.
        case ours
        /// Another sandbox or store; the mark it carries.
        case other(mark: String)
        /// A namespace without a mark of linkcond's (made by hand or by another tool), or one that cannot
        /// be read.
        case unmarked

        /// True when linkcond may remove what is there under the name.
        public var isRemovable: Bool { self == .nothing || self == .ours }
    }

    /// The kernel keeps at most this many bytes of an alias (`IFALIASZ - 1`).
    static let longestAlias = 255
    /// What every mark begins with.
    static let prefix = "linkcond "

    /// The mark for `marker` (``RecordedProcess/marker(store:sandbox:)``): `linkcond STORE/NAME`, or, for a
    /// store path too long for an alias, `linkcond #` and a 64-bit FNV-1a digest of it.
    public static func text(for marker: String) -> String {
        let plain = prefix + marker
        if plain.utf8.count <= longestAlias { return plain }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in marker.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return prefix + "#" + String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Creates the namespace `name` marked for `marker`. Equivalent to `ip netns add NAME` followed by
    /// `ip -n NAME link set dev lo alias 'linkcond MARKER'`, the alias set before the name exists.
    public static func create(_ name: String, marker: String) throws(NamespaceError) -> NamedNamespace {
        let mark = text(for: marker)
        return try NamedNamespace.create(name) {
            // On the namespace's own thread: a connection opened here is in the new namespace.
            let client = RouteNetlinkClient(connection: try NetlinkConnection(), namespace: name)
            try client.setAlias(mark, on: "lo")
        }
    }

    /// Who the namespace called `name` belongs to, judged against `marker`.
    public static func owner(of name: String, marker: String) -> Owner {
        owners(of: [name], marker: marker)[0]
    }

    /// Who each of the namespaces called `names` belongs to, judged against `marker`; their connections are
    /// opened from one thread (``NamedNamespace/openNetlinkConnections(_:)``).
    public static func owners(of names: [String], marker: String) -> [Owner] {
        let namespaces = names.map { name in (try? NamedNamespace(existing: name)).flatMap { $0.isMounted ? $0 : nil } }
        let present = namespaces.compactMap { $0 }
        var connections = (present.isEmpty ? [] : NamedNamespace.openNetlinkConnections(present)).makeIterator()
        let mark = text(for: marker)
        return namespaces.map { namespace in
            guard let namespace else { return .nothing }
            guard let connection = connections.next() ?? nil,
                let alias = try? RouteNetlinkClient(connection: connection, namespace: namespace.name).link(named: "lo").alias,
                alias.hasPrefix(prefix)
            else { return .unmarked }
            return alias == mark ? .ours : .other(mark: alias)
        }
    }

    /// Whose a namespace is, to be said after "it is": `linkcond's sandbox 'NAME' of the store DIR
    /// (LINKCOND_STORE=DIR)`, or `a namespace linkcond did not make (…)`.
    public static func whose(_ owner: Owner) -> String {
        switch owner {
        case .nothing: return "nothing"
        case .ours: return "this sandbox's"
        case let .other(mark):
            let whose = String(mark.dropFirst(prefix.count))
            guard let slash = whose.lastIndex(of: "/") else { return "another sandbox of linkcond's (marked '\(mark)')" }
            let store = whose[..<slash]
            return "linkcond's sandbox '\(whose[whose.index(after: slash)...])' of the store \(store) (LINKCOND_STORE=\(store))"
        case .unmarked:
            return "a namespace linkcond did not make (its lo carries no mark of linkcond's)"
        }
    }

    /// `names` that are not the sandbox's, grouped by owner: `NAME, NAME: WHOSE; NAME: WHOSE`.
    public static func describe(_ foreign: [(name: String, owner: Owner)]) -> String {
        var groups: [(owner: Owner, names: [String])] = []
        for (name, owner) in foreign {
            if let index = groups.firstIndex(where: { $0.owner == owner }) { groups[index].names.append(name) } else { groups.append((owner, [name])) }
        }
        return groups.map { "\($0.names.joined(separator: ", ")): \(whose($0.owner))" }.joined(separator: "; ")
    }
}
