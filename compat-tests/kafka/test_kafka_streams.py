"""A Kafka Streams application (compat-tests/java/WordCount.java, kafka-streams
4.4) against a real node: a word count through a repartition topic and a
changelogged store. With exactly_once_v2 it counts a known input exactly,
on a clean run and with its process killed with kill -9 midway and
restarted; with at_least_once it counts exactly on a clean run and at least
once through the kill. scripts/test builds the classpath (compat-tests/java)."""

import os
import random
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

JAVA = Path(__file__).resolve().parent.parent / "java"
WORDS = [f"w{i:02d}" for i in range(25)]


def lines(seed, n):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)]


class App:
    """The word count's process, started and stopped by the test."""

    def __init__(self, node, app_id, guarantee, source, sink):
        classpath = (JAVA / "classpath.txt")
        if not classpath.exists():
            pytest.fail(f"{classpath} is missing: run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt`")
        self.state = tempfile.mkdtemp(prefix="wordcount-")
        # RocksDB unpacks its native library into the JVM's temporary
        # directory and leaves it behind when the JVM is killed: here it goes
        # with the state directory.
        self.argv = ["java", f"-Djava.io.tmpdir={self.state}", "-cp", classpath.read_text().strip(), "WordCount.java"]
        self.env = dict(os.environ, BOOTSTRAP=node.bootstrap, APP_ID=app_id, GUARANTEE=guarantee, INPUT=source,
                        OUTPUT=sink, STATE_DIR=self.state)
        self.log = open(os.path.join(self.state, "app.log"), "w+")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.argv, cwd=JAVA, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill9()
        shutil.rmtree(self.state, ignore_errors=True)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]


class Counts:
    """The latest count of each word in the output, at read_committed."""

    def __init__(self, node, sink):
        self.c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "isolation.level": "read_committed"})
        self.c.subscribe([sink])
        self.latest = {}
        self.updates = 0

    def read_for(self, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            m = self.c.poll(0.2)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                continue
            self.latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
            self.updates += 1

    def until(self, done, app, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.read_for(0.5)
            if done(self.latest):
                return
            assert app.proc.poll() is None, f"the word count exited:\n{app.output()}"
        raise AssertionError(f"counts {self.latest} after {timeout} s; the app said:\n{app.output()}")


def run_word_count(node, guarantee, kill):
    source, sink = f"wc-in-{uuid.uuid4().hex[:8]}", f"wc-out-{uuid.uuid4().hex[:8]}"
    a = AdminClient({"bootstrap.servers": node.bootstrap})
    for f in a.create_topics([NewTopic(t, num_partitions=2, replication_factor=1) for t in (source, sink)]).values():
        f.result(10)
    first, second = lines(1, 300), lines(2, 300)
    expected = Counter(w for line in first + second for w in line.split())
    p = Producer({"bootstrap.servers": node.bootstrap, "enable.idempotence": True})

    def send(batch):
        for i, line in enumerate(batch):
            p.produce(source, key=str(i), value=line)
        assert p.flush(30) == 0

    app = App(node, f"wc-{guarantee}-{uuid.uuid4().hex[:6]}", guarantee, source, sink)
    counts = Counts(node, sink)
    try:
        send(first)
        app.start()
        if kill:
            # Midway: some of the first half counted, then the process dies.
            counts.until(lambda latest: sum(latest.values()) > 0, app)
            app.kill9()
            send(second)
            app.start()
        else:
            send(second)
        if guarantee == "exactly_once_v2" or not kill:
            counts.until(lambda latest: latest == dict(expected), app)
        else:
            counts.until(lambda latest: all(latest.get(w, 0) >= n for w, n in expected.items()), app)
        # Nothing more arrives: no count goes past the input's.
        counts.read_for(3)
        if guarantee == "exactly_once_v2" or not kill:
            assert counts.latest == dict(expected), counts.latest
    finally:
        app.stop()
        counts.c.close()


@pytest.mark.parametrize("kill", [False, True], ids=["clean", "killed"])
@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_word_count_counts_a_known_input(node, guarantee, kill):
    run_word_count(node, guarantee, kill)
