"""The Python client against a real `linkcond api` (see conftest.py): every endpoint, its documents and refusals."""

import ast
import os
import socket
import sys
import time

import pytest

from linkcond_client import Client, LinkcondError


def wifi_profile(client, name):
    link = client.show(name)["links"]["wifi"]
    return link and link["profile"]


def engine_text(client, name, direction="uplink"):
    for site in client.show(name)["sites"]:
        if site["direction"] == direction and site["link"] == "wifi":
            return site["stages"][0].get("text", "")
    return ""


def test_the_module_uses_the_standard_library_alone():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "linkcond_client.py")
    tree = ast.parse(open(path).read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_catalogs(client):
    names = {profile["name"] for profile in client.profiles()}
    assert {"edge", "3g", "lte", "100-loss"} <= names
    assert client.profile("edge")["downlink"] == {"rate": "240kbit", "delay": "400ms", "queue": "1600ms"}
    assert {scenario["name"] for scenario in client.scenarios()} >= {"tunnel", "handover"}
    with pytest.raises(LinkcondError) as refused:
        client.profile("egde")
    assert refused.value.status == 404
    assert 'did you mean "edge"?' in refused.value.message


def test_a_sandbox_comes_and_goes(client, sandbox_name):
    created = client.create_sandbox(sandbox_name)
    assert created["name"] == sandbox_name and created["healthy"] is True
    assert sandbox_name in [entry["name"] for entry in client.sandboxes()]
    assert client.status(sandbox_name)["conditions"] == [{"link": "wifi"}]
    removed = client.delete_sandbox(sandbox_name)
    assert removed["removed"] == sandbox_name and removed["removedNamespaces"]
    with pytest.raises(LinkcondError) as gone:
        client.status(sandbox_name)
    assert gone.value.status == 404
    assert gone.value.message == "sandbox '%s' is not up; start it with 'linkcond up --name %s'" % (sandbox_name, sandbox_name)


def test_conditions_in_every_form(client, sandbox_name):
    applied = client.apply(sandbox_name, "edge")  # brings the sandbox up
    assert applied["created"] is True and applied["profile"] == "edge"
    assert wifi_profile(client, sandbox_name) == "edge"
    assert "rate 200kbit delay 440ms" in engine_text(client, sandbox_name)

    mine = {"name": "mine", "downlink": {"delay": "20ms"}, "uplink": {"delay": "25ms", "loss": "2%"}}
    assert client.apply(sandbox_name, mine)["profile"] == "mine"
    assert "delay 25ms" in engine_text(client, sandbox_name) and "loss 2%" in engine_text(client, sandbox_name)

    inline = client.apply(sandbox_name, delay="100ms", jitter="10ms", loss="1%", rate="1mbit")
    assert inline["profile"] == "inline"
    assert inline["document"]["downlink"] == inline["document"]["uplink"]
    assert "rate 1mbit delay 100ms" in engine_text(client, sandbox_name, "downlink")

    client.apply(sandbox_name, delay="50ms", direction="uplink")
    assert "delay 50ms" in engine_text(client, sandbox_name, "uplink")
    assert engine_text(client, sandbox_name, "downlink").startswith("delay 0 ")  # the downlink has no conditions now


def test_refusals_are_the_formats_own_and_change_nothing(client, sandbox_name):
    client.apply(sandbox_name, "3g")
    with pytest.raises(LinkcondError) as refused:
        client.apply(sandbox_name, loss="150%")
    assert refused.value.status == 422
    assert refused.value.message.startswith('the request: $.downlink.loss (line 1, column ')
    assert refused.value.message.endswith('"150%" is out of range: expected a percentage from 0% to 100%')
    with pytest.raises(LinkcondError) as unknown:
        client.apply(sandbox_name, "egde")
    assert unknown.value.status == 422 and 'did you mean "edge"?' in unknown.value.message
    with pytest.raises(LinkcondError) as typo:
        client.request("POST", "/v1/sandboxes/%s/apply" % sandbox_name, {"dowlink": {"delay": "1ms"}})
    assert 'unknown key "dowlink" (did you mean "downlink"?)' in typo.value.message
    with pytest.raises(LinkcondError) as not_json:
        client.request("POST", "/v1/sandboxes/%s/apply" % sandbox_name, b'{"profile": ')
    assert not_json.value.status == 400
    with pytest.raises(TypeError):
        client.apply(sandbox_name, dealy="100ms")
    assert wifi_profile(client, sandbox_name) == "3g"


def test_timed_conditions_come_back(client, sandbox_name):
    client.apply(sandbox_name, "edge")
    timed = client.apply(sandbox_name, "100-loss", duration="1s")
    assert timed["then"] == {"wifi": "edge"} and timed["until"]
    assert wifi_profile(client, sandbox_name) == "100-loss"
    deadline = time.monotonic() + 8
    while wifi_profile(client, sandbox_name) != "edge" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert wifi_profile(client, sandbox_name) == "edge"
    assert "rate 200kbit delay 440ms" in engine_text(client, sandbox_name)


def test_clear(client, sandbox_name):
    client.apply(sandbox_name, "lte")
    cleared = client.clear(sandbox_name)
    assert len(cleared["cleared"]) == 2
    assert wifi_profile(client, sandbox_name) is None


def test_events_stream_until_the_client_leaves(client, sandbox_name):
    client.create_sandbox(sandbox_name)
    stream = client.events(sandbox_name, probe=False)
    first = next(stream)
    assert first["lane"] == "path" and first["event"]["path"]["status"] == "satisfied"
    stream.close()
    # The server goes on serving (and ended that stream).
    assert client.status(sandbox_name)["healthy"] is True
    with pytest.raises(LinkcondError) as missing:
        next(client.events("nosuch-%d" % os.getpid()))
    assert missing.value.status == 404


def test_a_run_answers_with_its_report_folder(client, sandbox_name):
    scenario = {
        "name": "py-run", "links": ["wifi"],
        "steps": [{"name": "lte", "apply": "lte", "hold": "2s"}, {"name": "cut", "link": "down", "side": "router", "hold": "2s"}],
        "expectations": [{"name": "path notices", "lane": "path", "reaches": "unsatisfied", "within": "1s", "after": "cut"}],
    }
    result = client.run(sandbox_name, scenario, timeout=120)
    assert result["passed"] is True, result
    assert [expectation["name"] for expectation in result["expectations"]] == ["path notices"]
    folder = result["reportDirectory"]
    for name in ("events.jsonl", "timeline.json", "junit.xml", "timeline.html", "summary.md"):
        assert os.path.exists(os.path.join(folder, name)), name


def test_tcp_needs_the_token(server):
    with pytest.raises(LinkcondError) as refused:
        Client(url=server.url, token="wrong").profiles()
    assert refused.value.status == 401
    assert Client(url=server.url, token=server.token).profile("lte")["name"] == "lte"


def test_a_slow_client_holds_up_no_one(server, client):
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(server.socket_path)
    slow.sendall(b"GET /v1/sandboxes HTTP/1.1\r\nHost: lin")
    try:
        started = time.monotonic()
        assert isinstance(client.sandboxes(), list)
        assert time.monotonic() - started < 4, "a request waited for the slow client"
    finally:
        slow.close()


def test_past_the_connection_cap_the_answer_is_503(server, client):
    held = []
    try:
        for _ in range(128):  # the server's cap: each holds a connection with a request that never ends
            slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            slow.connect(server.socket_path)
            slow.sendall(b"GET /v1/sandboxes HTTP/1.1\r\nHost: lin")
            held.append(slow)
        deadline = time.monotonic() + 3
        refused = None
        while refused is None and time.monotonic() < deadline:
            try:
                client.sandboxes()  # answered while the server has not yet accepted every held connection
                time.sleep(0.02)
            except LinkcondError as error:
                refused = error
        assert refused is not None, "no 503 with 128 connections held"
        assert refused.status == 503
        assert "as many connections as it takes at once (128)" in str(refused)
    finally:
        for slow in held:
            slow.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the held connections end as soon as they close
        try:
            assert isinstance(client.sandboxes(), list)
            break
        except LinkcondError as error:
            assert error.status == 503
            time.sleep(0.05)
    assert isinstance(client.sandboxes(), list)
