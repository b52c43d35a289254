import Conditioning

/// `linkcond doctor`: which kernel features are there, in the kernel's words.
enum DoctorCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let features = try KernelDoctor.check()
        if parsed.flag("json") {
            try Output.json(features)
            return 0
        }
        for feature in features {
            Output.print("\(feature.present ? "ok     " : "MISSING") \(feature.name.padding(toLength: 11, withPad: " ", startingAt: 0)) \(feature.purpose)")
            if !feature.present {
                Output.print("        kernel: \(feature.detail)")
                if let remedy = feature.remedy { Output.print("        fix: \(remedy)") }
            }
        }
        let missing = features.filter { !$0.present }.map(\.name)
        Output.print(missing.isEmpty ? "everything linkcond uses is available" : "missing: \(missing.joined(separator: ", "))")
        return 0
    }
}
