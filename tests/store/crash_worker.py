"""A writer that the crash tests SIGKILL at an arbitrary moment (run as a subprocess).

It prints `begin ...` just before each write and a report just AFTER the write has
committed, so every report the parent reads names something that must survive the kill,
and a parent that kills on reading a `begin` line hits the write while it is under way.
Usage:

    python crash_worker.py stream DB   # streamed answers: append, then many update_message
    python crash_worker.py fold DB     # folds that each also rewrite many messages
    python crash_worker.py import DB   # an import of 20,000 messages, batch by batch
"""

from __future__ import annotations

import sys

from foldline.core.messages import ToolResultPart, assistant, tool_results, user
from foldline.core.state import CompactionState, SummarizedRange
from foldline.store import Store

PRUNED_PER_FOLD = 60


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def stream(store: Store) -> None:
    conversation = store.create_conversation(title="crash: stream")
    say(f"conversation {conversation.id}")
    for turn in range(10_000):
        say("begin append")
        question = store.append_message(conversation.id, user(f"question {turn}"))
        say(f"message {question.id}")
        say("begin append")
        answer = store.append_message(conversation.id, assistant(""), status="streaming")
        say(f"message {answer.id}")
        text = ""
        for token in range(60):
            text += f"t{turn}.{token} "
            say("begin flush")
            store.update_message(answer.id, message=assistant(text))
            say(f"flushed {answer.id} {len(text)}")
        say("begin complete")
        store.update_message(answer.id, status="complete")
        say(f"complete {answer.id}")


def fold(store: Store) -> None:
    conversation = store.create_conversation(title="crash: fold")
    messages = []
    for n in range(PRUNED_PER_FOLD):
        messages.append(user(f"run {n}"))
        messages.append(
            tool_results(ToolResultPart(call_id=f"c{n}", name="shell", output=f"out {n}"))
        )
    records = store.append_messages(conversation.id, messages)
    tool_ids = [r.id for r in records if r.message.role == "tool"]
    say(f"conversation {conversation.id}")
    for version in range(1, 100_000):
        # Every fold marks every tool message with its own version: after a crash they
        # must all carry the version of the last committed fold, never a mix.
        marker = f"fold-{version}"
        pruned = {
            message_id: tool_results(
                ToolResultPart(call_id="c", name="shell", output="out", compacted_at=marker)
            )
            for message_id in tool_ids
        }
        state = CompactionState(
            version=version,
            compacted_at=marker,
            summary_message=f"summary {version} " * 50,
            api_start_index=min(version, len(records)),
            summarized_range=SummarizedRange(from_index=0, to_index=1, message_count=1),
            strategy="structured",
            trigger="auto",
            tokens_before=version,
            tokens_after=1,
        )
        say("begin fold")
        store.commit_fold(conversation.id, state, expected_version=version - 1, pruned=pruned)
        say(f"fold {version}")


def import_big(store: Store, path: str) -> None:
    """Import an export of 20,000 messages; `batch N` after each batch has committed."""
    from foldline.store import export, import_reader
    from foldline.store.importing import ConversationImport

    scratch = Store(path + ".source")
    source = scratch.create_conversation(title="crash: import")
    scratch.append_messages(
        source.id, [user(f"q {n}") if n % 2 == 0 else assistant(f"a {n}") for n in range(20_000)]
    )
    exported = path + ".json"
    with open(exported, "wb") as out:
        export.write_export(scratch, source.id, out)
    scratch.close()
    original = ConversationImport.add_messages
    batches = 0

    def add_messages(self, messages):  # type: ignore[no-untyped-def]
        nonlocal batches
        original(self, messages)
        batches += 1
        say(f"batch {batches} {self.record.id}")

    ConversationImport.add_messages = add_messages  # type: ignore[method-assign]
    say("begin import")
    with open(exported, "rb") as stream:
        record = import_reader.import_stream(store, stream)
    say(f"imported {record.id}")


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    with Store(path) as opened:
        if mode == "import":
            import_big(opened, path)
        else:
            {"stream": stream, "fold": fold}[mode](opened)
