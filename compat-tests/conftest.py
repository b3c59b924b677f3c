"""Starts a real `queen` node for the compatibility tests.

The binary is `QUEEN_BIN` (default: target/debug/queen, built by the Rust
test run that precedes this suite in scripts/test).
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("QUEEN_BIN", str(ROOT / "target" / "debug" / "queen"))


# Ports are picked below the kernel's ephemeral range (32768 and up): a port
# handed out by bind(:0) can be reused as the local end of an outgoing
# connection while a killed node is down, and its restart then cannot listen.
# A cursor keeps one session from picking a port twice; a start drawn from the
# pid and the clock keeps concurrent sessions apart.
_PORT_LOW, _PORT_SPAN = 20_000, 12_000
_port_cursor = [(os.getpid() * 7919 ^ time.time_ns()) % _PORT_SPAN]


def free_port() -> int:
    for _ in range(_PORT_SPAN):
        port = _PORT_LOW + _port_cursor[0] % _PORT_SPAN
        _port_cursor[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port between {_PORT_LOW} and {_PORT_LOW + _PORT_SPAN}")


class PortTaken(RuntimeError):
    """The node could not listen: something took a port between its pick and the node's bind."""


# Every node the session made, so its end can stop them and free their
# directories: a suite run makes hundreds, and the disk is shared.
MADE = []


@pytest.fixture(scope="session", autouse=True)
def nodes_are_cleaned_up():
    yield
    for n in MADE:
        try:
            n.stop()
        except Exception:
            n.kill9()
        shutil.rmtree(n.dir, ignore_errors=True)


class Node:
    def __init__(self, env=None):
        self.dir = tempfile.mkdtemp(prefix="queen-compat-")
        MADE.append(self)
        self.extra_env = env or {}
        self.log = open(os.path.join(self.dir, "node.log"), "wb")
        self.proc = None
        # A port picked free can be taken by another process's outgoing
        # connection before the node binds it; a fresh pair is then picked.
        for attempt in range(5):
            self.pick_ports()
            try:
                self.start()
                return
            except PortTaken:
                if attempt == 4:
                    raise

    def pick_ports(self):
        self.port = free_port()
        # A cluster's nodes are given their Kafka address: their peers name it.
        given = self.extra_env.get("QUEEN_KAFKA_ADDR")
        self.kafka_port = int(given.rsplit(":", 1)[1]) if given else free_port()
        while self.kafka_port == self.port:
            self.port = free_port()
        # An HTTPS node's readiness is checked without trusting its CA: the
        # tests that use it check the certificate themselves.
        self.https = self.extra_env.get("QUEEN_HTTP_TLS") == "true"
        self.url = f"{'https' if self.https else 'http'}://127.0.0.1:{self.port}"
        self.bootstrap = f"127.0.0.1:{self.kafka_port}"
        self.env = dict(
            os.environ,
            QUEEN_RAFT_DIR=self.dir,
            QUEEN_HTTP_ADDR=f"127.0.0.1:{self.port}",
            QUEEN_KAFKA_ADDR=self.bootstrap,
            # Kafka's default waits 3 s for more members of a new group; the
            # suite's groups start together.
            QUEEN_KAFKA_INITIAL_REBALANCE_DELAY_MS="500",
            QUEEN_KAFKA_CONSUMER_HEARTBEAT_INTERVAL_MS="500",
            # The suite tests clients, not the machine's free space: the disk
            # gate closes only on a nearly full volume (its own test closes it).
            QUEEN_STORAGE_FULL_PCT="99",
            # start() waits for the "listening" line, an info line.
            QUEEN_LOG="info",
        )
        self.env.update(self.extra_env)

    def log_since(self, offset: int) -> str:
        with open(os.path.join(self.dir, "node.log"), "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def start(self):
        started_at = os.path.getsize(os.path.join(self.dir, "node.log"))
        self.proc = subprocess.Popen([BIN], env=self.env, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            # This attempt's "listening" line proves that the node answering
            # is this one, not another that holds the port.
            if "HTTP API listening" in self.log_since(started_at):
                try:
                    context = ssl._create_unverified_context() if self.https else None
                    with urllib.request.urlopen(self.url + "/health", timeout=1, context=context) as r:
                        if r.status == 200:
                            return
                except OSError:
                    pass
            time.sleep(0.05)
            if self.proc.poll() is not None:
                tail = self.log_since(started_at)[-4000:]
                if "Address already in use" in tail:
                    raise PortTaken(tail)
                raise RuntimeError(f"queen exited with {self.proc.returncode}; log:\n{tail}")
        raise RuntimeError(f"queen did not become healthy; log:\n{self.log_since(started_at)[-4000:]}")

    def kill9(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()

    def restart_after_kill(self):
        self.kill9()
        self.start()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def node():
    n = Node()
    yield n
    n.stop()


@pytest.fixture
async def client(node):
    from queen import Queen

    q = Queen(node.url)
    yield q
    await q.close()


def health(node):
    with urllib.request.urlopen(node.url + "/health", timeout=2) as r:
        return json.load(r)


def three_nodes(extra=None):
    """Three nodes of one cluster, each at its own ports on loopback, with
    `extra` in each one's environment."""
    raft = [free_port() for _ in range(3)]
    kafka = [free_port() for _ in range(3)]
    # Each peer names its Kafka address: the raft leader coordinates every
    # consumer group there, whichever node a member reaches first.
    peers = ",".join(f"{i + 1}=127.0.0.1:{raft[i]}//127.0.0.1:{kafka[i]}" for i in range(3))
    nodes = []
    for i in range(3):
        env = {
            "QUEEN_RAFT_NODE_ID": str(i + 1),
            "QUEEN_RAFT_PEERS": peers,
            "QUEEN_RAFT_ADDR": f"127.0.0.1:{raft[i]}",
            "QUEEN_KAFKA_ADDR": f"127.0.0.1:{kafka[i]}",
            "QUEEN_RAFT_TOKEN": "compat-cluster",
            "QUEEN_RAFT_WRITE_TIMEOUT_MS": "5000",
            **(extra or {}),
        }
        nodes.append(Node(env))
    return nodes


@pytest.fixture
def cluster():
    """Three nodes of one cluster, each at its own ports on loopback."""
    nodes = three_nodes()
    yield nodes
    for n in nodes:
        n.stop()


def leader(nodes, alive):
    """The index of the node every live node names as leader."""
    deadline = time.time() + 30
    while time.time() < deadline:
        named = set()
        for i in alive:
            try:
                named.add(health(nodes[i])["raft"]["leader"])
            except OSError:
                named.add(None)
        if len(named) == 1 and None not in named:
            found = named.pop() - 1
            if found in alive:
                return found
        time.sleep(0.1)
    raise AssertionError("the nodes did not agree on a leader")


