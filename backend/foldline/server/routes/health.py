"""`GET /api/health`: the one route answered without the token (launchers poll it)."""

from __future__ import annotations

from fastapi import APIRouter

import foldline
from foldline.api.schemas import Health

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health", response_model=Health)
def health() -> Health:
    return Health(version=foldline.__version__)
