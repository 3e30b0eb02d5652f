"""Switching a conversation to another model of the same provider: the new model, with no
calibration of its own yet, is counted with the provider's learned ratio, so the meter,
the fold before its first send and what is sent agree."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from foldline.core.calibration import Calibration
from foldline.core.messages import assistant, user
from foldline.store import Store

from .conftest import CONFIG_TOML

SMALLER = """
[models."small-model"]
provider = "local"
context_window = 8000
max_output_tokens = 500
"""


def test_a_model_switched_to_counts_with_the_providers_ratio(
    client: TestClient, store: Store, data_dir: Path
) -> None:
    (data_dir / "config.toml").write_text(CONFIG_TOML + SMALLER, encoding="utf-8")
    conversation = client.post("/api/conversations", json={"model": "fake-model"}).json()["id"]
    store.append_messages(
        conversation, [user("a question about parsers " * 40), assistant("an answer " * 40)]
    )
    base = f"/api/conversations/{conversation}/context"
    raw = client.get(base).json()["tokens"]
    # The provider's answers showed a 1.25x larger input than the estimate.
    store.set_calibration("local", "fake-model", Calibration(ratio=1.25, samples=6))
    calibrated = client.get(base).json()["tokens"]
    assert calibrated > raw

    client.patch(f"/api/conversations/{conversation}", json={"model": "small-model"})
    switched = client.get(base).json()
    assert switched["inputBudget"] == 7500  # the smaller window is the one counted against
    assert abs(switched["tokens"] - calibrated) <= calibrated * 0.02, (switched, calibrated)
    # Its own samples, once it has them, win.
    store.set_calibration("local", "small-model", Calibration(ratio=1.0, samples=1))
    assert abs(client.get(base).json()["tokens"] - raw) <= raw * 0.02
