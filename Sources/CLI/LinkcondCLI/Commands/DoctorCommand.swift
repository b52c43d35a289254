import Conditioning

/// `linkcond doctor`: which kernel features are there, in the kernel's words, and which backend works.
enum DoctorCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let features = try KernelDoctor.check()
        let backends = KernelDoctor.backends(from: features)
        let asked = SandboxCommands.backendChoice(parsed)
        let works = backends.first { $0.choice == asked }?.works ?? false
        if parsed.flag("json") {
            struct Backend: Encodable { let choice: String; let works: Bool; let detail: String }
            struct Report: Encodable { let features: [KernelFeature]; let backends: [Backend]; let asked: String; let works: Bool }
            try Output.json(Report(
                features: features, backends: backends.map { Backend(choice: $0.choice.rawValue, works: $0.works, detail: $0.detail) },
                asked: asked.rawValue, works: works))
            return works ? 0 : 1
        }
        for feature in features {
            Output.print("\(feature.present ? "ok     " : "MISSING") \(feature.name.padding(toLength: 11, withPad: " ", startingAt: 0)) \(feature.purpose)")
            if !feature.present {
                Output.print("        kernel: \(feature.detail)")
                if let remedy = feature.remedy { Output.print("        fix: \(remedy)") }
            }
        }
        let missing = features.filter { !$0.present }.map(\.name)
        Output.print(missing.isEmpty ? "every kernel feature linkcond uses is available" : "missing: \(missing.joined(separator: ", "))")
        for backend in backends {
            Output.print("backend \(backend.choice.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(backend.works ? "works" : "cannot work"): \(backend.detail)")
        }
        if !works { Output.error("the \(asked.rawValue) backend cannot work on this kernel (see above)") }
        return works ? 0 : 1
    }
}
