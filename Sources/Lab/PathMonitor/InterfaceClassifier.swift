import Glibc
import RouteNetlink

/// Decides an interface's ``InterfaceType`` from what can be known about it.
///
/// In order: loopback (flag or hardware type); sysfs (only when the monitor watches the process's own
/// namespace, since `/sys/class/net` shows that namespace): `wireless`/`phy80211` means wifi,
/// `DEVTYPE=wwan` means cellular; hardware types cellular modems use (raw IP, PPP — PPPoE and PPP VPNs
/// count too, override them by name); the name conventions (`wl*` wifi, `ww*`/`rmnet*`/`usb*`
/// cellular, `en*`/`eth*` wired); then a plain Ethernet
/// hardware type means wired, anything else `other`. Overrides by name come first of all.
public struct InterfaceClassifier: Sendable, Equatable {
    /// Types forced by interface name.
    public var overrides: [String: InterfaceType]
    /// Where sysfs is, or nil to not use it (a monitor of another namespace).
    public var sysfsRoot: String?

    public init(overrides: [String: InterfaceType] = [:], sysfsRoot: String? = nil) {
        self.overrides = overrides
        self.sysfsRoot = sysfsRoot
    }

    public func classify(_ link: Link) -> InterfaceType {
        if let forced = overrides[link.name] { return forced }
        if link.isLoopback || link.hardwareType == .loopback { return .loopback }
        if let root = sysfsRoot, let type = Self.sysfsType(root: root, name: link.name) { return type }
        if link.hardwareType == .rawIP || link.hardwareType == .ppp { return .cellular }
        if let type = Self.typeFromName(link.name) { return type }
        if link.hardwareType == .ether && link.kind == nil { return .wiredEthernet }
        return .other
    }

    /// The name conventions (systemd's predictable names and the older ones).
    public static func typeFromName(_ name: String) -> InterfaceType? {
        if name == "lo" { return .loopback }
        if name.hasPrefix("wl") || name.hasPrefix("wlan") { return .wifi }
        if name.hasPrefix("ww") || name.hasPrefix("wwan") || name.hasPrefix("rmnet") || name.hasPrefix("usb") { return .cellular }
        if name.hasPrefix("en") || name.hasPrefix("eth") { return .wiredEthernet }
        return nil
    }

    static func sysfsType(root: String, name: String) -> InterfaceType? {
        let base = "\(root)/class/net/\(name)"
        guard access(base, F_OK) == 0 else { return nil }
        if access("\(base)/wireless", F_OK) == 0 || access("\(base)/phy80211", F_OK) == 0 { return .wifi }
        if let file = fopen("\(base)/uevent", "r") {
            defer { fclose(file) }
            var line = [CChar](repeating: 0, count: 256)
            while fgets(&line, 256, file) != nil {
                let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if text.hasPrefix("DEVTYPE=") {
                    let devtype = text.dropFirst(8).trimmingWhitespace()
                    if devtype == "wwan" { return .cellular }
                    if devtype == "wlan" { return .wifi }
                }
            }
        }
        return nil
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        String(self.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
