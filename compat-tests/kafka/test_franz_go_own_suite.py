"""franz-go's own integration tests (pkg/kgo of the version compat-tests/franz-go/go.mod
pins, built by scripts/test into compat-tests/franz-go/kgo-own.test) against a real node.
They were written against Apache Kafka by franz-go's authors, so each is a check no one here
wrote: a test named here passes against Kafka 4.4 and must pass against Queen.

The tests read their broker from KGO_SEEDS and size themselves by KGO_TEST_RECORDS; they
create and delete their own topics and groups."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import Node

FRANZ = Path(__file__).resolve().parent.parent / "franz-go"


def kgo_tests(node, pattern, records, timeout=300):
    """Runs the kgo tests whose names match `pattern` against `node`; answers their output."""
    binary = FRANZ / "kgo-own.test"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `go test -c -o kgo-own.test github.com/twmb/franz-go/pkg/kgo` there")
    env = dict(os.environ, KGO_SEEDS=node.bootstrap, KGO_TEST_RF="1", KGO_TEST_RECORDS=str(records), KGO_LOG_LEVEL="none")
    done = subprocess.run(
        [str(binary), "-test.run", pattern, "-test.v", "-test.count=1", f"-test.timeout={timeout}s"],
        cwd=FRANZ,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 30,
    )
    out = done.stdout + done.stderr
    failures = [line for line in out.splitlines() if re.match(r"\s*--- FAIL", line) or "sendErr" in line]
    assert done.returncode == 0, f"kgo {pattern} failed: {failures}\n{out[-6000:]}"
    skipped = [line for line in out.splitlines() if "--- SKIP" in line]
    assert not skipped, f"kgo {pattern} skipped tests (the node does not advertise what they need): {skipped}"
    return out


@pytest.fixture(scope="module")
def default_groups_node():
    """A node with Kafka's own group timings (a new classic group waits 3 s for more members,
    consumer-protocol members beat every 5 s), so classic and KIP-848 groups race as they
    would on a broker left at its defaults."""
    n = Node(env={"QUEEN_KAFKA_INITIAL_REBALANCE_DELAY_MS": "3000", "QUEEN_KAFKA_CONSUMER_HEARTBEAT_INTERVAL_MS": "5000"})
    yield n
    n.stop()


def test_a_transactional_etl_chain_completes_on_classic_and_kip848_groups(default_groups_node):
    """TestTxnEtl: a transactional producer writes 50,000 records; three levels of
    read_committed consumers, each a GroupTransactSession (TxnOffsetCommit with its
    generation or member epoch, then the records produced to the next topic), members
    joining and leaving, chain them through four topics; every record must arrive once at
    each level. Six groups' kinds: range and cooperative-sticky classic groups, static or not,
    and KIP-848 groups with the range and uniform (sticky) server assignors, static or not.
    The KIP-848 chains once never finished: a TxnOffsetCommit was checked against the
    classic coordinator only, answered UNKNOWN_MEMBER_ID, and every transaction aborted.
    The three KIP-848 chains together must take no more than twice the three classic ones (each
    chain's time moves in steps of a heartbeat, so one chain alone is a noisy figure)."""
    out = kgo_tests(default_groups_node, "^TestTxnEtl$", records=50_000)
    took = {m[1]: float(m[2]) for m in re.finditer(r"TestTxnEtl/(\S+) completed in ([0-9.]+)s", out)}
    kip848 = {name: t for name, t in took.items() if "848" in name}
    classic = {name: t for name, t in took.items() if "848" not in name}
    assert len(kip848) == 3 and len(classic) == 3, f"expected three chains of each kind: {took}"
    assert sum(kip848.values()) <= 2 * sum(classic.values()), f"KIP-848 chains slower than twice the classic: {took}"


def test_pattern_subscriptions_skip_internal_topics(node):
    """TestConsumeRegex and TestConsumeRegexShareSkipsInternal: a consumer-group and a share-group
    consumer subscribing by pattern skip the topics Metadata marks internal. Both wait up to 30 s
    for __consumer_offsets to be listed as internal, which it once was not."""
    kgo_tests(node, "^(TestConsumeRegex|TestConsumeRegexShareSkipsInternal)$", records=1000)


def test_share_groups_deliver_every_record_through_killed_members(node):
    """TestShareGroupETL: a two-level pipeline of share groups whose members accept, release,
    reject, bail out and are killed along the way; every record must reach the second level.
    Records held by a member that goes come back uncounted, as Kafka gives them back, and an
    answer of 16 KiB of records or more reaches the client (each such answer once closed the
    connection, its records' locks ran out five times, and they went to the dead-letter queue).
    TestShareGroupOffsetsAdmin: AlterShareGroupOffsets on a group id with no group yet makes it
    a share group starting there, which DescribeShareGroupOffsets, DeleteShareGroupOffsets and
    DeleteGroups then find (it once answered GROUP_ID_NOT_FOUND). TestShareGroupAckOnClose:
    acknowledgements sent as a consumer closes are applied."""
    out = kgo_tests(node, "^(TestShareGroupETL|TestShareGroupOffsetsAdmin|TestShareGroupAckOnClose)$", records=10_000)
    for test in ("TestShareGroupETL", "TestShareGroupOffsetsAdmin", "TestShareGroupAckOnClose"):
        assert re.search(rf"^--- PASS: {test} ", out, re.M), f"{test} did not run and pass:\n{out[-6000:]}"
