import Foundation

extension LinkLab {
    /// Runs `body` with a lab and always closes it (removing a sandbox it made), even when `body` throws.
    public static func with<T>(_ options: Options = Options(), _ body: (LinkLab) async throws -> T) async throws -> T {
        let lab = try open(options)
        do {
            let result = try await body(lab)
            lab.close()
            return result
        } catch {
            lab.close()
            throw error
        }
    }

    /// Starts the monitor and the prober, and applies the options' profile; closes the lab when that fails.
    func started() throws {
        do {
            try start()
            if let profile = options.profile { try apply(profile) }
        } catch {
            close()
            throw error
        }
    }

    static func makeReportDirectory(_ options: Options) throws -> String {
        let directory = try options.reportDirectory ?? makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }
}
