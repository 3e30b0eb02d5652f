"""Property-based fuzzing of the whole API from its OpenAPI schema: never a 5xx.

The OpenAPI schema is published only by apps built with `testing=True`; schemathesis
loads it through the ASGI transport (no socket) and sends generated requests, valid and
invalid, to every operation. The example count is bounded so the run stays short.
"""

from __future__ import annotations

from pathlib import Path

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


def test_no_request_gets_a_server_error(api_schema) -> None:  # type: ignore[no-untyped-def]
    """Every operation, with valid and invalid generated requests, some on a real id.

    Driven by hand rather than by schemathesis' pytest plugin, whose lazy-fixture path
    does not work with pytest 9 (`Function._nodeid`).
    """
    schema, seeded_id = api_schema
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 19
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
