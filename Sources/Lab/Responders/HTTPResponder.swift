import Glibc
import LinkcondSystem

/// An HTTP response to serialize.
struct HTTPResponse: Equatable, Sendable {
    var status: Int
    var reason: String
    var contentType: String?
    var body: [UInt8]
    var extraHeaders: [String] = []

    /// Status line and headers (always `Content-Length` and `Connection: close`), then the body unless
    /// `includeBody` is false (HEAD).
    func serialized(includeBody: Bool, date: String? = HTTPResponder.currentDate()) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        if let date { head += "Date: \(date)\r\n" }
        head += "Server: linkcond\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        head += "Content-Length: \(body.count)\r\n"
        head += "Cache-Control: no-cache, no-store, must-revalidate\r\n"
        for header in extraHeaders { head += header + "\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + (includeBody ? body : [])
    }
}

/// The HTTP probe endpoint: `/generate_204` (204, or a login page while the portal flag file exists),
/// `/` (a page naming linkcond), `/bytes/N` (N bytes, up to 16 MiB, for measuring a download rate), 404 for
/// other paths, 405 for methods other than GET and HEAD.
enum HTTPResponder {
    /// The most bytes `/bytes/N` sends.
    static let maximumDownload = 16 << 20

    /// How long a client has to send its request head (and each part of it): SO_RCVTIMEO.
    static let readTimeoutSeconds = 10

    static let homePage = """
        <!DOCTYPE html>
        <html><head><meta charset="utf-8"><title>linkcond</title></head>
        <body><h1>linkcond</h1><p>This is the linkcond sandbox server (network-condition lab).</p></body></html>

        """

    static let portalPage = """
        <!DOCTYPE html>
        <html><head><meta charset="utf-8"><title>linkcond portal: sign in</title></head>
        <body><h1>Sign in to the network</h1><p>linkcond captive portal.</p>
        <form method="post" action="/login"><input name="user"><button>Sign in</button></form></body></html>

        """

    /// The response to a parsed (or rejected) request head.
    static func response(to parsed: Result<HTTPRequestHead, HTTPParseError>, portalActive: Bool) -> HTTPResponse {
        let head: HTTPRequestHead
        switch parsed {
        case .success(let value): head = value
        case .failure(.headTooLarge): return plain(431, "Request Header Fields Too Large")
        case .failure(.unsupportedVersion): return plain(505, "HTTP Version Not Supported")
        case .failure: return plain(400, "Bad Request")
        }
        guard head.method == "GET" || head.method == "HEAD" else {
            var response = plain(405, "Method Not Allowed")
            response.extraHeaders = ["Allow: GET, HEAD"]
            return response
        }
        switch head.path {
        case nil:
            return plain(400, "Bad Request")
        case "/generate_204":
            if portalActive {
                return HTTPResponse(status: 200, reason: "OK", contentType: "text/html; charset=utf-8",
                                    body: Array(portalPage.utf8))
            }
            return HTTPResponse(status: 204, reason: "No Content", contentType: nil, body: [])
        case "/", "/index.html":
            return HTTPResponse(status: 200, reason: "OK", contentType: "text/html; charset=utf-8",
                                body: Array(homePage.utf8))
        case let path? where path.hasPrefix("/bytes/"):
            guard let count = Int(path.dropFirst(7)), count >= 0, count <= maximumDownload, !path.dropFirst(7).hasPrefix("+") else {
                return plain(404, "Not Found")
            }
            // A repeating printable pattern, so a corrupted byte is visible to a client that checks.
            let pattern = Array("linkcond".utf8)
            return HTTPResponse(status: 200, reason: "OK", contentType: "application/octet-stream",
                                body: (0..<count).map { pattern[$0 % pattern.count] })
        default:
            return plain(404, "Not Found")
        }
    }

    /// The wire bytes answering the raw request head `bytes` (HEAD gets no body).
    static func responseBytes(to bytes: [UInt8], portalActive: Bool) -> [UInt8] {
        let parsed = Result { () throws(HTTPParseError) -> HTTPRequestHead in try HTTPRequestHead.parse(bytes) }
        let isHead = (try? parsed.get())?.method == "HEAD"
        return response(to: parsed, portalActive: portalActive).serialized(includeBody: !isHead)
    }

    /// Whether the portal flag file exists now.
    static func portalActive(flagPath: String?) -> Bool {
        guard let flagPath else { return false }
        return access(flagPath, F_OK) == 0
    }

    /// Serves one connection: reads one request head (8 KiB cap, 10 s receive timeout), answers, closes
    /// the sending side. The caller closes the socket.
    static func serve(connection fd: SocketDescriptor, portalFlagPath: String?) {
        Sockets.setTimeouts(fd, seconds: readTimeoutSeconds)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1024)
        let response: [UInt8]
        while true {
            let searchFrom = max(0, buffer.count - 2)
            var chunk = [UInt8](repeating: 0, count: 4096)
            let received = chunk.withUnsafeMutableBytes { Sockets.receive(fd, into: $0) }
            let count = (try? received.get()) ?? -1
            if count <= 0 {
                let timedOut = received == .failure(.wouldBlock)
                // Nothing but blank lines yet: the client went away or never spoke; just close.
                guard buffer.contains(where: { $0 != 0x0D && $0 != 0x0A }) else { return }
                response = timedOut
                    ? plain(408, "Request Timeout").serialized(includeBody: true)
                    : plain(400, "Bad Request").serialized(includeBody: true)
                break
            }
            buffer.append(contentsOf: chunk[..<count])
            if let end = HTTPRequestHead.endOfHead(in: buffer, searchingFrom: searchFrom),
               end <= HTTPRequestHead.maximumSize {
                response = responseBytes(to: Array(buffer[..<end]),
                                         portalActive: portalActive(flagPath: portalFlagPath))
                break
            }
            if buffer.count >= HTTPRequestHead.maximumSize {
                response = plain(431, "Request Header Fields Too Large").serialized(includeBody: true)
                break
            }
        }
        if Sockets.sendAll(fd, response) {
            Sockets.lingeringShutdown(fd)
        }
    }

    /// The current time as an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`), independent of the locale.
    static func currentDate() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday) % 7]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon) % 12]) "
            + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    private static func plain(_ status: Int, _ reason: String) -> HTTPResponse {
        HTTPResponse(status: status, reason: reason, contentType: "text/plain; charset=utf-8",
                     body: Array("\(status) \(reason)\n".utf8))
    }
}
