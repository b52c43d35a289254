"""The Python client on attachments, against a real `linkcond api` (see conftest.py): a namespace the test made
(`target`) attached, conditioned, watched, refused what it cannot take, and detached as it was."""

import json
import re
import subprocess
import time

import pytest

from linkcond_client import LinkcondError

TIMERS = {"valid_life_time", "preferred_life_time", "expires", "age", "used"}


def snapshot(target):
    """`ip -j addr`, `ip -j route show table all` (both families) of the target, without the timers."""
    def strip(value):
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key not in TIMERS}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value
    return {name: strip(json.loads(target.ip("-j", *arguments)))
            for name, arguments in (("addr", ["addr"]), ("route", ["route", "show", "table", "all"]),
                                    ("route6", ["-6", "route", "show", "table", "all"]))}


def ping_minimum(target):
    """The shortest of 5 pings from the target to its peer, in milliseconds."""
    output = subprocess.run(["ip", "netns", "exec", target.app, "ping", "-c", "5", "-i", "0.2", "-W", "2", "-q", target.peer_address],
                            capture_output=True, text=True).stdout
    found = re.search(r"= ([\d.]+)/", output)
    assert found, output
    return float(found.group(1))


def stage_texts(shown):
    return {site["direction"]: site["stages"][0].get("text", "") for site in shown["sites"]}


def test_an_attachment_is_conditioned_and_detached_as_it_was(client, target):
    before = snapshot(target)
    plain = ping_minimum(target)
    attached = client.attach(netns=target.app, name=target.name, dev="eth0", backend="userspace")
    assert attached["kind"] == "attachment" and attached["healthy"] is True and attached["interface"] == "eth0"
    assert target.name in [entry["name"] for entry in client.attachments()]
    assert {"name": target.name, "kind": "attachment"}.items() <= next(
        entry for entry in client.sandboxes() if entry["name"] == target.name).items()

    applied = client.apply_attachment(target.name, delay="30ms")
    assert applied["profile"] == "inline" and applied["backend"] == "userspace"
    shown = client.show_attachment(target.name)
    assert shown["link"]["profile"] == "inline" and shown["interface"] == "eth0"
    assert all(text.startswith("delay 30ms") for text in stage_texts(shown).values()), stage_texts(shown)
    assert client.attachment(target.name)["healthy"] is True
    conditioned = ping_minimum(target)
    assert conditioned >= 60, "30 ms each way, yet the shortest ping took %.2f ms (%.2f ms before)" % (conditioned, plain)

    assert client.apply_attachment(target.name, "edge")["profile"] == "edge"
    assert "rate 200kbit delay 440ms" in stage_texts(client.show_attachment(target.name))["uplink"]
    timed = client.apply_attachment(target.name, "3g", duration="1s")
    assert timed["profile"] == "3g" and timed["then"] == "edge" and timed["until"]
    deadline = time.monotonic() + 5
    while client.show_attachment(target.name)["link"]["profile"] != "edge" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.show_attachment(target.name)["link"]["profile"] == "edge", "edge did not come back after duration='1s'"
    cleared = client.clear_attachment(target.name)
    assert len(cleared["cleared"]) == 2
    assert client.show_attachment(target.name)["link"]["profile"] is None

    detached = client.detach(target.name)
    assert detached["detached"] == target.name and detached["movedHome"] is True and detached["notes"] == []
    assert snapshot(target) == before
    with pytest.raises(LinkcondError) as gone:
        client.attachment(target.name)
    assert gone.value.status == 404
    assert gone.value.message == ("there is no attachment '%s': see GET /v1/attachments ('linkcond status'), or attach one with "
                                  "POST /v1/attachments" % target.name)


def test_attachment_events_come_from_the_target_and_end_at_detach(client, target):
    client.attach(netns=target.app, name=target.name, backend="userspace")
    stream = client.attachment_events(target.name, timeout=10)
    first = next(stream)
    assert first["lane"] == "path" and first["event"]["path"]["status"] == "satisfied"
    assert [interface["name"] for interface in first["event"]["path"]["availableInterfaces"]] == ["eth0"]
    client.detach(target.name)
    last = None
    for line in stream:
        last = line
    assert last == {"lane": "stream", "end": "the attachment's target namespace went away (it was detached)"}


def test_attachment_refusals_change_nothing(client, target):
    with pytest.raises(LinkcondError) as two:
        client.attach(netns=target.app, pid=1, name=target.name)
    assert two.value.status == 422 and '"pid" cannot be combined with "netns"' in two.value.message
    with pytest.raises(LinkcondError) as unknown:
        client.apply_attachment(target.name, "edge")
    assert unknown.value.status == 404

    client.attach(netns=target.app, name=target.name, backend="userspace")
    with pytest.raises(LinkcondError) as twice:
        client.attach(netns=target.app, name="other")
    assert twice.value.status == 409 and "is already attached, as linkcond's attachment '%s'" % target.name in twice.value.message
    with pytest.raises(LinkcondError) as link:
        client.request("POST", "/v1/attachments/%s/apply" % target.name, {"profile": "edge", "link": "wl0"})
    assert link.value.status == 422
    assert link.value.message == "attachment '%s' has one link, its spliced interface: leave \"link\" out" % target.name
    with pytest.raises(LinkcondError) as backend:
        client.apply_attachment(target.name, "edge", backend="netem")
    assert backend.value.status == 409 and "attached with the userspace backend, not netem" in backend.value.message
    with pytest.raises(LinkcondError) as scenario:
        client.run_on_attachment(target.name, "ipv6-outage")
    assert scenario.value.status == 409
    assert scenario.value.message.startswith("scenario 'ipv6-outage' cannot run on attachment '%s': step " % target.name)
    with pytest.raises(LinkcondError) as probe:
        client.request("GET", "/v1/attachments/%s/events?probe=true" % target.name)
    assert probe.value.status == 409
    assert client.show_attachment(target.name)["link"]["profile"] is None
