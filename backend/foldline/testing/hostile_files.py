"""Small files that once froze or broke the app, for tests and benchmarks: PDFs whose
text inflates enormously, with a hundred thousand pages, or a page tree nested thousands
deep, built without any PDF library."""

from __future__ import annotations

import zlib


def pdf_from_objects(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF holding `objects` (numbered from 1) with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root {root} 0 R >>\n"
        f"startxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _page(parent: int, contents: str) -> bytes:
    return (
        f"<< /Type /Page /Parent {parent} 0 R /MediaBox [0 0 612 792] "
        f"/Resources << /Font << /F1 3 0 R >> >> /Contents {contents} >>"
    ).encode()


def inflating_pdf(pages: int = 20, copies: int = 16, text_bytes: int = 4_500_000) -> bytes:
    """`pages` pages showing one compressed stream `copies` times each: a few kB of file
    holding `pages * copies * text_bytes` characters of text once extracted (each page
    stays under pypdf's own 75 MB limit on a page's content)."""
    content = b"BT /F1 11 Tf 72 720 Td (" + b"A" * text_bytes + b") Tj ET"
    stream = zlib.compress(content, 9)
    contents = "[" + " ".join("4 0 R" for _ in range(copies)) + "]"
    kids = " ".join(f"{5 + i} 0 R" for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        FONT,
        f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode()
        + stream
        + b"\nendstream",
    ]
    objects.extend(_page(2, contents) for _ in range(pages))
    return pdf_from_objects(objects)


def many_pages_pdf(pages: int = 100_000) -> bytes:
    """`pages` pages sharing one short content stream, under one /Pages node."""
    kids = " ".join(f"{5 + i} 0 R" for i in range(pages))
    stream = b"BT /F1 11 Tf 72 720 Td (page) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        FONT,
        f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream",
    ]
    objects.extend(_page(2, "4 0 R") for _ in range(pages))
    return pdf_from_objects(objects)


def deep_page_tree_pdf(depth: int = 5_000) -> bytes:
    """A page tree of `depth` nested /Pages nodes with one page at the bottom."""
    stream = b"BT /F1 11 Tf 72 720 Td (deep) Tj ET"
    # Objects: 1 the catalog, 2 the page, 3 its content, 4 the font, then the /Pages
    # nodes from the outermost (5) inward; the innermost holds the page.
    first = 5
    innermost = first + depth - 1
    objects = [
        f"<< /Type /Catalog /Pages {first} 0 R >>".encode(),
        (
            f"<< /Type /Page /Parent {innermost} 0 R /MediaBox [0 0 612 792] "
            "/Resources << /Font << /F1 4 0 R >> >> /Contents 3 0 R >>"
        ).encode(),
        f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream",
        FONT,
    ]
    for number in range(first, innermost + 1):
        kid = 2 if number == innermost else number + 1
        parent = f"/Parent {number - 1} 0 R " if number > first else ""
        objects.append(f"<< /Type /Pages {parent}/Kids [{kid} 0 R] /Count 1 >>".encode())
    return pdf_from_objects(objects)


def warning_pdf(missing: int = 4_500) -> bytes:
    """One real page and `missing` references to objects the file does not hold, each
    of which pypdf warns about as it reads the page tree."""
    stream = b"BT /F1 11 Tf 72 720 Td (warn) Tj ET"
    kids = " ".join(["4 0 R", *(f"{1000 + i} 0 R" for i in range(missing))])
    return pdf_from_objects(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            f"<< /Type /Pages /Kids [{kids}] /Count 1 >>".encode(),
            FONT,
            _page(2, "5 0 R"),
            f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream",
        ]
    )
