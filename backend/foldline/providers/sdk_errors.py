"""The one translation of the SDKs' exceptions into `ProviderError`s.

The anthropic and openai SDKs are generated from the same base: both raise
`APIStatusError` (an HTTP error response), `APIConnectionError` (no answer, or not in
time) and `APIError` (an error object sent inside the stream), and a connection cut in
the middle of a stream surfaces as the transport's own `httpx2.HTTPError`. The three
providers wrap their request and stream in `sdk_errors(name, sdk, base_url)` and pass their SDK's
module, so neither SDK is imported for the other's provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import httpx2

from foldline.providers.base import ProviderError
from foldline.providers.errors import connection_error, provider_error


@contextmanager
def sdk_errors(name: str, sdk: ModuleType, base_url: str) -> Iterator[None]:
    """Raise a `ProviderError` for each SDK or transport failure of the block, naming
    the provider `name` where the SDK's message does not say who failed, and the
    server's `base_url` where it could not be reached."""
    try:
        yield
    except sdk.APIStatusError as error:
        raise provider_error(
            error.status_code, error.body, error.response.headers, error.message
        ) from error
    except sdk.APIConnectionError as error:
        # Includes APITimeoutError: the server did not answer in time.
        raise connection_error(name, base_url, error.message) from error
    except sdk.APIError as error:
        # An error object sent inside the stream (no HTTP status of its own).
        raise provider_error(None, error.body, None, error.message) from error
    except httpx2.HTTPError as error:
        raise ProviderError(
            "unavailable", f"{name}: the stream was interrupted ({error})"
        ) from error
