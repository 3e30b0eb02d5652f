"""Dependencies the routes declare with `Annotated[..., Depends(...)]`.

The store, the chat service and the data dir live on `app.state`, set once by
`create_app`; routes never reach for globals, so tests can build as many apps as they
like side by side.

They are `async def` although they only read an attribute: FastAPI runs a plain `def`
dependency in its thread pool, and each such hop waits for the GIL again, which on a
busy server (ten answers streaming) cost a read more than its own work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from foldline.chat.service import ChatService
from foldline.store import Store


async def get_store(request: Request) -> Store:
    return request.app.state.store


async def get_chat(request: Request) -> ChatService:
    return request.app.state.chat_service


async def get_data_dir(request: Request) -> Path:
    return request.app.state.data_dir


StoreDep = Annotated[Store, Depends(get_store)]
ChatDep = Annotated[ChatService, Depends(get_chat)]
DataDirDep = Annotated[Path, Depends(get_data_dir)]
