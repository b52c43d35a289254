"""A small client of linkcond's control API (``linkcond api``), standard library only.

    from linkcond_client import Client

    lab = Client()                                   # the Unix socket, /run/linkcond/linkcond-api.sock
    lab.create_sandbox("lab")
    lab.apply("lab", "3g")                           # a catalog profile
    lab.apply("lab", delay="100ms", loss="1%")       # conditions inline, on both directions
    lab.apply("lab", "100-loss", duration="10s")     # then what was there comes back
    for event in lab.events("lab"):                  # path and reachability updates as they happen
        print(event["lane"], event["event"].get("state") or event["event"]["path"]["status"])
        break
    result = lab.run("lab", "tunnel")                # a scenario; result["reportDirectory"] has the reports
    lab.delete_sandbox("lab")

    lab.attach(netns="app", name="app")              # a namespace linkcond does not own (or pid=, container=)
    lab.apply_attachment("app", "edge")              # the same verbs on its spliced link
    lab.detach("app")                                # the target as it was

Every call returns the API's JSON document (the CLI's ``--json``); a refusal raises :class:`LinkcondError` with
the HTTP status and the sentence the CLI would print. The endpoints are described in ``api/openapi.yaml``.
"""

import http.client
import json
import os
import socket
import urllib.parse

__all__ = ["Client", "LinkcondError", "default_socket", "default_token_file"]

# The options a tcset or `tc … netem` user types, and the profile format's key each one sets.
_CONDITIONS = {
    "delay": "delay",
    "jitter": "jitter",
    "loss": "loss",
    "rate": "rate",
    "duplicate": "duplicate",
    "corrupt": "corrupt",
    "reorder": "reorder",
    "queue_limit": "queueLimit",
}


def _store():
    return os.environ.get("LINKCOND_STORE") or "/run/linkcond"


def default_socket():
    """Where ``linkcond api`` listens by default: ``$LINKCOND_STORE/linkcond-api.sock``."""
    return os.path.join(_store(), "linkcond-api.sock")


def default_token_file():
    """Where ``linkcond api --listen`` keeps the bearer token (mode 0600)."""
    return os.path.join(_store(), "linkcond-api.token")


def _apply_body(profile, downlink, uplink, direction, conditions):
    """The body of an apply: a profile, or the conditions on ``direction``, or whole directions."""
    unknown = sorted(set(conditions) - set(_CONDITIONS))
    if unknown:
        raise TypeError("unknown condition %s: expected one of %s" % (", ".join(unknown), ", ".join(_CONDITIONS)))
    if direction not in ("both", "downlink", "uplink"):
        raise ValueError("direction must be 'both', 'downlink' or 'uplink', not %r" % direction)
    body = {}
    if profile is not None:
        body["profile"] = profile
    given = {_CONDITIONS[key]: value for key, value in conditions.items()}
    if given:
        if direction in ("both", "downlink"):
            body["downlink"] = dict(given, **(downlink or {}))
        if direction in ("both", "uplink"):
            body["uplink"] = dict(given, **(uplink or {}))
    if downlink is not None and "downlink" not in body:
        body["downlink"] = downlink
    if uplink is not None and "uplink" not in body:
        body["uplink"] = uplink
    return body


def _run_body(scenario, report, observe, backend):
    body = {"scenario": scenario}
    for key, value in (("report", report), ("observe", observe), ("backend", backend)):
        if value is not None:
            body[key] = value
    return body


class LinkcondError(Exception):
    """A request the API refused: ``status`` is the HTTP status, ``message`` the API's sentence."""

    def __init__(self, status, message):
        super().__init__("%d: %s" % (status, message))
        self.status = status
        self.message = message


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a Unix stream socket."""

    def __init__(self, path, timeout):
        super().__init__("linkcond", timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Client:
    """A connection-per-request client of one ``linkcond api`` server.

    Without arguments it uses the Unix socket (root, no token). With ``url="http://127.0.0.1:8477"`` it uses the
    TCP endpoint and sends ``token`` (by default the one in :func:`default_token_file`). ``timeout`` is the
    seconds a request may take (a scenario run gets its own, longer one).
    """

    def __init__(self, socket_path=None, url=None, token=None, timeout=60.0):
        self.timeout = timeout
        self.url = url
        self.socket_path = None if url else (socket_path or default_socket())
        self.token = token
        if url and token is None and os.path.exists(default_token_file()):
            with open(default_token_file()) as file:
                self.token = file.read().strip()
        if url:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme != "http" or not parts.hostname:
                raise ValueError("url must look like http://127.0.0.1:8477, not %r" % url)
            self._host, self._port = parts.hostname, parts.port or 80

    # Transport

    def _connection(self, timeout):
        if self.url:
            return http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        return _UnixHTTPConnection(self.socket_path, timeout)

    def _send(self, method, path, body, timeout):
        connection = self._connection(timeout if timeout is not None else self.timeout)
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
        except (BrokenPipeError, ConnectionResetError):
            # The server answered before reading the request (503: as many connections as it takes) and
            # closed; its answer is still there to read.
            pass
        return connection, connection.getresponse()

    def request(self, method, path, body=None, timeout=None):
        """Sends one request; returns the answer's JSON, or raises :class:`LinkcondError`."""
        connection, response = self._send(method, path, body, timeout)
        try:
            text = response.read()
        finally:
            connection.close()
        document = json.loads(text) if text.strip() else None
        if response.status >= 400:
            message = document.get("error") if isinstance(document, dict) else text.decode(errors="replace")
            raise LinkcondError(response.status, message)
        return document

    @staticmethod
    def _name(name):
        return urllib.parse.quote(name, safe="")

    # Sandboxes

    def sandboxes(self):
        """Every sandbox, as ``linkcond status --json`` lists them."""
        return self.request("GET", "/v1/sandboxes")

    def create_sandbox(self, name="default", cellular=False, backend="auto"):
        """Brings a sandbox up (``linkcond up``); one up without cellular gets the link when asked."""
        return self.request("POST", "/v1/sandboxes", {"name": name, "cellular": cellular, "backend": backend})

    def delete_sandbox(self, name="default"):
        """Removes a sandbox (``linkcond down``)."""
        return self.request("DELETE", "/v1/sandboxes/" + self._name(name))

    def status(self, name="default"):
        """The sandbox's status (``linkcond status --name NAME --json``)."""
        return self.request("GET", "/v1/sandboxes/%s/status" % self._name(name))

    def show(self, name="default"):
        """The conditions held, read back (``linkcond show --json``)."""
        return self.request("GET", "/v1/sandboxes/%s/show" % self._name(name))

    # Conditions

    def apply(self, name="default", profile=None, *, downlink=None, uplink=None, direction="both", link=None,
              duration=None, backend=None, **conditions):
        """Puts conditions on the sandbox's links (``linkcond apply``), bringing it up when it is not.

        ``profile`` is a catalog name (``"3g"``), a path to a profile file on the server's machine, or a
        profile document (a dict). Or give the conditions: ``delay``, ``jitter``, ``loss``, ``rate``,
        ``duplicate``, ``corrupt``, ``reorder``, ``queue_limit`` (on ``direction``: ``"both"``,
        ``"downlink"`` or ``"uplink"``), or whole directions as dicts in the profile format (``downlink=``,
        ``uplink=``). ``link`` is ``"wl0"`` or ``"ww0"`` (default every link); ``duration`` (``"30s"``) keeps
        them that long, then puts back what was there.
        """
        body = _apply_body(profile, downlink, uplink, direction, conditions)
        for key, value in (("link", link), ("for", duration), ("backend", backend)):
            if value is not None:
                body[key] = value
        return self.request("POST", "/v1/sandboxes/%s/apply" % self._name(name), body)

    def clear(self, name="default", link=None):
        """Removes the conditions (``linkcond clear``), from every link or one."""
        return self.request("POST", "/v1/sandboxes/%s/clear" % self._name(name), {"link": link} if link else {})

    # Events and runs

    def events(self, name="default", probe=True, timeout=None):
        """Yields the sandbox's path and reachability updates as they happen (dicts: ``t``, ``lane``, ``event``),
        the latest of each first; ends when the stream does (the sandbox went away: a last ``{"lane": "stream",
        "end": …}``). Close the generator (or leave the loop) to leave: the server then stops sending."""
        return self._stream("/v1/sandboxes/%s/events%s" % (self._name(name), "" if probe else "?probe=false"), timeout)

    def _stream(self, path, timeout):
        connection, response = self._send("GET", path, None, timeout)
        try:
            if response.status >= 400:
                document = json.loads(response.read() or b"{}")
                raise LinkcondError(response.status, document.get("error", ""))
            while True:
                line = response.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            response.close()
            connection.close()

    def run(self, name, scenario, report=None, observe=None, backend=None, timeout=900.0):
        """Runs a scenario in the sandbox (``linkcond run SCENARIO --name NAME``) and returns when it is over:
        ``passed``, ``expectations``, ``errors`` and ``reportDirectory`` (events.jsonl, timeline.html,
        junit.xml, timeline.json, summary.md). ``scenario`` is a shipped scenario's name, a path on the server's
        machine, or a scenario document (a dict)."""
        return self.request("POST", "/v1/sandboxes/%s/run" % self._name(name), _run_body(scenario, report, observe, backend),
                            timeout=timeout)

    # Attachments: linkcond spliced into a namespace it does not own (a container's, one a test made)

    def attachments(self):
        """Every attachment, as ``linkcond status --json`` lists them (``"kind": "attachment"``)."""
        return self.request("GET", "/v1/attachments")

    def attach(self, netns=None, netns_path=None, pid=None, container=None, name=None, dev=None, backend=None):
        """Attaches to exactly one target (``linkcond attach --netns|--netns-path|--pid|--container``): its
        ``dev`` (default the interface of its default route) gets a stand-in and linkcond's wire; ``name``
        defaults to one derived from the target. Returns the attachment's status."""
        body = {}
        for key, value in (("netns", netns), ("netnsPath", netns_path), ("pid", pid), ("container", container), ("name", name),
                           ("dev", dev), ("backend", backend)):
            if value is not None:
                body[key] = value
        return self.request("POST", "/v1/attachments", body)

    def detach(self, name):
        """Detaches (``linkcond detach --name NAME``): the target as it was before."""
        return self.request("DELETE", "/v1/attachments/" + self._name(name))

    def attachment(self, name):
        """The attachment's status (``linkcond status --name NAME --json``)."""
        return self.request("GET", "/v1/attachments/%s/status" % self._name(name))

    def show_attachment(self, name):
        """The attachment's conditions, read back (``linkcond show --name NAME --json``)."""
        return self.request("GET", "/v1/attachments/%s/show" % self._name(name))

    def apply_attachment(self, name, profile=None, *, downlink=None, uplink=None, direction="both", duration=None, backend=None,
                         **conditions):
        """Puts conditions on the attachment's spliced link (``linkcond apply … --name NAME``), given as for
        :meth:`apply` (an attachment has one link: no ``link``); ``duration`` (``"30s"``) keeps them that long,
        then puts back what was there."""
        body = _apply_body(profile, downlink, uplink, direction, conditions)
        for key, value in (("for", duration), ("backend", backend)):
            if value is not None:
                body[key] = value
        return self.request("POST", "/v1/attachments/%s/apply" % self._name(name), body)

    def clear_attachment(self, name):
        """Removes the attachment's conditions (``linkcond clear --name NAME``); it stays attached."""
        return self.request("POST", "/v1/attachments/%s/clear" % self._name(name), {})

    def attachment_events(self, name, timeout=None):
        """Yields the path as seen inside the attachment's target, as :meth:`events` does (no prober); the stream
        ends when the attachment is detached."""
        return self._stream("/v1/attachments/%s/events" % self._name(name), timeout)

    def run_on_attachment(self, name, scenario, report=None, observe=None, backend=None, timeout=900.0):
        """Runs a scenario on the attachment (``linkcond run SCENARIO --name NAME``), as :meth:`run` does; one that
        needs a sandbox (its links, its server) is refused (409) before anything is made."""
        return self.request("POST", "/v1/attachments/%s/run" % self._name(name), _run_body(scenario, report, observe, backend),
                            timeout=timeout)

    # Catalogs

    def profiles(self):
        """The profile catalog, each profile as its document."""
        return self.request("GET", "/v1/profiles")

    def profile(self, name):
        """One profile as its document (``linkcond profiles show NAME``)."""
        return self.request("GET", "/v1/profiles/" + self._name(name))

    def scenarios(self):
        """The shipped scenarios, each as its document."""
        return self.request("GET", "/v1/scenarios")
