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
