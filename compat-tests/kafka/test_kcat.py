"""Debian's kcat (librdkafka 1.x) against a real node: metadata, produce,
consume from the beginning and by offset, and group consume with commits."""

import shutil
import subprocess
import uuid

import pytest

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat is not installed (scripts/test installs it)")


def kcat(node, *args, stdin=None, timeout=30):
    done = subprocess.run(
        [KCAT, "-b", node.bootstrap, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def topic(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_produce_then_metadata_lists_the_topic(node):
    t = topic("kcat-meta")
    kcat(node, "-P", "-t", t, stdin="one\n")
    listing = kcat(node, "-L", "-t", t)
    assert f'topic "{t}" with 1 partitions' in listing
    assert "partition 0, leader 1" in listing


def test_consume_from_beginning_and_by_offset(node):
    t = topic("kcat-read")
    lines = "".join(f"k{i}:value {i}\n" for i in range(10))
    kcat(node, "-P", "-t", t, "-K", ":", stdin=lines)
    everything = kcat(node, "-C", "-t", t, "-o", "beginning", "-e", "-f", "%o|%k|%s\n")
    assert everything.splitlines() == [f"{i}|k{i}|value {i}" for i in range(10)]
    tail = kcat(node, "-C", "-t", t, "-o", "7", "-e", "-f", "%o|%s\n")
    assert tail.splitlines() == [f"{i}|value {i}" for i in range(7, 10)]


def test_group_consume_commits_and_resumes(node):
    t = topic("kcat-group")
    g = f"g-{uuid.uuid4().hex[:6]}"
    kcat(node, "-P", "-t", t, stdin="".join(f"m{i}\n" for i in range(5)))
    first = kcat(node, "-G", g, "-o", "beginning", "-e", "-f", "%o %s\n", t)
    assert first.splitlines() == [f"{i} m{i}" for i in range(5)]
    kcat(node, "-P", "-t", t, stdin="m5\nm6\n")
    second = kcat(node, "-G", g, "-e", "-f", "%o %s\n", t)
    assert second.splitlines() == ["5 m5", "6 m6"]
