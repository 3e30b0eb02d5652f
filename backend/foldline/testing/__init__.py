"""Test doubles shipped with Foldline: a scripted model and fake provider HTTP servers.

- `ScriptedModel`: a fake `Provider` answering from a queue of steps (`text_step`,
  `tool_step(call(...))`, `error_step(ProviderError(...))`, callables), recording every
  request in `.calls`; `assert_complete()` fails when steps are left.
- `ConversationTree` (`tree_model`): a reference model of the message tree and its
  fold pointers, which property tests drive beside the store.
- `FakeProviderServer`: the Anthropic Messages and OpenAI Chat Completions APIs served
  on loopback for the real SDKs, with context windows, tool pairing, prompt caching and
  injected failures (`fail_next`), counted by its own `FakeTokenizer`; its models
  endpoints list `FakeModel`s in each API's shape.
- `loop_guard.LoopGuard` (imported from its module, as it needs the store): makes a
  store raise when it is called on an event loop, for the tests of the store rule.

Used by Foldline's tests, benchmarks and demos; never imported by the application.
"""

from foldline.testing.codec import Wire, decode_request, encode_request
from foldline.testing.failures import Failure, FailureKind, RecordedRequest
from foldline.testing.fake_models import SAMPLE_CLAUDE_MODELS, FakeModel
from foldline.testing.fake_tokenizer import Element, FakeTokenizer
from foldline.testing.prompt_cache import CacheOutcome, PromptCache
from foldline.testing.scripted import ScriptedModel, ScriptExhausted
from foldline.testing.server import DEFAULT_LIMITS, FakeProviderServer, Responder
from foldline.testing.steps import (
    MALFORMED_SUMMARY,
    SUMMARY_HEADINGS,
    Reply,
    Step,
    StructuredSummary,
    call,
    echo_reply,
    error_step,
    looks_like_summary_request,
    request_text,
    structured_summary,
    summary_source,
    text_step,
    tool_step,
    usage_step,
)
from foldline.testing.validation import ModelLimits
from foldline.testing.wire_errors import WireError

__all__ = [
    "DEFAULT_LIMITS",
    "MALFORMED_SUMMARY",
    "SAMPLE_CLAUDE_MODELS",
    "SUMMARY_HEADINGS",
    "CacheOutcome",
    "Element",
    "Failure",
    "FailureKind",
    "FakeModel",
    "FakeProviderServer",
    "FakeTokenizer",
    "ModelLimits",
    "PromptCache",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ScriptExhausted",
    "ScriptedModel",
    "Step",
    "StructuredSummary",
    "Wire",
    "WireError",
    "call",
    "decode_request",
    "echo_reply",
    "encode_request",
    "error_step",
    "looks_like_summary_request",
    "request_text",
    "structured_summary",
    "summary_source",
    "text_step",
    "tool_step",
    "usage_step",
]
