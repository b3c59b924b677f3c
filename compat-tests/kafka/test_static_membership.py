"""Static membership (KIP-345) with confluent-kafka: a member with a
group.instance.id that restarts within its session timeout gets its old
partitions back, and the other member sees no revoke and no new assignment."""

import time
import uuid

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic


def static_consumer(node, group, instance, events):
    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group,
            "group.instance.id": instance,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
        }
    )

    def on_assign(_, parts):
        events.append(("assign", sorted(p.partition for p in parts)))

    def on_revoke(_, parts):
        events.append(("revoke", sorted(p.partition for p in parts)))

    return c, on_assign, on_revoke


def assigned(events):
    """The partitions of the last assignment, or None before the first."""
    for kind, parts in reversed(events):
        if kind == "assign":
            return parts
    return None


def poll_until(consumers, done, timeout=30):
    deadline = time.time() + timeout
    while not done():
        assert time.time() < deadline, "timed out"
        for c in consumers:
            c.poll(0.1)


def test_a_static_member_restarting_within_its_session_keeps_its_partitions_and_nobody_rebalances(node):
    t = f"static-{uuid.uuid4().hex[:8]}"
    g = f"g-{uuid.uuid4().hex[:6]}"
    a = AdminClient({"bootstrap.servers": node.bootstrap})
    a.create_topics([NewTopic(t, num_partitions=4, replication_factor=1)])[t].result(30)

    events_a, events_b = [], []
    ca, assign_a, revoke_a = static_consumer(node, g, "member-a", events_a)
    cb, assign_b, revoke_b = static_consumer(node, g, "member-b", events_b)
    ca.subscribe([t], on_assign=assign_a, on_revoke=revoke_a)
    cb.subscribe([t], on_assign=assign_b, on_revoke=revoke_b)

    def both_hold_two():
        return len(assigned(events_a) or []) == 2 and len(assigned(events_b) or []) == 2

    poll_until([ca, cb], both_hold_two)
    settled_a = list(events_a)
    held_by_b = assigned(events_b)

    # member-b stops (a static member sends no LeaveGroup) and starts again
    # well within its 10 s session.
    cb.close()
    events_b2 = []
    cb2, assign_b2, revoke_b2 = static_consumer(node, g, "member-b", events_b2)
    cb2.subscribe([t], on_assign=assign_b2, on_revoke=revoke_b2)
    poll_until([ca, cb2], lambda: assigned(events_b2) is not None)
    # Long enough for a rebalance, had one started, to reach member-a.
    end = time.time() + 3
    while time.time() < end:
        ca.poll(0.1)
        cb2.poll(0.1)

    assert assigned(events_b2) == held_by_b
    assert events_a == settled_a, f"member-a saw {events_a[len(settled_a):]} when member-b came back"
    ca.close()
    cb2.close()
