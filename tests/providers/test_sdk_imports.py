"""Building a provider imports its own SDK only.

The `anthropic` SDK alone costs about 38 MB of memory once imported and `openai` about
12 MB, held for the whole life of the app (the desktop window's server runs in the same
process as the window). So a configuration that only speaks to OpenAI or to an
OpenAI-compatible server must never import `anthropic`, and the reverse. Each check
runs in a fresh interpreter, since this test process has long imported both SDKs.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PROVIDER_MODULES = {
    "foldline.providers.openai": ("openai", "anthropic"),
    "foldline.providers.openai_responses": ("openai", "anthropic"),
    "foldline.providers.compat": ("openai", "anthropic"),
    "foldline.providers.anthropic": ("anthropic", "openai"),
}


def imported_sdks(module: str) -> set[str]:
    script = (
        f"import sys, {module}\n"
        "print(' '.join(sorted({'anthropic', 'openai'} & set(sys.modules))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return set(done.stdout.split())


@pytest.mark.parametrize("module", sorted(PROVIDER_MODULES))
def test_a_provider_module_imports_its_own_sdk_only(module: str) -> None:
    own, other = PROVIDER_MODULES[module]
    sdks = imported_sdks(module)
    assert own in sdks
    assert other not in sdks


def test_the_server_imports_no_sdk_until_a_provider_is_built() -> None:
    assert imported_sdks("foldline.server.app") == set()
