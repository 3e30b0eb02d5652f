"""SQLite persistence: conversations, the full display history, every fold, calibration.

See `store.Store` for the API, `schema.COLUMN_DOCS` for what every column means and
`migrations.py` for how the schema evolves.
"""

from foldline.store.branches import NotOnPath
from foldline.store.records import (
    CompactionRecord,
    ConcurrentFold,
    ConversationRecord,
    CorruptDatabase,
    MessageRecord,
    MessageStatus,
    NotFound,
    PinRecord,
    UnstorableValue,
)
from foldline.store.store import Store

__all__ = [
    "CompactionRecord",
    "ConcurrentFold",
    "ConversationRecord",
    "CorruptDatabase",
    "MessageRecord",
    "MessageStatus",
    "NotFound",
    "NotOnPath",
    "PinRecord",
    "Store",
    "UnstorableValue",
]
