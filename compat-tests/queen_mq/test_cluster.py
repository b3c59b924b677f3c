"""The queen-mq 2.6.0 client against a three-node cluster: it pushes
through a follower, keeps pushing (retrying the same transactionIds) while
the raft leader is killed -9, and then pops and acks every message it
pushed, each once."""

import asyncio
import time
import uuid

from conftest import leader


async def test_queen_mq_pushes_and_pops_through_a_leader_killed(cluster):
    from queen import Queen

    nodes = cluster
    first = leader(nodes, [0, 1, 2])
    via = (first + 1) % 3
    q = Queen(nodes[via].url)
    name = f"mq-failover-{uuid.uuid4().hex[:8]}"
    try:
        await q.queue(name).push([{"data": i, "transactionId": f"t{i}"} for i in range(50)])
        nodes[first].kill9()
        for i in range(50, 100):
            deadline = time.time() + 30
            while True:
                try:
                    await q.queue(name).push([{"data": i, "transactionId": f"t{i}"}])
                    break
                except Exception:
                    # A 503 while the others elect a leader: the same
                    # transactionId again, which dedup makes safe.
                    assert time.time() < deadline, f"push {i} did not commit within 30 s"
                    await asyncio.sleep(0.1)
        got = {}
        deadline = time.time() + 30
        while len(got) < 100 and time.time() < deadline:
            msgs = await q.queue(name).batch(100).wait(False).pop()
            for m in msgs:
                assert m["transactionId"] not in got, f"{m['transactionId']} delivered twice"
                got[m["transactionId"]] = m["data"]
            if msgs:
                assert (await q.ack(msgs, True))["success"]
        assert got == {f"t{i}": i for i in range(100)}
    finally:
        await q.close()
