"""Dependencies the routes declare with `Annotated[..., Depends(...)]`.

The store, the chat service and the data dir live on `app.state`, set once by
`create_app`; routes never reach for globals, so tests can build as many apps as they
like side by side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from foldline.chat.service import ChatService
from foldline.store import Store


def get_store(request: Request) -> Store:
    return request.app.state.store


def get_chat(request: Request) -> ChatService:
    return request.app.state.chat_service


def get_data_dir(request: Request) -> Path:
    return request.app.state.data_dir


StoreDep = Annotated[Store, Depends(get_store)]
ChatDep = Annotated[ChatService, Depends(get_chat)]
DataDirDep = Annotated[Path, Depends(get_data_dir)]
