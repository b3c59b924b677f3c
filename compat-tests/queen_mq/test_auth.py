"""JWT authentication (JWT_ENABLED=true): roles from the token decide what a
client may do; a missing, forged or expired token is refused with 401; the
scheme is case-insensitive; each pushed message carries the token's sub as
producerSub, whatever the body claims, and none without JWT."""

import time
import uuid

import httpx
import jwt
import pytest

from conftest import Node

SECRET = "compat-test-secret"


def token(role=None, roles=None, exp_in=300, secret=SECRET, iss="queen-tests"):
    claims = {"sub": "tester", "exp": int(time.time()) + exp_in, "iss": iss}
    if role:
        claims["role"] = role
    if roles:
        claims["roles"] = roles
    return jwt.encode(claims, secret, algorithm="HS256")


@pytest.fixture(scope="module")
def secured():
    n = Node({"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256", "JWT_SECRET": SECRET, "JWT_ISSUER": "queen-tests"})
    yield n
    n.stop()


async def test_read_write_token_works_through_the_client(secured):
    from queen import Queen

    q = f"auth-{uuid.uuid4().hex[:8]}"
    client = Queen(secured.url, bearer_token=token(role="read-write"))
    try:
        pushed = await client.queue(q).push([{"data": 1}])
        assert pushed[0]["status"] == "queued"
        msgs = await client.queue(q).batch(1).wait(False).pop()
        assert (await client.ack(msgs, True))["success"]
    finally:
        await client.close()


async def test_roles_missing_forged_and_expired_tokens(secured):
    async with httpx.AsyncClient(base_url=secured.url) as http:
        assert (await http.get("/health")).status_code == 200, "JWT_SKIP_PATHS"
        body = {"items": [{"queue": "auth-roles", "payload": 1}]}
        r = await http.post("/api/v1/push", json=body)
        assert r.status_code == 401 and r.json()["code"] == "unauthorized"
        no_iss = jwt.encode({"role": "admin", "exp": int(time.time()) + 300}, SECRET, algorithm="HS256")
        for bad in (no_iss, token(role="admin", secret="wrong"), token(role="admin", exp_in=-120), token(role="admin", iss="other"), "not.a.jwt"):
            r = await http.post("/api/v1/push", json=body, headers={"Authorization": f"Bearer {bad}"})
            assert r.status_code == 401, r.text
            # The body was not read, so the connection is not reused.
            assert r.headers.get("connection") == "close"
        ro = {"Authorization": f"Bearer {token(role='read-only')}"}
        r = await http.post("/api/v1/push", json=body, headers=ro)
        assert r.status_code == 403 and r.json()["code"] == "forbidden"
        r = await http.post("/api/v1/fetch", json={"entries": [{"queue": "auth-roles", "partition": "Default", "offset": 0}]}, headers=ro)
        assert r.status_code == 200
        rw = {"Authorization": f"Bearer {token(roles=['read-write'])}"}
        assert (await http.post("/api/v1/push", json=body, headers=rw)).status_code == 201
        assert (await http.delete("/api/v1/resources/queues/auth-roles", headers=rw)).status_code == 403
        admin = {"Authorization": f"Bearer {token(role='admin')}"}
        assert (await http.delete("/api/v1/resources/queues/auth-roles", headers=admin)).status_code == 200
        assert (await http.post("/api/v1/push", json=body, headers={"Authorization": f"Bearer {token()}"})).status_code == 401


async def test_the_bearer_scheme_is_case_insensitive(secured):
    body = {"items": [{"queue": "auth-scheme", "payload": 1}]}
    async with httpx.AsyncClient(base_url=secured.url) as http:
        for scheme in ("bearer", "BEARER", "Bearer"):
            r = await http.post("/api/v1/push", json=body, headers={"Authorization": f"{scheme} {token(role='read-write')}"})
            assert r.status_code == 201, (scheme, r.text)
        r = await http.post("/api/v1/push", json=body, headers={"Authorization": f"Basic {token(role='read-write')}"})
        assert r.status_code == 401


@pytest.mark.parametrize("binary_push,framed_pop", [(False, False), (True, True)], ids=["json", "binary-framed"])
async def test_producer_sub_is_the_tokens_sub_whatever_the_body_claims(secured, binary_push, framed_pop):
    from queen import Queen

    q = f"auth-sub-{uuid.uuid4().hex[:8]}"
    bearer = token(role="read-write")  # sub: tester
    async with httpx.AsyncClient(base_url=secured.url, headers={"Authorization": f"Bearer {bearer}"}) as http:
        r = await http.post("/api/v1/push", json={"items": [{"queue": q, "payload": {"n": 1}, "producerSub": "attacker"}]})
        assert r.status_code == 201, r.text
        r = await http.post(
            "/api/v1/transaction",
            json={"operations": [{"type": "push", "items": [{"queue": q, "payload": {"n": 2}, "producerSub": "attacker"}]}]},
        )
        assert r.status_code == 200 and r.json()["success"], r.text
    client = Queen(secured.url, bearer_token=bearer, binary_push=binary_push, framed_pop=framed_pop)
    try:
        await client.queue(q).push([{"data": {"n": 3}}])
        msgs = await client.queue(q).batch(10).wait(False).pop()
    finally:
        await client.close()
    assert sorted(m["data"]["n"] for m in msgs) == [1, 2, 3]
    assert [m["producerSub"] for m in msgs] == ["tester"] * 3


async def test_producer_sub_is_absent_without_jwt(node):
    q = f"auth-open-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=node.url) as http:
        r = await http.post("/api/v1/push", json={"items": [{"queue": q, "payload": 1, "producerSub": "attacker-no-jwt"}]})
        assert r.status_code == 201, r.text
        r = await http.get(f"/api/v1/pop/queue/{q}", params={"batch": 1, "wait": "false"})
        assert [m["producerSub"] for m in r.json()["messages"]] == [None]
