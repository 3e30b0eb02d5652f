"""Small, valid files for tests and benchmarks: PNG, JPEG, GIF and WebP images of a
given pixel size, and PDFs with given page texts, built without any image or PDF library.
"""

from __future__ import annotations

import base64
import struct
import zlib

from foldline.core.messages import AttachmentPart
from foldline.testing.hostile_files import pdf_from_objects
from foldline.uploads import IncomingFile, read_project_file


def png(width: int, height: int, *, rgb: tuple[int, int, int] = (40, 120, 200)) -> bytes:
    """A one-colour PNG (a real, decodable image: browsers show it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    row = b"\x00" + bytes(rgb) * width
    pixels = zlib.compress(row * height, 9)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def jpeg_header(width: int, height: int) -> bytes:
    """The start of a baseline JPEG up to its frame header (enough for sniffing and
    sizing; not a decodable picture)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00" * 3
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    """A GIF header and an empty image (enough for sniffing and sizing)."""
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp(width: int, height: int) -> bytes:
    """An extended (VP8X) WebP header (enough for sniffing and sizing)."""
    body = b"WEBPVP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body)) + body


def pdf(pages: list[str]) -> bytes:
    """A PDF with one page per text (Helvetica, one line per line of text), which pypdf
    and browsers read."""
    objects: list[bytes] = []
    count = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for index, text in enumerate(pages):
        lines = []
        for line in text.split("\n"):
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            lines.append(f"({escaped}) Tj T*")
        stream = ("BT /F1 11 Tf 14 TL 72 720 Td " + " ".join(lines) + " ET").encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * index} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    return pdf_from_objects(objects)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def project_file(name: str, media_type: str, data: bytes) -> AttachmentPart:
    """`data` checked as an upload to a project (what `Store.add_project_file` takes)."""
    return read_project_file(IncomingFile(name, media_type, b64(data)))
