import Glibc

/// An HTTP/1.x response as the probe reads it: status line, header fields, and at most
/// ``HTTPProbe/maximumBodySize`` bytes of body.
struct HTTPProbeResponse: Sendable, Equatable {
    struct Field: Sendable, Equatable {
        var name: String
        var value: String
    }

    /// `HTTP/1.1` or `HTTP/1.0`.
    var version: String
    var status: Int
    var reason: String
    var headers: [Field]
    var body: [UInt8]

    /// The first field called `name` (case-insensitive).
    func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }
}

/// What the bytes read so far make.
enum HTTPProbeParse: Equatable {
    /// More bytes are needed.
    case incomplete
    /// A whole response (the body cut at ``HTTPProbe/maximumBodySize``).
    case complete(HTTPProbeResponse)
    /// Not an HTTP response.
    case invalid(String)
}

/// The prober's tiny HTTP/1.1 client: one `GET` with `Connection: close`, one response read with a deadline.
enum HTTPProbe {
    /// Longest response head accepted.
    static let maximumHeadSize = 16384
    /// Most body bytes read: a login page's start is enough to tell a portal.
    static let maximumBodySize = 4096

    /// `GET path HTTP/1.1` with `Host` (the port added when it is not 80, IPv6 literals bracketed),
    /// `Connection: close` and no body.
    static func request(host: String, path: String, port: UInt16) -> [UInt8] {
        var authority = host.contains(":") ? "[\(host)]" : host
        if port != 80 { authority += ":\(port)" }
        let target = path.hasPrefix("/") ? path : "/" + path
        return Array(
            ("GET \(target) HTTP/1.1\r\nHost: \(authority)\r\nUser-Agent: linkcond-prober\r\nAccept: */*\r\n"
                + "Cache-Control: no-cache\r\nConnection: close\r\n\r\n").utf8)
    }

    /// Parses the bytes read so far. `atEndOfStream`: the peer closed (or time is up), so what is there is
    /// all there will be: a complete head with a short body is then a complete response.
    /// Interim 1xx responses (other than 101) are skipped.
    static func parse(_ bytes: [UInt8], atEndOfStream: Bool) -> HTTPProbeParse {
        var start = 0
        while true {
            guard let (headEnd, bodyStart) = endOfHead(bytes, from: start) else {
                if bytes.count - start > maximumHeadSize {
                    return .invalid("response head longer than \(maximumHeadSize) bytes")
                }
                guard atEndOfStream else { return .incomplete }
                return .invalid(start == bytes.count ? "connection closed without a response" : "connection closed inside the response head")
            }
            guard headEnd - start <= maximumHeadSize else { return .invalid("response head longer than \(maximumHeadSize) bytes") }
            // "\r\n" is one Character in Swift: split on it and on a bare "\n". The head ends before the
            // last line's "\n", so that line may keep its "\r".
            let lines = String(decoding: bytes[start..<headEnd], as: UTF8.self)
                .split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
                .map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
            guard let statusLine = lines.first, let (version, status, reason) = parseStatusLine(statusLine) else {
                return .invalid("not an HTTP status line: '\(lines.first.map { String($0.prefix(80)) } ?? "")'")
            }
            if (100..<200).contains(status) && status != 101 {
                start = bodyStart
                continue
            }
            var headers: [HTTPProbeResponse.Field] = []
            for line in lines.dropFirst() where !line.isEmpty {
                if line.first == " " || line.first == "\t", !headers.isEmpty {
                    // obs-fold: a continuation of the previous field's value.
                    headers[headers.count - 1].value += " " + line.trimmingSpaces()
                    continue
                }
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                      !line[..<colon].contains(where: { $0 == " " || $0 == "\t" })
                else { return .invalid("malformed header field: '\(line.prefix(80))'") }
                headers.append(.init(name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingSpaces()))
            }
            var response = HTTPProbeResponse(version: version, status: status, reason: reason, headers: headers, body: [])
            let available = bytes[bodyStart...]
            if (100..<200).contains(status) || status == 204 || status == 304 {
                return .complete(response)
            }
            if let encoding = response.header("transfer-encoding"), encoding.lowercased().contains("chunked") {
                let done = atEndOfStream || available.count >= maximumBodySize || available.ends(with: Array("0\r\n\r\n".utf8))
                guard done else { return .incomplete }
                response.body = Array(available.prefix(maximumBodySize))
                return .complete(response)
            }
            if let length = response.header("content-length") {
                guard let expected = Int(length), expected >= 0 else { return .invalid("bad Content-Length '\(length)'") }
                let wanted = min(expected, maximumBodySize)
                guard available.count >= wanted || atEndOfStream else { return .incomplete }
                response.body = Array(available.prefix(wanted))
                return .complete(response)
            }
            guard atEndOfStream || available.count >= maximumBodySize else { return .incomplete }
            response.body = Array(available.prefix(maximumBodySize))
            return .complete(response)
        }
    }

    /// `HTTP/1.x SP 3DIGIT [SP reason]`.
    static func parseStatusLine(_ line: Substring) -> (version: String, status: Int, reason: String)? {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].count == 8, parts[0].hasPrefix("HTTP/1."), parts[0].last?.isASCII == true,
              parts[0].last?.isNumber == true, parts[1].count == 3, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
              let status = Int(parts[1]), (100...599).contains(status)
        else { return nil }
        return (String(parts[0]), status, parts.count > 2 ? String(parts[2]) : "")
    }

    /// Where the head ends (the index of its blank line) and the body starts; CRLF or bare LF line ends.
    private static func endOfHead(_ bytes: [UInt8], from start: Int) -> (headEnd: Int, bodyStart: Int)? {
        var index = start
        while index < bytes.count {
            if bytes[index] == 0x0A {
                if index + 1 < bytes.count && bytes[index + 1] == 0x0A { return (index, index + 2) }
                if index + 2 < bytes.count && bytes[index + 1] == 0x0D && bytes[index + 2] == 0x0A { return (index, index + 3) }
            }
            index += 1
        }
        return nil
    }

    /// Sends `request` on a connected socket and reads the response until it is complete, the peer closes,
    /// or `deadline` (monotonic seconds) passes; a head read by the deadline still counts.
    /// Returns the response and the seconds from sending to reading it.
    static func exchange(
        on socket: ProbeSocket, request: [UInt8], deadline: Double, timeout: Double, isCancelled: () -> Bool
    ) -> Result<(HTTPProbeResponse, Double), ProbeFailure> {
        let started = ProbeClock.now()
        var sent = 0
        var received: [UInt8] = []
        while true {
            if isCancelled() { return .failure(.cancelled) }
            let now = ProbeClock.now()
            if now >= deadline {
                if case .complete(let response) = parse(received, atEndOfStream: true) { return .success((response, now - started)) }
                return .failure(.timedOut(after: timeout))
            }
            let writing = sent < request.count
            let events = ProbeClock.wait([(socket.fd, Int16(writing ? POLLOUT : POLLIN))], until: deadline)
            guard let revents = events.first, revents != 0 else { continue }
            if writing {
                switch socket.send(request[sent...]) {
                case .failure(let failure): return .failure(failure)
                case .success(let count): sent += count
                }
                continue
            }
            while let chunk = socket.receive() {
                switch chunk {
                case .failure(let failure):
                    if case .complete(let response) = parse(received, atEndOfStream: true) {
                        return .success((response, ProbeClock.now() - started))
                    }
                    return .failure(failure)
                case .success(let bytes):
                    received += bytes
                    switch parse(received, atEndOfStream: bytes.isEmpty) {
                    case .incomplete:
                        break  // never at end of stream: parse then says complete or invalid
                    case .complete(let response):
                        return .success((response, ProbeClock.now() - started))
                    case .invalid(let text):
                        return .failure(ProbeFailure(text: text))
                    }
                }
            }
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

extension ArraySlice where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self.suffix(suffix.count)) == suffix
    }
}
