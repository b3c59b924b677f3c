"""The README's SASL and TLS examples, run as written.

Each block the README marks `<!-- example: NAME -->` is read from the README
itself: a node block's settings (the `VAR=value` words before `cargo run
--release`) start a real node, and the other blocks run in bash in one
working directory, with only `localhost:9092` and `localhost:6632` moved to
the ports this node listens on."""

import re
import shlex
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, Node

README = (ROOT / "README.md").read_text()


def block(name):
    m = re.search(rf"<!-- example: {re.escape(name)} -->\s*```sh\n(.*?)```", README, re.S)
    assert m, f"README.md has no block marked example: {name}"
    return m.group(1)


def node_settings(name, workdir):
    words = shlex.split(block(name).replace("\\\n", " "))
    assert words[-3:] == ["cargo", "run", "--release"], f"the {name} block runs the node: {words}"
    env = dict(w.split("=", 1) for w in words[:-3])
    # Relative paths in settings name files the setup block made in workdir.
    return {k: str(workdir / v) if (workdir / v).is_file() else v for k, v in env.items()}


def run(name, workdir, node=None):
    script = block(name)
    if node is not None:
        script = script.replace("localhost:9092", f"localhost:{node.kafka_port}")
        script = script.replace("localhost:6632", f"localhost:{node.port}")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=workdir, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"the {name} block failed:\n{script}\n{done.stderr}"
    return done.stdout


@pytest.fixture
def workdir():
    return Path(tempfile.mkdtemp(prefix="queen-readme-"))


def test_the_sasl_example_runs_as_written(workdir):
    node = Node(env=node_settings("sasl-node", workdir))
    try:
        assert "Metadata for all topics" in run("sasl-client", workdir, node)
    finally:
        node.stop()


def test_the_tls_example_runs_as_written(workdir):
    run("tls-setup", workdir)
    node = Node(env=node_settings("tls-node", workdir))
    try:
        out = run("tls-client", workdir, node)
        assert "Metadata for all topics" in out
        assert '"status"' in out, out
    finally:
        node.stop()
