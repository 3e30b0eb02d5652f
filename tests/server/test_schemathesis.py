"""Property-based fuzzing of the whole API from its OpenAPI schema: never a 5xx.

The OpenAPI schema is published only by apps built with `testing=True`; schemathesis
loads it through the ASGI transport (no socket) and sends generated requests, valid and
invalid, to every operation. The example count is bounded so the run stays short.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode

from foldline import secrets as key_store
from foldline.core.messages import assistant, user
from foldline.server.routes.settings import get_local_targets, get_provider_builder
from foldline.server.security import loopback_hosts

from .conftest import AUTH, build_app

EXAMPLES_PER_OPERATION = 12


@pytest.fixture
def api_schema(data_dir: Path, store, chat_service, frontend_dir: Path, model, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(key_store, "_usable_keyring", lambda: (None, "no keyring in tests"))
    # schemathesis' ASGI client addresses the app as "testserver".
    app = build_app(
        data_dir,
        store,
        chat_service,
        frontend_dir,
        testing=True,
        allowed_hosts=[*loopback_hosts(), "testserver"],
    )
    # No request may leave the machine: connection tests use the fake model and local
    # detection probes nothing.
    app.dependency_overrides[get_provider_builder] = lambda: lambda config, name: model
    app.dependency_overrides[get_local_targets] = lambda: ()
    conversation = store.create_conversation(title="seeded")
    store.append_messages(conversation.id, [user("hello"), assistant("hi")])
    return schemathesis.openapi.from_asgi("/openapi.json", app), conversation.id


def endless(operation) -> bool:  # type: ignore[no-untyped-def]
    """The watch stream stays open while a page shows the conversation: a generated
    call on a real id would never end (tests/server/test_watch.py covers it)."""
    return operation.path.endswith("/watch")


def test_no_request_gets_a_server_error(api_schema) -> None:  # type: ignore[no-untyped-def]
    """Every operation, with valid and invalid generated requests, some on a real id.

    Driven by hand rather than by schemathesis' pytest plugin, whose lazy-fixture path
    does not work with pytest 9 (`Function._nodeid`).
    """
    schema, seeded_id = api_schema
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 19
    operations = [operation for operation in operations if not endless(operation)]
    checked: list[str] = []
    for operation in operations:
        strategies = [
            operation.as_strategy(GenerationMode.POSITIVE),
            operation.as_strategy(GenerationMode.NEGATIVE),
        ]
        if "{conversation_id}" in operation.path:
            strategies.append(
                operation.as_strategy(
                    GenerationMode.POSITIVE, path_parameters={"conversation_id": seeded_id}
                )
            )

        @given(case=st.one_of(strategies))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def exercise(case) -> None:  # type: ignore[no-untyped-def]
            response = case.call(headers=AUTH)
            case.validate_response(response, checks=[not_a_server_error], headers=AUTH)

        exercise()
        checked.append(operation.label)
    assert len(checked) == len(operations)


COVERAGE_CASES_PER_OPERATION = 80


def test_boundary_values_of_every_operation_get_no_server_error(api_schema) -> None:  # type: ignore[no-untyped-def]
    """schemathesis' coverage phase: each declared bound, one past it, and values far
    outside (the largest integers, wrong types), for every parameter and body."""
    schema, seeded_id = api_schema
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if endless(operation):
            continue
        cases = schema.iter_coverage_cases(
            operation,
            generation_modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
            generation_config=schema.config.generation_for(operation=operation, phase="coverage"),
        )
        for count, case in enumerate(cases):
            if count >= COVERAGE_CASES_PER_OPERATION:
                break
            if "{conversation_id}" in operation.path and count % 2:
                case.path_parameters = {
                    **(case.path_parameters or {}),
                    "conversation_id": seeded_id,
                }
            response = case.call(headers=AUTH)
            if response.status_code >= 500:
                where = f"{case.path_parameters} {case.query}"
                failures.append(f"{operation.label} {where} -> {response.status_code}")
    assert failures == []


BOUNDARY_INTEGERS = st.sampled_from(
    [
        -(2**64),
        -(2**63) - 1,
        -(2**63),
        -1,
        0,
        1,
        2**31 - 1,
        2**31,
        2**53 + 1,
        2**63 - 1,
        2**63,
        2**64,
        10**30,
    ]
)


def _integer_paths(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [path]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _integer_paths(item, (*path, key))]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _integer_paths(item, (*path, i))]
    return []


def _replaced(document: Any, path: tuple, value: int) -> Any:
    copied = json.loads(json.dumps(document))
    target = copied
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copied


def test_large_integers_anywhere_in_an_import_never_brick_anything(  # type: ignore[no-untyped-def]
    api_schema, store
) -> None:
    """Every integer of a real export (indices, versions, token counts, usage, settings)
    replaced by a boundary value: the import answers 4xx or, if accepted, the copy
    still answers every read and a fold; never a 5xx."""
    schema, seeded_id = api_schema
    store.append_messages(seeded_id, [user("more " * 600), assistant("yes " * 600)])
    store.update_conversation(seeded_id, settings={"compaction": {"keep_recent_tokens": 10}})
    store.append_messages(seeded_id, [user("last"), assistant("ok")], usage={"input_tokens": 5})
    operation = schema["/api/conversations/import"]["POST"]
    client = schema.app
    from fastapi.testclient import TestClient

    with TestClient(client, base_url="http://127.0.0.1", headers=AUTH) as http:
        assert http.post(f"/api/conversations/{seeded_id}/compact", json={}).status_code == 200
        document = http.get(f"/api/conversations/{seeded_id}/export").json()
        assert document["compactions"], "the export must hold a fold to forge"
        paths = _integer_paths(document)
        assert len(paths) >= 10

        @given(path=st.sampled_from(paths), value=BOUNDARY_INTEGERS)
        @settings(
            max_examples=60,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def exercise(path: tuple, value: int) -> None:
            case = operation.Case(
                body=_replaced(document, path, value), media_type="application/json"
            )
            response = case.call(headers=AUTH)
            assert response.status_code < 500, (path, value, response.text)
            if response.status_code == 201:
                copy = response.json()["id"]
                base = f"/api/conversations/{copy}"
                for read in ("", "/messages", "/context", "/compactions", "/export"):
                    assert http.get(base + read).status_code == 200, (path, value, read)
                assert http.post(f"{base}/compact", json={}).status_code == 200
                assert http.get(base).status_code == 200

        exercise()
