"""The API's OpenAPI schema, and property tests against the live app: hypothesis-generated bodies for
``POST /v1/run`` and query strings for ``GET /v1/vault/search`` never make the server fail (no 500), and
every error is the JSON error shape."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _demo import DEMO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_api import TOKEN, LiveServer, assert_error

from engine.api import Settings

pytestmark = pytest.mark.usefixtures("shad_home")

RUN_FIELDS = (
    "goal vaults strategy max_depth max_nodes max_time max_tokens max_usd price max_parallel max_llm "
    "concurrency_mode provider model include_history no_code_mode garden learn profile no_cache "
    "refresh_cache checkpoints no_checkpoints verify block_on warn_only tests"
).split()
HYPOTHESIS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
    st.sampled_from(["offline", "research", "pause", "ask", "fixed", "strict", "basic", "leaf=x", "demo"]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(text, scalars, max_size=2))


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """One server for all examples; runs a valid body starts are small (max_nodes 1, offline)."""
    root = tmp_path_factory.mktemp("api")
    vault = Path(shutil.copytree(DEMO, root / "demo"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHAD_HOME", str(root / "home"))
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
            env.delenv(name, raising=False)
        with LiveServer(Settings(token=TOKEN, vaults=[vault])) as server, server.client() as client:
            yield client


def check(response: httpx.Response) -> None:
    assert response.status_code != 500, response.text
    if response.status_code >= 400:
        assert_error(response, response.status_code)
    else:
        assert response.status_code in (200, 202)


@HYPOTHESIS
@given(
    body=st.one_of(
        st.dictionaries(st.one_of(st.sampled_from(RUN_FIELDS), text), values, max_size=6),
        st.fixed_dictionaries(
            {"goal": text},
            optional={name: values for name in RUN_FIELDS if name != "goal"},
        ),
        values,
    )
)
def test_any_run_body_is_accepted_or_a_json_error(api: httpx.Client, body: Any) -> None:
    if isinstance(body, dict) and "provider" not in body:
        body = {**body, "provider": "offline", "max_nodes": body.get("max_nodes", 1)}
    response = api.post("/v1/run", json=body)
    check(response)
    if response.status_code == 202:
        assert response.json()["status_url"].startswith("/v1/run/")


@HYPOTHESIS
@given(
    params=st.fixed_dictionaries(
        {},
        optional={
            "q": text,
            "limit": st.one_of(st.integers(-5, 2000), text),
            "path": text,
            "type": text,
            "tag": st.one_of(text, st.lists(text, max_size=3)),
            "vault": st.sampled_from(["demo", "/", "../demo", "", "nope"]),
        },
    )
)
def test_any_search_query_is_hits_or_a_json_error(api: httpx.Client, params: dict[str, Any]) -> None:
    response = api.get("/v1/vault/search", params=params)
    check(response)
    if response.status_code == 200:
        assert isinstance(response.json(), list)


def test_the_openapi_schema_describes_every_route(api: httpx.Client) -> None:
    schema = api.get("/openapi.json").json()
    paths = schema["paths"]
    expected = {
        "/v1/health": {"get"},
        "/v1/run": {"post"},
        "/v1/run/{run_id}": {"get", "delete"},
        "/v1/run/{run_id}/resume": {"post"},
        "/v1/run/{run_id}/events": {"get"},
        "/v1/runs": {"get"},
        "/v1/vault/status": {"get"},
        "/v1/vault/search": {"get"},
        "/v1/hitl/queue": {"get"},
        "/v1/hitl/{item_id}/decide": {"post"},
    }
    for path, methods in expected.items():
        assert methods <= set(paths[path]), path
    run_body = schema["components"]["schemas"]["RunRequest"]
    assert {"goal", "vaults", "max_nodes", "max_tokens", "strategy", "provider", "verify"} <= set(
        run_body["properties"]
    )
    assert "history_dir" not in run_body["properties"]
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert paths["/v1/runs"]["get"]["security"] == [{"bearer": []}]
    assert "security" not in paths["/v1/health"]["get"]
