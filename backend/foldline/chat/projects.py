"""A conversation's project as the chat layer reads it: shared context, model, settings.

The store holds projects and their files; `core.projects` decides how they are sent.
Here the two meet: a conversation's project is read and turned into the
`ProjectContext` every call of the conversation carries, the model a conversation
without one of its own uses, and the compaction settings under its own.
"""

from __future__ import annotations

from typing import Any

from foldline.config import AppConfig, ModelConfig
from foldline.core.projects import ProjectContext, ProjectFile, ProjectNote
from foldline.store import ConversationRecord, Store
from foldline.store.projects import ProjectRecord


class ProjectOverCap(Exception):
    """A project's shared context is larger than its cap for the model in use (422)."""


def conversation_project(store: Store, conversation: ConversationRecord) -> ProjectRecord | None:
    return store.get_project(conversation.project_id) if conversation.project_id else None


def model_name(
    config: AppConfig, conversation: ConversationRecord, project: ProjectRecord | None
) -> str:
    """The conversation's own model, else its project's default, else the app's ('' =
    none chosen anywhere)."""
    return conversation.model or (project.model if project else None) or config.default_model or ""


def serving_config(config: AppConfig, model: str, provider: str | None) -> AppConfig:
    """The configuration with `provider` serving `model`, as the conversation chose it.

    Two providers may offer the same model id; the conversation remembers which one it
    picked, and every resolution of its model (limits, the client, the counter, the
    summarizer when it is the same model) reads this configuration. A provider no longer
    configured is ignored: the configuration's own choice applies, as before any."""
    if not provider or not model or provider not in config.providers:
        return config
    entry = config.models.get(model) or ModelConfig()
    if entry.provider == provider:
        return config
    models = {**config.models, model: entry.model_copy(update={"provider": provider})}
    return config.model_copy(update={"models": models})


def conversation_config(
    config: AppConfig, conversation: ConversationRecord, project: ProjectRecord | None
) -> AppConfig:
    """`serving_config` for the conversation's own model and provider (a conversation
    using its project's or the app's default model has no provider of its own)."""
    if conversation.model is None:
        return config
    return serving_config(config, conversation.model, conversation.provider)


def project_context(store: Store, project: ProjectRecord) -> ProjectContext:
    files = tuple(
        ProjectFile(f.name, f.media_type, f.text or "", f.pages)
        for f in store.list_project_files(project.id, text=True)
    )
    notes = tuple(ProjectNote(n.title, n.text) for n in store.list_project_notes(project.id))
    return ProjectContext(project.name, project.instructions, files, notes)


def settings_with_project(
    conversation_settings: dict[str, Any], project: ProjectRecord | None
) -> dict[str, Any]:
    """The conversation's settings with its project's compaction overrides beneath its
    own (a knob the conversation sets wins)."""
    if project is None:
        return conversation_settings
    shared = project.settings.get("compaction") or {}
    own = conversation_settings.get("compaction") or {}
    if not shared:
        return conversation_settings
    return {**conversation_settings, "compaction": {**shared, **own}}


def over_cap_message(name: str, tokens: int, cap: int, model: str) -> str:
    return (
        f"The project {name!r} sends {tokens:,} tokens (instructions, files and notes) with "
        f"every call, over its cap of {cap:,} for {model} (a quarter of what the model can "
        "read). Remove a file or shorten the notes or instructions, or use a model with a "
        "larger window."
    )
