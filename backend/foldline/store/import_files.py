"""The files of an imported message, checked as a person's upload is.

An export carries each file's bytes (`dataBase64`) next to its sha256. An imported part
that names a sha256 without bytes would be served the bytes stored under that hash, which
can be another conversation's file: refused. A part with bytes goes through every rule
of an upload (`foldline.uploads.read_attachment`: magic numbers, image sizes, a PDF's
pages read in a bounded process), so an image no provider takes cannot be stored to be
refused on every later turn. A part without a sha256 is a file the model was never sent
(its name only) and stays as it is.
"""

from __future__ import annotations

from foldline.core.attachments import AttachmentRefused, kind_of
from foldline.core.messages import AttachmentPart, Part
from foldline.uploads import IncomingFile, read_attachment


def checked_parts(parts: list[Part], where: str) -> list[Part]:
    """`parts` with every file checked and its metadata as the checks found it, or a
    ValueError naming the part; the same list when it holds no file."""
    if not any(isinstance(part, AttachmentPart) for part in parts):
        return parts
    return [
        _checked(part, f"{where}.parts[{number}]") if isinstance(part, AttachmentPart) else part
        for number, part in enumerate(parts)
    ]


def _checked(part: AttachmentPart, where: str) -> AttachmentPart:
    if part.sha256 is None and not part.data_base64:
        return part
    if not part.data_base64:
        raise ValueError(
            f"invalid Foldline export: {where}: a file must carry its bytes (dataBase64)"
        )
    if not kind_of(part.name, part.media_type):
        # A file type only a tool's result stores (audio, say): its bytes still must
        # match its sha256 (checked as it is written).
        return part
    try:
        checked = read_attachment(
            IncomingFile(part.name, part.media_type, part.data_base64), model="", vision=True
        )
    except AttachmentRefused as refusal:
        raise ValueError(f"invalid Foldline export: {where}: {refusal}") from None
    if part.sha256 is None:
        # Bytes kept in the message itself (as older versions wrote them): checked, and
        # kept as they were.
        return part
    if part.sha256 != checked.sha256:
        raise ValueError(
            f"invalid Foldline export: {where}: attachment {part.name}: its bytes do not "
            "match its sha256"
        )
    # How the message sends a PDF (pages or text) was settled when it was first sent.
    return checked.model_copy(update={"as_text": part.as_text})
