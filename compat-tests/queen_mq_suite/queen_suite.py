"""Runs the queen-mq client's own test suite (tests/ of its sdist) against a
fresh `queen` node.

The sdist ships the tests but not the conftest that gives them their
`client` fixture, so this plugin stands in for it: at configure time it starts
one node for the session (open, or with JWT when QUEEN_SUITE_JWT=1) and sets
the variables the suite reads at import (QUEEN_URL, QUEEN_SERVER_URL and, with
JWT, JWT_SECRET). Tests named in deselected.txt are deselected with their
reason printed. scripts/queen-mq-suite fetches the sdist and loads this plugin (`-p queen_suite`).
"""

import importlib.util
import os
import secrets
import time
from pathlib import Path

import jwt
import pytest

HERE = Path(__file__).resolve().parent
DESELECTED = HERE / "deselected.txt"

_node = None


def _node_class():
    # compat-tests/conftest.py owns the node harness; loaded under its own
    # name so it does not shadow a `conftest` module of the suite.
    spec = importlib.util.spec_from_file_location("queen_compat_node", HERE.parent / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Node


def _jwt_on() -> bool:
    return os.environ.get("QUEEN_SUITE_JWT") == "1"


def pytest_configure(config):
    global _node
    if hasattr(config, "workerinput"):
        return
    # The suite's encrypted queues need a key on the node.
    env = {"QUEEN_ENCRYPTION_KEY": secrets.token_hex(32)}
    if _jwt_on():
        secret = secrets.token_hex(32)
        env.update({"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256", "JWT_SECRET": secret})
        os.environ["JWT_SECRET"] = secret
    else:
        os.environ.pop("JWT_SECRET", None)
    _node = _node_class()(env)
    os.environ["QUEEN_URL"] = _node.url
    os.environ["QUEEN_SERVER_URL"] = _node.url


def pytest_unconfigure(config):
    if _node is not None:
        _node.stop()


def pytest_report_header(config):
    mode = "JWT (HS256)" if _jwt_on() else "open"
    return f"queen node: {_node.url if _node else '-'} ({mode}), data in {_node.dir if _node else '-'}"


def deselected_entries():
    """(mode, test id, reason) for each line of deselected.txt.

    A line is `[mode] file.py::test_name  # reason`; mode is `open:` or `jwt:`
    when the test is deselected in one run only."""
    entries = []
    for raw in DESELECTED.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        test, _, reason = line.partition("#")
        test = test.strip()
        mode = None
        for prefix in ("open:", "jwt:"):
            if test.startswith(prefix):
                mode, test = prefix[:-1], test[len(prefix):].strip()
        if not reason.strip():
            raise pytest.UsageError(f"deselected.txt: {test} has no reason")
        entries.append((mode, test, reason.strip()))
    return entries


def pytest_collection_modifyitems(config, items):
    mode = "jwt" if _jwt_on() else "open"
    reasons = {test: reason for m, test, reason in deselected_entries() if m in (None, mode)}
    keep, dropped = [], []
    for item in items:
        test_id = item.nodeid.split("/")[-1]
        (dropped if test_id in reasons else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter:
            for item in dropped:
                test_id = item.nodeid.split("/")[-1]
                reporter.write_line(f"deselected {test_id}: {reasons[test_id]}")


def _token() -> str:
    now = int(time.time())
    claims = {"sub": "queen-mq-suite", "role": "admin", "iat": now, "exp": now + 3600}
    return jwt.encode(claims, os.environ["JWT_SECRET"], algorithm="HS256")


@pytest.fixture
async def client():
    from queen import Queen

    # The client as it ships, its retry_429 policy and all: a full queue
    # answers 409 queue_full, which it raises at once (test_push_max_queue_size).
    options = {}
    if _jwt_on():
        options["bearer_token"] = _token()
    q = Queen(_node.url, **options)
    yield q
    await q.close()
