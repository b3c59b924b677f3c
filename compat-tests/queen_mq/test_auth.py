"""JWT authentication (JWT_ENABLED=true): roles from the token decide what a
client may do; a missing, forged or expired token is refused with 401."""

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
