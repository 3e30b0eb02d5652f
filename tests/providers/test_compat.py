"""Context-window discovery on OpenAI-compatible servers, against local fakes of each."""

from __future__ import annotations

import httpx2
import pytest

from foldline.providers.compat import (
    OLLAMA_DEFAULT_CONTEXT,
    LocalServer,
    detect_local_servers,
    discover_context_window,
    list_server_models,
    server_root,
)

from .fake_http import FakeHTTPServer, JSONReply, closed_port_url


@pytest.mark.parametrize(
    ("base_url", "root"),
    [
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434"),
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434"),
        ("http://host:8080", "http://host:8080"),
        ("http://host/proxy/v1", "http://host/proxy"),
    ],
)
def test_server_root(base_url: str, root: str) -> None:
    assert server_root(base_url) == root


async def test_ollama_loaded_model_reports_its_real_context(fake: FakeHTTPServer) -> None:
    fake.script(
        "GET",
        "/api/ps",
        JSONReply(
            200,
            {
                "models": [
                    {"name": "other:7b", "model": "other:7b", "context_length": 2048},
                    {
                        "name": "llama3.1:latest",
                        "model": "llama3.1:latest",
                        "context_length": 32768,
                    },
                ]
            },
        ),
    )
    window = await discover_context_window(f"{fake.url}/v1", "llama3.1")

    # /api/show is still asked (for tools and vision), but the loaded context wins.
    assert window == 32768


async def test_ollama_num_ctx_parameter_wins_over_trained_length(fake: FakeHTTPServer) -> None:
    fake.script("GET", "/api/ps", JSONReply(200, {"models": []}))
    fake.script(
        "POST",
        "/api/show",
        JSONReply(
            200,
            {
                "parameters": 'num_ctx                        16384\nstop "<|eot_id|>"',
                "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
            },
        ),
    )
    window = await discover_context_window(f"{fake.url}/v1", "llama3.1:8b")

    assert window == 16384
    (show,) = fake.requests_to("/api/show")
    assert show.body == {"model": "llama3.1:8b"}


async def test_ollama_unloaded_without_num_ctx_is_conservative(fake: FakeHTTPServer) -> None:
    # The model would be loaded with the server's default window, which the API does not
    # report; the trained 131072 would let Ollama silently cut the prompt's start.
    fake.script("GET", "/api/ps", JSONReply(200, {"models": []}))
    fake.script(
        "POST",
        "/api/show",
        JSONReply(
            200,
            {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 131072}},
        ),
    )
    assert await discover_context_window(f"{fake.url}/v1", "qwen2.5") == OLLAMA_DEFAULT_CONTEXT

    fake.script("GET", "/api/ps", JSONReply(200, {"models": []}))
    fake.script(
        "POST",
        "/api/show",
        JSONReply(
            200, {"model_info": {"general.architecture": "tiny", "tiny.context_length": 2048}}
        ),
    )
    assert await discover_context_window(f"{fake.url}/v1", "tiny") == 2048


async def test_lmstudio_loaded_then_max_context(fake: FakeHTTPServer) -> None:
    fake.script(
        "GET",
        "/api/v0/models/qwen/qwen3-8b",
        JSONReply(
            200,
            {
                "id": "qwen/qwen3-8b",
                "state": "loaded",
                "max_context_length": 40960,
                "loaded_context_length": 8192,
            },
        ),
        JSONReply(200, {"id": "qwen/qwen3-8b", "state": "not-loaded", "max_context_length": 40960}),
    )
    assert await discover_context_window(f"{fake.url}/v1", "qwen/qwen3-8b") == 8192
    assert await discover_context_window(f"{fake.url}/v1", "qwen/qwen3-8b") == 40960


async def test_llamacpp_props(fake: FakeHTTPServer) -> None:
    fake.script(
        "GET",
        "/props",
        JSONReply(200, {"default_generation_settings": {"n_ctx": 12288}, "total_slots": 1}),
    )
    assert await discover_context_window(f"{fake.url}/v1", "anything") == 12288


async def test_vllm_models_listing(fake: FakeHTTPServer) -> None:
    listing = {
        "object": "list",
        "data": [
            {"id": "meta-llama/Llama-3.1-8B-Instruct", "object": "model", "max_model_len": 65536},
            {"id": "other", "object": "model", "max_model_len": 4096},
        ],
    }
    fake.script("GET", "/v1/models", JSONReply(200, listing))
    window = await discover_context_window(f"{fake.url}/v1", "meta-llama/Llama-3.1-8B-Instruct")
    assert window == 65536


async def test_a_server_that_does_not_tell(fake: FakeHTTPServer) -> None:
    fake.script("GET", "/v1/models", JSONReply(200, {"data": [{"id": "a"}, {"id": "b"}]}))
    assert await discover_context_window(f"{fake.url}/v1", "a") is None
    # Every kind of server was asked before giving up.
    asked = {request.path for request in fake.requests}
    assert {"/api/ps", "/api/show", "/api/v0/models/a", "/props", "/v1/models"} <= asked


async def test_malformed_answers_are_ignored(fake: FakeHTTPServer) -> None:
    fake.script("GET", "/api/ps", JSONReply(200, ["not", "a", "dict"]))
    fake.script("POST", "/api/show", JSONReply(200, {"parameters": "num_ctx lots"}))
    fake.script("GET", "/props", JSONReply(200, {"default_generation_settings": {"n_ctx": -1}}))
    assert await discover_context_window(f"{fake.url}/v1", "m") is None


async def test_nothing_listening_gives_none() -> None:
    assert await discover_context_window(f"{closed_port_url()}/v1", "m") is None


async def test_a_slow_server_gives_none(fake: FakeHTTPServer) -> None:
    fake.script("GET", "/api/ps", JSONReply(200, {"models": []}, delay=2.0))
    fake.script("POST", "/api/show", JSONReply(200, {}, delay=2.0))
    fake.script("GET", "/props", JSONReply(200, {"n_ctx": 4096}, delay=2.0))
    assert await discover_context_window(f"{fake.url}/v1", "m", timeout=0.1) is None


async def test_discovery_with_a_given_http_client() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/props":
            return httpx2.Response(200, json={"n_ctx": 2048})
        return httpx2.Response(404)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        window = await discover_context_window("http://server.test/v1", "m", http_client=client)
        assert not client.is_closed  # the caller's client stays open
    assert window == 2048


async def test_list_models_and_detect_local_servers(fake: FakeHTTPServer) -> None:
    fake.script(
        "GET", "/v1/models", JSONReply(200, {"data": [{"id": "llama3.1:8b"}, {"id": "qwen3:4b"}]})
    )
    found = await detect_local_servers(
        [("ollama", f"{fake.url}/v1"), ("lmstudio", f"{closed_port_url()}/v1")]
    )
    assert found == [LocalServer("ollama", f"{fake.url}/v1", ("llama3.1:8b", "qwen3:4b"))]
    assert await list_server_models(f"{fake.url}/v1") is None  # 404 once the script is used
