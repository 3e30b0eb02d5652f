"""A tool's image reaches Anthropic models inside its tool_result; other wires and other
attachments get a text description."""

from __future__ import annotations

from foldline.core.messages import AttachmentPart, Message, ToolResultPart, user
from foldline.core.tokens import ANTHROPIC_IMAGE_TOKENS, AnthropicEstimateCounter
from foldline.core.wire import to_anthropic_messages, to_openai_messages

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
    # A user's own image attachment keeps its text description (not a tool's output).
    [user_wire] = to_anthropic_messages([Message(role="user", parts=(*user("see").parts, PNG))])
    assert all(block["type"] == "text" for block in user_wire["content"])
    # Chat Completions tool messages hold text only.
    openai = to_openai_messages("", [Message(role="tool", parts=(RESULT, PNG))])
    assert [m["role"] for m in openai] == ["tool"]
    assert openai[0]["content"] == RESULT.output
