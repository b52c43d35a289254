import Foundation

extension LinkLab {
    /// Starts the monitor and the prober, and applies the options' profile; when that fails the failure goes
    /// into the reports and the lab is closed.
    func started() throws {
        do {
            try start()
            if let profile = options.profile { try apply(profile) }
        } catch {
            recordFailure(error)
            close()
            throw error
        }
    }

    /// The options' report folder, or a temporary one, made if it is not there.
    static func makeReportDirectory(_ options: Options) throws -> String {
        let directory = try options.reportDirectory ?? makeTemporaryDirectory()
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw LabError.reportDirectory(path: directory, detail: error.localizedDescription)
        }
        return directory
    }
}
