import Profiles
import Timeline

extension LinkLab {
    /// What the conditions lane records of a profile: its name, its targets and its traces' rates.
    static func details(of profile: Profile) -> [String: TimelineValue] {
        var details: [String: TimelineValue] = ["profile": .string(profile.name)]
        if !profile.targets.isEmpty {
            details[TimelineDetail.targets] = .string(profile.targets.map(\.description).joined(separator: "; "))
        }
        for (trace, meanKey, ratesKey) in [
            (profile.uplink.trace, TimelineDetail.traceUplinkMeanBps, TimelineDetail.traceUplinkRates),
            (profile.downlink.trace, TimelineDetail.traceDownlinkMeanBps, TimelineDetail.traceDownlinkRates),
        ] {
            guard let summary = trace?.summary else { continue }
            details[meanKey] = .number(summary.meanRate)
            details[ratesKey] = .string(summary.perSecondRates.map { String(Int64($0.rounded())) }.joined(separator: ","))
        }
        return details
    }
}
