"""A tool's image reaches Anthropic models inside its tool_result, and models on the OpenAI
wire that accept images in a user message right after the batch's tool messages; other
attachments get a text description."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import message_soups

from foldline.core.messages import (
    AttachmentPart,
    Message,
    ToolCallPart,
    ToolResultPart,
    assistant,
    user,
)
from foldline.core.tokens import (
    ANTHROPIC_IMAGE_TOKENS,
    OPENAI_IMAGE_PART_TOKENS,
    TOKENS_PER_MESSAGE,
    AnthropicEstimateCounter,
    OpenAIChatCounter,
    count_openai_chat_payload,
)
from foldline.core.view import repair_pairs, view_message
from foldline.core.wire import to_anthropic_messages, to_openai_messages
from foldline.testing.validation import check_structure
from foldline.tokenizers import get_encoder

PNG = AttachmentPart(name="shot.png", media_type="image/png", data_base64="iVBORw0KGgo=")
RESULT = ToolResultPart(call_id="c1", name="srv__shot", output="[image shot.png (image/png)]")


def test_an_image_after_a_result_goes_inside_it_for_anthropic() -> None:
    [wire] = to_anthropic_messages([Message(role="tool", parts=(RESULT, PNG))])
    [block] = wire["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "c1"
    assert block["content"] == [
        {"type": "text", "text": "[image shot.png (image/png)]"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
    ]


def test_its_cost_is_counted() -> None:
    counter = AnthropicEstimateCounter(lambda text: len(text.split()))
    with_image = counter.count_message(Message(role="tool", parts=(RESULT, PNG)))
    without = counter.count_message(Message(role="tool", parts=(RESULT,)))
    assert with_image - without == ANTHROPIC_IMAGE_TOKENS


def test_other_attachments_and_other_wires_are_described_in_text() -> None:
    pdf = AttachmentPart(name="a.pdf", media_type="application/pdf", data_base64="JVBERi0=")
    [wire] = to_anthropic_messages([Message(role="tool", parts=(RESULT, pdf))])
    assert wire["content"][0]["content"] == RESULT.output
    assert "a.pdf" in wire["content"][1]["text"]
    # A person's own image is an image block after a label naming it.
    [user_wire] = to_anthropic_messages([Message(role="user", parts=(*user("see").parts, PNG))])
    assert [block["type"] for block in user_wire["content"]] == ["text", "text", "image"]
    # Chat Completions tool messages hold text only.
    openai = to_openai_messages("", [Message(role="tool", parts=(RESULT, PNG))])
    assert [m["role"] for m in openai] == ["tool"]
    assert openai[0]["content"] == RESULT.output


# --- OpenAI wire: images as a user message after the batch ---------------------------

GIF = AttachmentPart(name="b.gif", media_type="image/gif", data_base64="R0lGODlh")
CALLS = assistant("", ToolCallPart(id="c1", name="srv__shot"), ToolCallPart(id="c2", name="x"))
RESULT_2 = ToolResultPart(call_id="c2", name="x", output="[image b.gif (image/gif)]")


def _image_message(*images: AttachmentPart) -> dict:
    names = ", ".join(image.name for image in images)
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": f"Images returned by the tools above: {names}"},
            *(
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:{i.media_type};base64,{i.data_base64}"},
                }
                for i in images
            ),
        ],
    }


def test_a_batch_of_images_follows_its_tool_messages_as_one_user_message() -> None:
    batch = Message(role="tool", parts=(RESULT, PNG, RESULT_2, GIF))
    wire = to_openai_messages("sys", [user("go"), CALLS, batch, assistant("seen")], images=True)
    assert [m["role"] for m in wire] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
    ]
    assert [m["content"] for m in wire[3:5]] == [RESULT.output, RESULT_2.output]
    assert wire[5] == _image_message(PNG, GIF)
    assert check_structure({"model": "gpt-4o", "messages": wire}, "openai") is None


def test_without_images_or_for_other_files_nothing_is_added() -> None:
    pdf = AttachmentPart(name="a.pdf", media_type="application/pdf", data_base64="JVBERi0=")
    svg = AttachmentPart(name="a.svg", media_type="image/svg+xml", data_base64="PHN2Zz4=")
    no_data = AttachmentPart(name="c.png", media_type="image/png", text="not binary")
    batch = Message(role="tool", parts=(RESULT, pdf, svg, no_data))
    assert [m["role"] for m in to_openai_messages("", [CALLS, batch], images=True)] == [
        "assistant",
        "tool",
    ]
    # A model that does not take images gets the result's text line only.
    with_png = Message(role="tool", parts=(RESULT, PNG))
    assert [m["role"] for m in to_openai_messages("", [CALLS, with_png])] == ["assistant", "tool"]


def test_a_pruned_result_sends_no_image() -> None:
    pruned = RESULT.model_copy(update={"compacted_at": "t"})
    kept = Message(role="tool", parts=(pruned, PNG, RESULT_2, GIF))
    wire = to_openai_messages("", [CALLS, view_message(kept)], images=True)
    assert wire[-1] == _image_message(GIF)
    only_pruned = Message(role="tool", parts=(pruned, PNG))
    calls = assistant("", ToolCallPart(id="c1", name="srv__shot"))
    assert to_openai_messages("", [calls, view_message(only_pruned)], images=True)[-1]["role"] == (
        "tool"
    )


def test_image_messages_wait_until_the_run_of_tool_messages_ends() -> None:
    # Two tool messages answering one assistant message (as stored before repair merged
    # them): nothing may come between them, so both image messages come after.
    first = Message(role="tool", parts=(RESULT, PNG))
    second = Message(role="tool", parts=(RESULT_2, GIF))
    wire = to_openai_messages("", [CALLS, first, second], images=True)
    assert [m["role"] for m in wire] == ["assistant", "tool", "tool", "user", "user"]
    assert wire[3:] == [_image_message(PNG), _image_message(GIF)]
    assert check_structure({"model": "gpt-4o", "messages": wire}, "openai") is None


def test_image_parts_are_counted_as_sent() -> None:
    encoder = get_encoder("o200k_base")
    batch = Message(role="tool", parts=(RESULT, PNG, RESULT_2, GIF))
    history = [user("go"), CALLS, batch]
    with_images = OpenAIChatCounter(encoder, images=True)
    without = OpenAIChatCounter(encoder)
    wire = to_openai_messages("sys", history, images=True)
    assert with_images.count_request("sys", history, []) == count_openai_chat_payload(
        encoder, wire, None
    )
    extra = with_images.count_message(batch) - without.count_message(batch)
    text = wire[-1]["content"][0]["text"]
    # Framing, the role, the text line and a fixed estimate per image.
    framing = TOKENS_PER_MESSAGE + len(encoder.encode("user"))
    assert extra == framing + len(encoder.encode(text)) + 2 * OPENAI_IMAGE_PART_TOKENS


@st.composite
def soups_with_images(draw: st.DrawFn) -> list[Message]:
    messages = draw(message_soups())
    out = []
    for message in messages:
        if message.role == "tool" and message.parts:
            parts: list = []
            for part in message.parts:
                parts.append(part)
                if draw(st.booleans()):
                    parts.append(PNG)
            if draw(st.booleans()):
                parts[0] = parts[0].model_copy(update={"compacted_at": "t"})
            message = message.model_copy(update={"parts": tuple(parts)})
        out.append(message)
    return out


@given(soups_with_images())
@settings(max_examples=300, deadline=None)
def test_repaired_views_with_images_are_valid_openai_requests(messages: list[Message]) -> None:
    view = repair_pairs([view_message(m) for m in messages])
    wire = to_openai_messages("sys", [user("start"), *view], images=True)
    assert check_structure({"model": "gpt-4o", "messages": wire}, "openai") is None

    # Each tool image message directly follows a run of tool messages (or another one);
    # a person's own files (a user message with parts) are not tool images.
    def tool_images(message: dict) -> bool:
        content = message["content"]
        return isinstance(content, list) and content[0]["text"].startswith("Images returned")

    for index, message in enumerate(wire):
        if tool_images(message):
            assert wire[index - 1]["role"] == "tool" or tool_images(wire[index - 1])
    # Every image sent belongs to a result that was not pruned.
    sent = sum(tool_images(m) for m in wire)
    assert sent <= sum(
        any(isinstance(p, AttachmentPart) for p in m.parts) for m in view if m.role == "tool"
    )
