import Conditioning
import JSONDocument
import Sandboxing

/// The bodies the attachment endpoints take, read as strictly as ``APIBodies``.
enum AttachmentBodies {
    /// What `POST /v1/attachments` asks for: the target (exactly one of `netns`, `netnsPath`, `pid`,
    /// `container`, as `attach --netns/--netns-path/--pid/--container`), and optionally `name`, `dev`, `backend`.
    struct Attach {
        var target: AttachmentTarget
        var name: String?
        var interface: String?
        var backend: BackendChoice
    }

    static let attachExpectation =
        "{\"netns\": \"app\"}, {\"netnsPath\": \"/proc/4242/ns/net\"}, {\"pid\": 4242} or {\"container\": \"web\"}, each with \"name\", \"dev\" and \"backend\" if wanted"

    static func attach(_ request: APIRequest) throws(DocumentError) -> Attach {
        let document = try APIBodies.object(request)
        let fields = try document.root.fields(["netns", "netnsPath", "pid", "container", "name", "dev", "backend"], expected: attachExpectation)
        var targets: [(key: String, target: AttachmentTarget)] = []
        if let element = fields["netns"] { targets.append(("netns", .namespace(try element.string(expected: "a namespace name as 'ip netns list' shows it")))) }
        if let element = fields["netnsPath"] { targets.append(("netnsPath", .namespacePath(try element.string(expected: "a path such as /proc/4242/ns/net")))) }
        if let element = fields["pid"] {
            let pid = try element.integer(Int32.self, expected: "a process id, such as 4242")
            guard pid > 0 else { throw element.error("\(pid) is not a process id", expected: "a positive number, such as 4242", kind: .outOfRange) }
            targets.append(("pid", .process(pid)))
        }
        if let element = fields["container"] { targets.append(("container", .container(try element.string(expected: "a container's name or id")))) }
        guard let first = targets.first else {
            throw document.root.error("the request names no target", expected: attachExpectation, kind: .missingKey)
        }
        if targets.count > 1, let element = fields[targets[1].key] {
            throw element.error(
                "\(JSONWriter.quoted(targets[1].key)) cannot be combined with \(JSONWriter.quoted(first.key))", expected: "one target", kind: .conflict)
        }
        return Attach(
            target: first.target, name: try fields["name"]?.string(expected: "an attachment name such as \"web\""),
            interface: try fields["dev"]?.string(expected: "an interface of the target, such as \"eth0\""), backend: try APIBodies.backend(fields["backend"]))
    }
}
