"""Local server "personalities" for `FakeProviderServer`: llama.cpp, llama-cpp-python,
Ollama, LM Studio and vLLM, each as its own code answers.

Given `FakeProviderServer(personality=...)`, the fake serves the personality's native
endpoints and changes its chat completions the way that server does. Each rule names
where it comes from in the real server:

llama.cpp (`llama-server`, tools/server/server.cpp and tools/server/README.md)
- `GET /props`: `default_generation_settings.n_ctx` (the context per slot),
  `total_slots`, `modalities.vision`, `chat_template_caps.supports_tools`;
  `GET /slots`: one entry per slot; `POST /tokenize` `{content, add_special}` →
  `{tokens}`; `POST /apply-template` `{messages}` → `{prompt}`.
- A prompt of `n_ctx` tokens or more is refused before any token is written, streamed or
  not: HTTP 400 `{"error": {"code": 400, "type": "exceed_context_size_error",
  "message": "request (N tokens) exceeds the available context size (M tokens)",
  "n_prompt_tokens": N, "n_ctx": M}}`.
- Usage is sent with `stream_options.include_usage`; each slot runs one request, the
  others queue (no interrupts).
- With `cache_prompt` (the default) a slot keeps the prompt it last evaluated and
  evaluates only what follows the common prefix of the next one.

llama-cpp-python (`python -m llama_cpp.server`, llama_cpp/server/app.py, errors.py,
settings.py, llama_cpp/llama.py)
- No `/props`; `/v1/models` lists each model `owned_by: "me"`; `POST
  /extras/tokenize/count` `{input}` → `{count}`; `n_ctx` defaults to 2048.
- Never sends `usage` in a stream (its chunks have no usage field).
- A prompt of `n_ctx` tokens or more raises `ValueError("Requested tokens (N) exceed
  context window of M")` inside the generator: non-streamed, the error formatter answers
  400 `context_length_exceeded` ("This model's maximum context length is M tokens.
  However, you requested ..."); streamed, the event stream has already started, so the
  client gets HTTP 200 and an empty body.
- One context keeps the tokens it last evaluated; `Llama.generate` reuses their longest
  common prefix with the next prompt and evaluates only the rest (its log: "N
  prefix-match hit, remaining M prompt tokens to eval").
- One model call at a time (`llama_outer_lock`); with `interrupt_requests` (default
  true) a running stream that sees another request waiting sends `[DONE]` at once and
  stops, without a `finish_reason` (`get_event_publisher`).

Ollama (docs/api.md, docs/openai.md)
- `POST /api/show` → `parameters` (`num_ctx N` when the Modelfile sets it),
  `model_info.<arch>.context_length`, `capabilities`; `GET /api/ps` lists loaded models
  with their `context_length`.
- Usage with `include_usage` (`prompt_tokens` is its `prompt_eval_count`); an over-window
  prompt is answered 400 "the input length exceeds the context length" (Ollama truncates
  silently unless told not to; this fake models the refusal, the only way it can be seen).

LM Studio (its REST API, `/api/v0`)
- `GET /api/v0/models/{id}` → `loaded_context_length`, `max_context_length`, `type`
  (`vlm` for vision), `capabilities` (`tool_use`).
- An over-window prompt (context overflow policy "stop at limit") is an error in the
  stream: "... the model is loaded with context length of only N tokens, which is not
  enough. ..."

vLLM (vllm/entrypoints/openai: serving_models.py, serving_tokenization.py, serving_engine)
- `/v1/models` entries carry `max_model_len` and `owned_by: "vllm"`; `POST /tokenize`
  takes `{model, messages}` or `{model, prompt}` → `{count, max_model_len, tokens}`.
- Prompt plus `max_tokens` over `max_model_len` is a 400 before streaming: "This model's
  maximum context length is M tokens. However, you requested N tokens (P in the
  messages, C in the completion). Please reduce the length of the messages or
  completion."
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from foldline.testing.fake_tokenizer import FakeTokenizer
from foldline.testing.wire_errors import WireError, openai_error

ServerKind = Literal["llama.cpp", "llama-cpp-python", "ollama", "lm-studio", "vllm"]


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def chatml(messages: list[dict[str, Any]]) -> str:
    """The prompt a ChatML chat template renders (llama_cpp/llama_chat_format.py
    `format_chatml`; SmolLM2's and Qwen's GGUF templates): each message framed by
    `<|im_start|>role` and `<|im_end|>`, the generation prompt last. Tool definitions are
    not part of it; an assistant's tool calls are written as their JSON."""
    out = []
    for message in messages:
        text = _text_of(message.get("content"))
        calls = message.get("tool_calls")
        if calls:
            text += json.dumps([c.get("function") for c in calls], ensure_ascii=False)
        out.append(f"<|im_start|>{message.get('role', 'user')}\n{text}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


@dataclass
class LocalPersonality:
    """How one kind of local server behaves (see the module text for each rule)."""

    kind: ServerKind
    window: int
    """The context the model is loaded with (`n_ctx`, `num_ctx`, loaded length, ...)."""
    slots: int = 1
    interrupts: bool = False
    streams_usage: bool = True
    max_context: int | None = None
    """The model's trained context (Ollama's model_info, LM Studio's max)."""
    num_ctx_set: bool = True
    """Ollama: the Modelfile sets `num_ctx` (else only the trained length is told)."""
    loaded: bool = True
    tools: bool = False
    vision: bool = False
    refuses_tools: bool = False
    """Answers a request with `tools` with Ollama's 400 for a model without tool support
    (server/routes.go: "... does not support tools")."""
    # --- what happened (for the tests) ---
    interrupted: int = 0
    """Streams this server cut off for a newer request."""
    overflows: int = 0
    most_at_once: int = 0
    """The most chat requests this server worked on at the same time."""
    cached_prompt: str = ""
    """The prompt last evaluated (llama.cpp, llama-cpp-python: one slot modelled)."""
    _running: list[asyncio.Event] = field(default_factory=list)
    _lock: asyncio.Lock | None = None
    _in_flight: int = 0

    # --- counting ----------------------------------------------------------------

    @property
    def counts_template(self) -> bool:
        """Counts the prompt its chat template renders (llama.cpp, llama-cpp-python)."""
        return self.kind in ("llama.cpp", "llama-cpp-python")

    def prompt_tokens(self, body: dict[str, Any], tokenizer: FakeTokenizer, default: int) -> int:
        if self.counts_template:
            return tokenizer.count_text(chatml(list(body.get("messages") or [])))
        return default

    def evaluate(self, body: dict[str, Any], tokenizer: FakeTokenizer) -> int | None:
        """The prompt tokens the server must evaluate for `body`: those after the common
        prefix with the prompt it evaluated last, which `body`'s prompt then replaces
        (None where the fake does not render the server's template)."""
        if not self.counts_template:
            return None
        prompt = chatml(list(body.get("messages") or []))
        common = 0
        for new, old in zip(prompt, self.cached_prompt, strict=False):
            if new != old:
                break
            common += 1
        self.cached_prompt = prompt
        return tokenizer.count_text(prompt[common:])

    # --- the window --------------------------------------------------------------

    def overflow(
        self, body: dict[str, Any], prompt: int
    ) -> WireError | Literal["empty", "in-stream"] | None:
        """How the server answers a prompt that does not fit (or tools it refuses); None
        when it takes the request."""
        if self.refuses_tools and body.get("tools"):
            return openai_error(
                400,
                f"registry.ollama.ai/library/{body.get('model')}:latest does not support tools",
            )
        requested = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        stream = bool(body.get("stream"))
        if self.kind == "vllm":
            if prompt + int(requested) <= self.window:
                return None
            self.overflows += 1
            return openai_error(
                400,
                f"This model's maximum context length is {self.window} tokens. However, you "
                f"requested {prompt + int(requested)} tokens ({prompt} in the messages, "
                f"{requested} in the completion). Please reduce the length of the messages "
                "or completion.",
                error_type="BadRequestError",
            )
        if prompt < self.window:
            return None
        self.overflows += 1
        if self.kind == "llama.cpp":
            return WireError(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": f"request ({prompt} tokens) exceeds the available context "
                        f"size ({self.window} tokens)",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": prompt,
                        "n_ctx": self.window,
                    }
                },
            )
        if self.kind == "llama-cpp-python":
            if stream:
                return "empty"
            return openai_error(
                400,
                f"This model's maximum context length is {self.window} tokens. However, you "
                f"requested {prompt + int(requested)} tokens ({prompt} in the messages, "
                f"{requested} in the completion). Please reduce the length of the messages "
                "or completion.",
                param="messages",
                code="context_length_exceeded",
            )
        if self.kind == "lm-studio" and stream:
            return "in-stream"
        if self.kind == "lm-studio":
            return openai_error(400, self.lm_studio_overflow(prompt))
        return openai_error(
            400, "the input length exceeds the context length", error_type="api_error"
        )

    def lm_studio_overflow(self, prompt: int) -> str:
        return (
            f"Trying to keep the first {prompt} tokens when context the overflows. However, "
            f"the model is loaded with context length of only {self.window} tokens, which is "
            "not enough. Try to load the model with a larger context length, or provide a "
            "shorter input"
        )

    # --- the slot ----------------------------------------------------------------

    async def take_slot(self) -> asyncio.Event:
        """Wait for a slot (interrupting the running stream where the server does);
        the event returned is set when this stream must stop for a newer one."""
        if self._lock is None:
            self._lock = asyncio.Lock() if self.slots == 1 else None
        cut = asyncio.Event()
        if self.interrupts:
            for running in self._running:
                running.set()
        if self._lock is not None:
            await self._lock.acquire()
        self._running.append(cut)
        self._in_flight += 1
        self.most_at_once = max(self.most_at_once, self._in_flight)
        return cut

    def free_slot(self, cut: asyncio.Event) -> None:
        self._in_flight -= 1
        if cut in self._running:
            self._running.remove(cut)
        if self._lock is not None and self._lock.locked():
            self._lock.release()

    # --- native endpoints --------------------------------------------------------

    def routes(self, tokenizer: FakeTokenizer, model_ids: list[str]) -> list[Route]:
        personality = self

        async def props(request: Request) -> Response:
            return JSONResponse(
                {
                    "default_generation_settings": {"n_ctx": personality.window, "params": {}},
                    "total_slots": personality.slots,
                    "model_path": f"/models/{model_ids[0] if model_ids else 'model'}.gguf",
                    "chat_template": "{% for message in messages %}<|im_start|>...",
                    "chat_template_caps": {"supports_tools": personality.tools},
                    "modalities": {"vision": personality.vision, "audio": False},
                }
            )

        async def slots(request: Request) -> Response:
            return JSONResponse(
                [
                    {"id": i, "n_ctx": personality.window, "is_processing": False}
                    for i in range(personality.slots)
                ]
            )

        async def tokenize(request: Request) -> Response:
            return JSONResponse(_tokenized(personality, tokenizer, await request.json()))

        async def apply_template(request: Request) -> Response:
            body = await request.json()
            return JSONResponse({"prompt": chatml(list(body.get("messages") or []))})

        async def extras_count(request: Request) -> Response:
            body = await request.json()
            return JSONResponse({"count": tokenizer.count_text(str(body.get("input", "")))})

        async def listed(request: Request) -> Response:
            return JSONResponse(_model_list(personality, model_ids))

        async def show(request: Request) -> Response:
            body = await request.json()
            if body.get("model") not in model_ids and f"{body.get('model')}:latest" not in (
                model_ids
            ):
                return JSONResponse({"error": f"model '{body.get('model')}' not found"}, 404)
            capabilities = ["completion"] + (["tools"] if personality.tools else [])
            capabilities += ["vision"] if personality.vision else []
            return JSONResponse(
                {
                    "parameters": f"num_ctx {personality.window}\nstop <|im_end|>"
                    if personality.num_ctx_set
                    else "stop <|im_end|>",
                    "model_info": {
                        "general.architecture": "llama",
                        "llama.context_length": personality.max_context or personality.window,
                    },
                    "capabilities": capabilities,
                }
            )

        async def ps(request: Request) -> Response:
            models = [
                {"name": m, "model": m, "context_length": personality.window}
                for m in model_ids
                if personality.loaded
            ]
            return JSONResponse({"models": models})

        async def lm_model(request: Request) -> Response:
            model_id = request.path_params["model_id"]
            if model_id not in model_ids:
                return JSONResponse({"error": f"Model {model_id} not found"}, 404)
            entry: dict[str, Any] = {
                "id": model_id,
                "object": "model",
                "type": "vlm" if personality.vision else "llm",
                "state": "loaded" if personality.loaded else "not-loaded",
                "max_context_length": personality.max_context or personality.window,
                "capabilities": ["tool_use"] if personality.tools else [],
            }
            if personality.loaded:
                entry["loaded_context_length"] = personality.window
            return JSONResponse(entry)

        table: dict[ServerKind, list[Route]] = {
            "llama.cpp": [
                Route("/props", props, methods=["GET"]),
                Route("/slots", slots, methods=["GET"]),
                Route("/tokenize", tokenize, methods=["POST"]),
                Route("/apply-template", apply_template, methods=["POST"]),
            ],
            "llama-cpp-python": [
                Route("/v1/models", listed, methods=["GET"]),
                Route("/extras/tokenize/count", extras_count, methods=["POST"]),
            ],
            "ollama": [
                Route("/api/show", show, methods=["POST"]),
                Route("/api/ps", ps, methods=["GET"]),
            ],
            "lm-studio": [Route("/api/v0/models/{model_id:path}", lm_model, methods=["GET"])],
            "vllm": [
                Route("/v1/models", listed, methods=["GET"]),
                Route("/tokenize", tokenize, methods=["POST"]),
            ],
        }
        return table[self.kind]


def llama_cpp(n_ctx: int = 4096, slots: int = 1, *, tools: bool = False) -> LocalPersonality:
    """llama.cpp's `llama-server -c n_ctx -np slots` (`--jinja` for tools)."""
    return LocalPersonality("llama.cpp", n_ctx, slots=slots, tools=tools)


def llama_cpp_python(n_ctx: int = 2048, *, interrupts: bool = True) -> LocalPersonality:
    """`python -m llama_cpp.server` with its defaults (`n_ctx` 2048, interrupts on)."""
    return LocalPersonality(
        "llama-cpp-python", n_ctx, slots=1, interrupts=interrupts, streams_usage=False
    )


def ollama(num_ctx: int = 4096, trained: int = 131_072, *, loaded: bool = True) -> LocalPersonality:
    return LocalPersonality("ollama", num_ctx, max_context=trained, loaded=loaded, tools=True)


def lm_studio(loaded: int = 4096, maximum: int = 32_768) -> LocalPersonality:
    return LocalPersonality("lm-studio", loaded, max_context=maximum, tools=True)


def vllm(max_model_len: int = 8192) -> LocalPersonality:
    return LocalPersonality("vllm", max_model_len, slots=256)


class EmptyStream:
    """HTTP 200, an event-stream content type, and no event at all (llama-cpp-python's
    answer to a streamed prompt over its window)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _tokenized(
    personality: LocalPersonality, tokenizer: FakeTokenizer, body: dict[str, Any]
) -> dict[str, Any]:
    """A `/tokenize` answer: vLLM's (a count, and a chat's messages and tools rendered
    when given) or llama.cpp's (the tokens of `content`)."""
    if personality.kind == "vllm":
        if "messages" in body:
            chat = {"model": body.get("model"), "messages": body["messages"]}
            if body.get("tools"):
                chat["tools"] = body["tools"]
            count = tokenizer.count_request(chat, "openai")
        else:
            count = tokenizer.count_text(str(body.get("prompt", "")))
        return {"count": count, "max_model_len": personality.window, "tokens": [0] * count}
    count = tokenizer.count_text(str(body.get("content", "")))
    return {"tokens": list(range(count))}


def _model_list(personality: LocalPersonality, model_ids: list[str]) -> dict[str, Any]:
    """`GET /v1/models` as each server kind answers it: llama-cpp-python owns its models
    as "me", vLLM states `max_model_len`."""
    owner = {"llama-cpp-python": "me", "vllm": "vllm"}.get(personality.kind, "library")
    data = []
    for model_id in model_ids:
        entry: dict[str, Any] = {
            "id": model_id,
            "object": "model",
            "created": 1_760_000_000,
            "owned_by": owner,
        }
        if personality.kind == "vllm":
            entry["max_model_len"] = personality.window
        if personality.kind == "llama-cpp-python":
            entry["permissions"] = []
        data.append(entry)
    return {"object": "list", "data": data}
