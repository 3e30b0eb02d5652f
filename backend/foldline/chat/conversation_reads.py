"""What the chat service reads without starting anything: a conversation's view and its
numbers (the meter, Model view), what a manual fold or an edit would do, and a project's
size. `ChatService` takes these from `ConversationReads`, so the service's own file is
about starting, running and stopping turns."""

from __future__ import annotations

from collections.abc import Callable

from foldline.api.schemas_context import CompactionPreview, ContextOut
from foldline.api.schemas_messages import EditPreview
from foldline.chat.context import ContextLoader, ConversationContext
from foldline.chat.folding import manual_fold_settings
from foldline.chat.person_message import WrongMessage
from foldline.chat.projects import (
    ProjectOverCap,
    conversation_config,
    conversation_project,
    model_name,
    over_cap_message,
    project_context,
    serving_config,
)
from foldline.config import AppConfig
from foldline.core.budget import Budget
from foldline.core.compaction import planned_split
from foldline.core.messages import HistoryWindow
from foldline.core.projects import compose_system, project_cap
from foldline.core.tree import FoldLink, fold_chain
from foldline.core.view import build_api_messages
from foldline.providers.registry import ResolvedModel, resolve_model
from foldline.store import Store
from foldline.tokenizers import Wire


def counting_wire(model: ResolvedModel) -> Wire:
    """The wire a model's requests go over, so its view is counted as its turns send
    it (a Responses-API model's count is the Responses payload's, not the Chat one's)."""
    if model.provider_kind == "anthropic":
        return "anthropic"
    return "openai-responses" if model.api == "responses" else "openai"


class ConversationReads:
    """The read-only half of the chat service (it runs in a worker thread: every method
    reads the store)."""

    store: Store
    loader: ContextLoader
    config_provider: Callable[[], AppConfig]

    def _load(
        self,
        conversation_id: str,
        *,
        with_messages: bool = True,
        model: str | None = None,
        provider: str | None = None,
    ) -> ConversationContext:
        conversation = self.store.get_conversation(conversation_id)
        project = conversation_project(self.store, conversation)
        config = conversation_config(self.config_provider(), conversation, project)
        if model is not None:
            config = serving_config(config, model, provider)
        name = model or model_name(config, conversation, project)
        wire = counting_wire(resolve_model(config, name))
        return self.loader.load(
            config, conversation_id, wire=wire, with_messages=with_messages, model_override=model
        )

    def check_project_cap(self, conversation_id: str) -> None:
        """ProjectOverCap when the conversation's project sends more than its cap for the
        conversation's model (a turn is then refused before anything is written)."""
        ctx = self._load(conversation_id)
        if ctx.project is not None and ctx.project_over_cap:
            raise ProjectOverCap(
                over_cap_message(
                    ctx.project.name, ctx.project.tokens, ctx.project.cap_tokens, ctx.model.model
                )
            )

    def project_size(self, project_id: str) -> tuple[int, int, str]:
        """(tokens, cap, model): what the project's shared context takes in a request of
        its default model (else the app's), and its cap there."""
        config = self.config_provider()
        project = self.store.get_project(project_id)
        model = resolve_model(config, project.model or config.default_model or "")
        wire = counting_wire(model)
        counter, _ratio = self.loader.counter(model, wire)
        shared = project_context(self.store, project)
        tokens = counter.count_request(compose_system("", shared), [], []) - counter.count_request(
            "", [], []
        )
        budget = Budget(
            context_window=model.context_window,
            max_output_tokens=model.output_reserve,
            input_limit=model.input_limit,
            working_budget=model.working_budget,
        )
        return tokens, project_cap(budget.input_budget), model.model

    def load_context(self, conversation_id: str) -> ConversationContext:
        """The model's view of the conversation as the next call would see it."""
        return self._load(conversation_id)

    def context(
        self,
        conversation_id: str,
        *,
        include_messages: bool = True,
        model: str | None = None,
        provider: str | None = None,
    ) -> ContextOut:
        """The model's view and its numbers; with `model` (and the `provider` serving
        it), as they would be after switching the conversation to that model (the count
        its first turn's gate will make)."""
        ctx = self._load(
            conversation_id, with_messages=include_messages, model=model, provider=provider
        )
        return ctx.context_out(include_messages=include_messages)

    def edit_preview(self, conversation_id: str, message_id: str) -> EditPreview:
        """What editing `message_id` would do to the model's view: which folds of the
        current stack the new branch keeps (those whose last message comes before it),
        and how many tokens its view holds before the new message."""
        record = self.store.message_on_path(conversation_id, message_id)
        if record.message.role != "user":
            raise WrongMessage("Only your own messages can be edited.")
        ctx = self._load(conversation_id)
        records = self.store.list_compactions(conversation_id, active_path_only=True)
        states = {r.state.version: r.state for r in records}
        links = {
            r.state.version: FoldLink(r.state.version, r.parent_version, r.last_message_id)
            for r in records
        }
        chain = fold_chain(ctx.state.version if ctx.state else 0, links)
        kept = [link for link in chain if states[link.version].api_start_index <= record.seq]
        state = states[kept[0].version] if kept else None
        start = state.api_start_index if state else 0
        before = self.store.list_messages(conversation_id, offset=start, limit=record.seq - start)
        pins = [pin for pin in ctx.pins if pin.index < record.seq]
        window = HistoryWindow(start, tuple(r.message for r in before))
        view = build_api_messages(window, state, tuple(pins))
        return EditPreview(
            folded=record.seq < ctx.start_index,
            folds_kept=len(kept),
            folds_dropped=len(chain) - len(kept),
            view_tokens=ctx.counter.count_request(ctx.system, view, ctx.tools),
            context_window=ctx.budget.context_window,
        )

    def preview_compaction(
        self, conversation_id: str, keep_recent_tokens: int | None = None
    ) -> CompactionPreview:
        """What a manual fold now would summarize: the messages and their tokens."""
        ctx = self._load(conversation_id)
        ctx.settings = manual_fold_settings(ctx.settings, keep_recent_tokens)
        split = planned_split(ctx.fold_inputs(now="", model=None))
        if split is None:
            return CompactionPreview(
                messages=0, tokens=0, from_index=ctx.start_index, to_index=None
            )
        folded = ctx.window.between(ctx.start_index, split)
        return CompactionPreview(
            messages=len(folded),
            tokens=sum(ctx.counter.count_message(m) for m in folded),
            from_index=ctx.start_index,
            to_index=split,
        )
