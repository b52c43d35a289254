"""A real `linkcond api` for the client's tests: a store of its own (its socket in it), on the Unix socket and a
loopback TCP port, stopped and every sandbox it made removed afterwards. Needs root (sandboxes are network
namespaces) and the built linkcond (`swift build`, or $LINKCOND_EXECUTABLE); without them the tests skip."""

import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))

_names = itertools.count(1)


def linkcond_executable():
    candidates = [os.environ.get("LINKCOND_EXECUTABLE"), os.path.join(REPOSITORY, ".build", "debug", "linkcond"),
                  os.path.join(REPOSITORY, ".build", "release", "linkcond")]
    return next((path for path in candidates if path and os.access(path, os.X_OK)), None)


class Server:
    def __init__(self, process, store, socket_path, url, token, executable):
        self.process, self.store, self.socket_path = process, store, socket_path
        self.url, self.token, self.executable = url, token, executable


@pytest.fixture(scope="session")
def server():
    if os.geteuid() != 0:
        pytest.skip("needs root: linkcond's sandboxes are network namespaces (run the suite with sudo)")
    executable = linkcond_executable()
    if executable is None:
        pytest.skip("no linkcond executable: run 'swift build' first, or set LINKCOND_EXECUTABLE")
    store = tempfile.mkdtemp(prefix="lcpy-store-")
    environment = dict(os.environ, LINKCOND_STORE=store)
    socket_path = os.path.join(store, "linkcond-api.sock")
    process = subprocess.Popen([executable, "api", "--listen", "127.0.0.1:0"], env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = None
    deadline = time.monotonic() + 30
    while url is None and time.monotonic() < deadline and process.poll() is None:
        line = process.stdout.readline()
        found = re.search(r"serving on (http://127\.0\.0\.1:\d+)", line)
        url = found.group(1) if found else url
    if url is None:
        process.kill()
        raise RuntimeError("linkcond api did not start: %s" % process.stderr.read())
    with open(os.path.join(store, "linkcond-api.token")) as file:
        token = file.read().strip()
    yield Server(process, store, socket_path, url, token, executable)
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    subprocess.run([executable, "down", "--all"], env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(store, ignore_errors=True)


@pytest.fixture()
def client(server):
    from linkcond_client import Client
    return Client(socket_path=server.socket_path)


@pytest.fixture()
def sandbox_name(server):
    """A sandbox name unique to this process and test (`py<pid>-<n>`); whatever is left of it is removed."""
    name = "py%d-%d" % (os.getpid() % 100000, next(_names))
    yield name
    subprocess.run([server.executable, "down", "--name", name], env=dict(os.environ, LINKCOND_STORE=server.store),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Target:
    """A namespace as a container's looks from inside (`app`: eth0 198.18.77.2/24, default route via the peer),
    whose eth0 is a veth to a peer namespace of the test's own (`peer`: app0 198.18.77.1/24); `name` is the
    attachment name to use for it."""

    def __init__(self, app, peer, name):
        self.app, self.peer, self.name = app, peer, name
        self.peer_address = "198.18.77.1"

    def ip(self, *arguments):
        return subprocess.run(["ip", "-n", self.app] + list(arguments), check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def target(server):
    """A target namespace for an attachment, made by the test (names `lcpy<pid>-<n>-app` and `-peer`, attachment
    `pa<pid>-<n>`); detached and removed afterwards, pass or fail."""
    number = next(_names)
    tag = "lcpy%d-%d" % (os.getpid() % 100000, number)
    made = Target(tag + "-app", tag + "-peer", "pa%d-%d" % (os.getpid() % 100000, number))
    try:
        for namespace in (made.app, made.peer):
            subprocess.run(["ip", "netns", "add", namespace], check=True)
        for arguments in (["link", "add", "eth0", "type", "veth", "peer", "name", "app0", "netns", made.peer],
                          ["addr", "add", "198.18.77.2/24", "dev", "eth0"], ["link", "set", "lo", "up"],
                          ["link", "set", "eth0", "up"]):
            subprocess.run(["ip", "-n", made.app] + arguments, check=True)
        for arguments in (["addr", "add", "198.18.77.1/24", "dev", "app0"], ["link", "set", "app0", "up"], ["link", "set", "lo", "up"]):
            subprocess.run(["ip", "-n", made.peer] + arguments, check=True)
        subprocess.run(["ip", "-n", made.app, "route", "add", "default", "via", made.peer_address], check=True)
        # Duplicate address detection over: the snapshots show the namespace as it stays.
        deadline = time.monotonic() + 5
        while "tentative" in made.ip("-6", "addr") and time.monotonic() < deadline:
            time.sleep(0.05)
        yield made
    finally:
        subprocess.run([server.executable, "detach", "--name", made.name], env=dict(os.environ, LINKCOND_STORE=server.store),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for namespace in (made.app, made.peer):
            subprocess.run(["ip", "netns", "del", namespace], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
