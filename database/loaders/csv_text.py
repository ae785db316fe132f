"""A CSV file's text encoding, and a UTF-8 copy of one that is not UTF-8.

DuckDB reads UTF-8 CSV only (and refuses the rest with a multi-line error). Spreadsheet
programs write two others more often than any: UTF-16 with a byte-order mark (Excel's
"Unicode text") and Windows-1252 (Excel's "CSV" on Western Windows, a superset of Latin-1's
printable characters). One rule: a file with a UTF-16 byte-order mark is UTF-16; a file that
decodes as UTF-8 is UTF-8; anything else is read as Windows-1252, whose five undefined bytes
are read as Latin-1 so that no byte is lost. Gzipped CSV is read through gzip.
"""

from __future__ import annotations

import codecs
import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

CHUNK = 1 << 20
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_LATIN1_FALLBACK = "macsql-latin1"


def _latin1(error: UnicodeError) -> tuple[str, int]:
    """Windows-1252 leaves 0x81, 0x8D, 0x8F, 0x90 and 0x9D undefined: read them as Latin-1."""
    assert isinstance(error, UnicodeDecodeError)
    return error.object[error.start : error.end].decode("latin-1"), error.end


codecs.register_error(_LATIN1_FALLBACK, _latin1)


def _open(path: Path) -> BinaryIO:
    with path.open("rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else path.open("rb")  # type: ignore[return-value]


def _chunks(handle: BinaryIO) -> Iterator[bytes]:
    while chunk := handle.read(CHUNK):
        yield chunk


def csv_encoding(path: Path) -> str:
    """How the file at `path` is read: "utf-8", "utf-16" or "cp1252"."""
    with _open(path) as handle:
        head = handle.read(2)
        if head in UTF16_BOMS:
            return "utf-16"
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            decoder.decode(head)
            for chunk in _chunks(handle):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return "cp1252"
    return "utf-8"


def utf8_copy(path: Path, encoding: str, target: Path) -> Path:
    """`path`'s text, read as `encoding`, written to `target` as UTF-8."""
    errors = _LATIN1_FALLBACK if encoding == "cp1252" else "strict"
    decoder = codecs.getincrementaldecoder(encoding)(errors)
    with _open(path) as source, target.open("wb") as out:
        for chunk in _chunks(source):
            out.write(decoder.decode(chunk).encode("utf-8"))
        out.write(decoder.decode(b"", final=True).encode("utf-8"))
    return target
