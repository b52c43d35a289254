import JSONDocument
import LinkcondBase
import NetNamespace
import RouteNetlink

// An attachment's section of its state file (``SandboxState/attachment``): the target, the names linkcond
// gave, and the interface's configuration as the kernel reported it, field by field, so that detach can
// make it again exactly. Numbers are written as integers, bytes (a hardware address, a route's metrics) as
// hexadecimal text.

func fileNumber<T: BinaryInteger>(_ value: T) -> JSONValue {
    .number(JSONNumber(value: Double(value), literal: String(value)))
}

func fileHex(_ bytes: [UInt8]) -> JSONValue {
    .string(bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
}

extension FileObject {
    func optionalInteger<T: FixedWidthInteger>(_ key: String) throws(SandboxState.FileProblem) -> T? {
        guard let value = member(key), value != .null else { return nil }
        return try integer(key) as T
    }

    func hex(_ key: String) throws(SandboxState.FileProblem) -> [UInt8]? {
        guard let text = try optionalString(key) else { return nil }
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { throw bad(key) }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { throw bad(key) }
            bytes.append(byte)
        }
        return bytes
    }

    func address(_ key: String) throws(SandboxState.FileProblem) -> IPAddress? {
        guard let text = try optionalString(key) else { return nil }
        guard let address = IPAddress(text) else { throw bad(key) }
        return address
    }

    func prefix(_ key: String) throws(SandboxState.FileProblem) -> IPPrefix? {
        guard let text = try optionalString(key) else { return nil }
        guard let prefix = IPPrefix(text) else { throw bad(key) }
        return prefix
    }

    func object(_ key: String) throws(SandboxState.FileProblem) -> FileObject {
        guard let value = member(key), value != .null else { throw SandboxState.FileProblem(reason: "no '\(path)\(key)'") }
        return try FileObject(value, path: "\(path)\(key).")
    }

    func objects(_ key: String) throws(SandboxState.FileProblem) -> [FileObject] {
        try array(key).enumerated().map { (index, element) throws(SandboxState.FileProblem) in
            try FileObject(element, path: "\(path)\(key).\(index).")
        }
    }
}

/// Members with nil values left out, sorted by key.
private func members(_ list: [(String, JSONValue?)]) -> JSONValue {
    .object(list.compactMap { key, value in value.map { (key: key, value: $0) } }.sorted { $0.key < $1.key })
}

extension AttachmentRecord {
    var jsonValue: JSONValue {
        members([
            ("target", target.jsonValue), ("interface", .string(interface)), ("targetNamespace", .string(targetNamespace)),
            ("wireNamespace", .string(wireNamespace)), ("wireEnd", .string(wireEnd)), ("wireEndIndex", wireEndIndex.map(fileNumber)),
            ("join", .string(join.rawValue)), ("snapshot", snapshot?.jsonValue), ("restore", restore?.jsonValue), ("step", .string(step)),
            ("detaching", .bool(detaching)), ("linkDown", linkDown ? .bool(true) : nil),
        ])
    }

    init(file object: FileObject) throws(SandboxState.FileProblem) {
        guard let join = Join(rawValue: try object.string("join")) else { throw object.bad("join") }
        self.init(
            target: try Target(file: object.object("target")), interface: try object.string("interface"),
            targetNamespace: try object.string("targetNamespace"), wireNamespace: try object.string("wireNamespace"),
            wireEnd: try object.string("wireEnd"), join: join, step: try object.string("step"))
        if object.member("snapshot").map({ $0 != .null }) ?? false { snapshot = try InterfaceConfiguration(file: object.object("snapshot")) }
        wireEndIndex = try object.optionalInteger("wireEndIndex")
        if object.member("restore").map({ $0 != .null }) ?? false { restore = try InterfaceConfiguration(file: object.object("restore")) }
        detaching = try object.bool("detaching")
        if object.member("linkDown").map({ $0 != .null }) ?? false { linkDown = try object.bool("linkDown") }
    }
}

extension AttachmentRecord.Target {
    var jsonValue: JSONValue {
        members([
            ("request", .string(request)), ("description", .string(description)), ("path", .string(path)),
            ("device", fileNumber(identity.device)), ("inode", fileNumber(identity.inode)), ("pid", pid.map(fileNumber)),
            ("pidStartTime", pidStartTime.map(fileNumber)), ("runtime", runtime.map(JSONValue.string)), ("container", container.map(JSONValue.string)),
        ])
    }

    init(file object: FileObject) throws(SandboxState.FileProblem) {
        self.init(
            request: try object.string("request"), description: try object.string("description"), path: try object.string("path"),
            identity: NamespaceIdentity(device: try object.integer("device"), inode: try object.integer("inode")),
            pid: try object.optionalInteger("pid"), pidStartTime: try object.optionalInteger("pidStartTime"),
            runtime: try object.optionalString("runtime"), container: try object.optionalString("container"))
    }
}

extension InterfaceConfiguration {
    var jsonValue: JSONValue {
        members([
            ("link", members([
                ("index", fileNumber(link.index)), ("name", .string(link.name)), ("kind", link.kind.map(JSONValue.string)),
                ("flags", fileNumber(link.flags.rawValue)), ("mtu", fileNumber(link.mtu)), ("address", fileHex(link.hardwareAddress)),
                ("linkIndex", link.linkIndex.map(fileNumber)), ("linkNetnsID", link.linkNamespaceID.map(fileNumber)),
                ("txqlen", link.transmitQueueLength.map(fileNumber)),
            ])),
            ("addresses", .array(addresses.map(\.fileValue))), ("routes", .array(routes.map(\.fileValue))),
            ("sysctls", .object(sysctls.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })),
        ])
    }

    init(file object: FileObject) throws(SandboxState.FileProblem) {
        let record = try object.object("link")
        let link = Link(
            index: try record.integer("index"), name: try record.string("name"), kind: try record.optionalString("kind"),
            flags: LinkFlags(rawValue: try record.integer("flags")), mtu: try record.integer("mtu"), hardwareAddress: try record.hex("address") ?? [],
            linkIndex: try record.optionalInteger("linkIndex"), linkNamespaceID: try record.optionalInteger("linkNetnsID"),
            transmitQueueLength: try record.optionalInteger("txqlen"))
        var sysctls: [String: String] = [:]
        for (key, value) in try object.object("sysctls").members {
            guard case let .string(text) = value else { throw object.bad("sysctls") }
            sysctls[key] = text
        }
        self.init(
            link: link, addresses: try object.objects("addresses").map(InterfaceAddress.init(file:)),
            routes: try object.objects("routes").map(Route.init(file:)), sysctls: sysctls)
    }
}

extension InterfaceAddress {
    var fileValue: JSONValue {
        members([
            ("index", fileNumber(interfaceIndex)), ("prefix", .string(prefix.description)), ("scope", fileNumber(scope.rawValue)),
            ("flags", fileNumber(flags.rawValue)), ("peer", peer.map { .string($0.description) }), ("broadcast", broadcast.map { .string($0.description) }),
            ("label", label.map(JSONValue.string)), ("valid", fileNumber(validLifetime)), ("preferred", fileNumber(preferredLifetime)),
            ("metric", metric.map(fileNumber)),
        ])
    }

    init(file object: FileObject) throws(SandboxState.FileProblem) {
        guard let prefix = try object.prefix("prefix") else { throw object.bad("prefix") }
        self.init(
            interfaceIndex: try object.integer("index"), prefix: prefix, scope: RouteScope(rawValue: try object.integer("scope")),
            flags: AddressFlags(rawValue: try object.integer("flags")))
        peer = try object.address("peer")
        broadcast = try object.address("broadcast")
        label = try object.optionalString("label")
        validLifetime = try object.integer("valid")
        preferredLifetime = try object.integer("preferred")
        metric = try object.optionalInteger("metric")
    }
}

extension Route {
    var fileValue: JSONValue {
        members([
            ("family", fileNumber(family.rawValue)), ("destination", destination.map { .string($0.description) }),
            ("source", source.map { .string($0.description) }), ("gateway", gateway.map { .string($0.description) }),
            ("oif", outputInterface.map(fileNumber)), ("metric", metric.map(fileNumber)), ("table", fileNumber(table.rawValue)),
            ("type", fileNumber(type.rawValue)), ("scope", fileNumber(scope.rawValue)), ("protocol", fileNumber(routingProtocol.rawValue)),
            ("tos", fileNumber(typeOfService)), ("flags", fileNumber(flags)), ("prefsrc", preferredSource.map { .string($0.description) }),
            ("metrics", metrics.map(fileHex)), ("pref", preference.map(fileNumber)), ("expires", expires.map(fileNumber)),
        ])
    }

    init(file object: FileObject) throws(SandboxState.FileProblem) {
        self.init(
            family: AddressFamily(rawValue: try object.integer("family")), destination: try object.prefix("destination"),
            gateway: try object.address("gateway"), outputInterface: try object.optionalInteger("oif"), metric: try object.optionalInteger("metric"),
            table: RouteTable(rawValue: try object.integer("table")), type: RouteType(rawValue: try object.integer("type")),
            scope: RouteScope(rawValue: try object.integer("scope")), routingProtocol: RouteProtocol(rawValue: try object.integer("protocol")))
        source = try object.prefix("source")
        typeOfService = try object.integer("tos")
        flags = try object.integer("flags")
        preferredSource = try object.address("prefsrc")
        metrics = try object.hex("metrics")
        preference = try object.optionalInteger("pref")
        expires = try object.optionalInteger("expires")
    }
}
