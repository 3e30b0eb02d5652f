"""The FastAPI application: routers, security middleware, error shape, static UI.

`create_app` assembles. Given a store and a chat service it uses them and their caller
owns them (tests, benchmarks); given only a data dir it opens `<data-dir>/foldline.db`,
ensures `config.toml` and builds the chat service itself, and closes the store when the
app shuts down (`foldline serve` and the desktop window).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from fastapi import FastAPI
from starlette.middleware import Middleware

import foldline
from foldline.chat.handoff import HandoffFailed, HandoffStopped, NothingToHandOff
from foldline.chat.projects import ProjectOverCap
from foldline.chat.service import ChatService, ChatUnavailable, TurnInProgress, WrongMessage
from foldline.config import ConfigError, NoModelConnected
from foldline.config_toml import ensure_config
from foldline.core.attachments import AttachmentRefused
from foldline.mcp.elicitation import open_web_page
from foldline.mcp.first_start import FIRST_START_FILE, FirstStarts
from foldline.mcp.manager import McpManager, ServerDisabled
from foldline.providers.listing import ModelDirectory
from foldline.server.announce import ChangeAnnouncer
from foldline.server.config_source import ConfigSource
from foldline.server.errors import (
    ExceptionMapping,
    UnexpectedErrorMiddleware,
    install_error_handlers,
)
from foldline.server.heap_freeze import freeze_the_heap, warm_up_then_freeze
from foldline.server.model_refresh import cancel_refreshes, schedule_refresh
from foldline.server.routes import (
    attachments,
    compactions,
    context,
    conversations,
    events,
    find,
    handoffs,
    health,
    mcp,
    mcp_catalog,
    mcp_interaction,
    messages,
    models,
    pins,
    projects,
    settings,
    transfer,
)
from foldline.server.security import BodyLimitMiddleware, SecurityMiddleware, loopback_hosts
from foldline.server.static import find_frontend_dir, mount_frontend
from foldline.store import ConcurrentFold, NotFound, NotOnPath, Store, UnstorableValue
from foldline.store.doctor import check_database

EXCEPTION_MAPPING: ExceptionMapping = {
    NotFound: (404, "not_found", "Not found."),
    TurnInProgress: (409, "turn_in_progress", "A turn is already running here."),
    ConcurrentFold: (409, "concurrent_fold", "The conversation was folded concurrently."),
    ChatUnavailable: (400, "chat_unavailable", "No model or provider is configured."),
    WrongMessage: (400, "wrong_message", "That message cannot be edited or regenerated."),
    NotOnPath: (400, "not_on_path", "That message is not on the active path."),
    NothingToHandOff: (400, "nothing_to_hand_off", "There is no message to continue from."),
    HandoffFailed: (502, "summary_failed", "The summary could not be written."),
    HandoffStopped: (409, "handoff_stopped", "The hand-off was stopped."),
    ConfigError: (400, "config_error", "config.toml could not be read."),
    NoModelConnected: (409, "no_model", "No model is connected yet."),
    ProjectOverCap: (422, "project_over_cap", "The project's shared context is over its cap."),
    UnstorableValue: (422, "invalid_request", "A value could not be stored."),
    AttachmentRefused: (422, "attachment_refused", "A file cannot be attached."),
    ServerDisabled: (409, "mcp_server_disabled", "That MCP server is disabled."),
}


DATABASE_FILE = "foldline.db"


def create_app(
    *,
    data_dir: Path,
    token: str,
    store: Store | None = None,
    chat_service: ChatService | None = None,
    allowed_hosts: Sequence[str] | None = None,
    testing: bool = False,
    frontend_dir: Path | None = None,
    discover_models: bool | None = None,
    freeze_heap: bool | None = None,
) -> FastAPI:
    """The app for one store and chat service.

    `allowed_hosts` are `host` or `host:port` entries for the Host check (default: the
    loopback names on any port). `testing=True` publishes `/openapi.json` and `/docs`
    (for schemathesis and for reading); the shipped app has neither.
    `frontend_dir` defaults to the checkout's or the package's `frontend/`.
    `discover_models` asks the providers for their model lists at start (when the cached
    lists are older than a day) and when a key is added; by default only an app that owns
    its store does (`foldline serve`, the window), so tests reach no provider they did not
    set up. `freeze_heap` (by default, likewise, only such an app) moves the objects alive
    at the start, and again once the warm-up's imports are done, out of the garbage
    collector's full passes (`server/heap_freeze.py`).
    """
    data_dir = Path(data_dir)
    config_source = ConfigSource(data_dir)
    owns_store = store is None
    if store is None:
        ensure_config(data_dir)
        check_database(data_dir / DATABASE_FILE)
        store = Store(data_dir / DATABASE_FILE)
    mcp_manager = next(
        (
            source
            for source in (chat_service.tool_sources if chat_service else ())
            if isinstance(source, McpManager)
        ),
        None,
    )
    if mcp_manager is None:
        # MCP servers come only from config.toml; "Always allow" is written back there.
        mcp_manager = McpManager(
            config_source,
            save_config=config_source.save,
            first_starts=FirstStarts(data_dir / FIRST_START_FILE),
            open_url=open_web_page,
        )
    # The providers' model lists, cached in the data dir for a day (see routes/models.py).
    model_directory = ModelDirectory.load(data_dir)
    if chat_service is None:
        chat_service = ChatService(
            store, config_source, tool_sources=[mcp_manager], listing=model_directory
        )
    elif chat_service.loader.listing is None:
        chat_service.loader.listing = model_directory
    opened_store: Store = store
    service: ChatService = chat_service

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A broken config.toml is reported where it is used, not at start.
        with suppress(ConfigError):
            schedule_refresh(app)
        if app.state.discover_models:
            # The app as launched (not a test's): the first turn should not wait for
            # the provider SDK's import or the tokenizer's load.
            warm = asyncio.get_running_loop().create_task(warm_up_then_freeze(app, service))
            app.state.background_tasks.add(warm)
            warm.add_done_callback(app.state.background_tasks.discard)
        if app.state.freeze_heap:
            freeze_the_heap()
        yield
        await cancel_refreshes(app)
        # Running turns end as interrupted (partial answers kept) instead of being cut
        # off mid-write when the server stops.
        await service.shutdown()
        if owns_store:
            opened_store.close()

    app = FastAPI(
        title="Foldline",
        version=foldline.__version__,
        docs_url="/docs" if testing else None,
        redoc_url=None,
        openapi_url="/openapi.json" if testing else None,
        lifespan=lifespan,
        middleware=[
            # Listed outermost first: refuse foreign hosts, origins and missing tokens
            # before reading a body, so no unauthenticated client can make us buffer one.
            Middleware(
                SecurityMiddleware,
                token=token,
                allowed_hosts=list(allowed_hosts) if allowed_hosts else loopback_hosts(),
            ),
            Middleware(UnexpectedErrorMiddleware),
            Middleware(BodyLimitMiddleware),
            # Innermost: only requests that passed the checks and succeeded are announced.
            Middleware(ChangeAnnouncer, watch=chat_service.watch),
        ],
    )
    app.state.store = store
    app.state.chat_service = chat_service
    # Called by `RunningServer.stop` (from its thread) before uvicorn's graceful wait.
    app.state.before_stop = chat_service.watch.close
    app.state.data_dir = data_dir
    app.state.config_source = config_source
    app.state.mcp = mcp_manager
    app.state.model_directory = model_directory
    app.state.discover_models = owns_store if discover_models is None else discover_models
    app.state.freeze_heap = owns_store if freeze_heap is None else freeze_heap
    app.state.background_tasks = set()
    install_error_handlers(app, EXCEPTION_MAPPING)

    app.include_router(health.router)
    # Import before `/{conversation_id}` routes would not matter (methods differ), but
    # keeping literal paths first makes the routing order obvious.
    app.include_router(transfer.router)
    app.include_router(projects.router)
    app.include_router(conversations.router)
    app.include_router(find.router)
    app.include_router(messages.router)
    app.include_router(attachments.router)
    app.include_router(events.router)
    app.include_router(events.list_router)
    app.include_router(pins.router)
    app.include_router(handoffs.router)
    app.include_router(compactions.router)
    app.include_router(context.router)
    app.include_router(settings.router)
    app.include_router(mcp.router)
    app.include_router(mcp_interaction.router)
    app.include_router(mcp_catalog.router)
    app.include_router(models.router)
    mount_frontend(app, frontend_dir or find_frontend_dir())
    return app
