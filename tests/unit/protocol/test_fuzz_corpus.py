"""The coverage-guided fuzzer's corpus, replayed: every input it kept (``fuzz_corpus/corpus``, minimized by
``scripts/fuzz_decoder.py merge``) and every input that once failed (``fuzz_corpus/crashes``) goes through the harness
(``tests/support/decoder_fuzz.py``): both record decoders agree and only typed errors come out. The harness itself
is held to its word: its seeds reach every mode and decode records, and a disagreement is a finding. What the
fuzzer found beyond the decoder is pinned here too, as a strict xfail until it is fixed."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from tests.support.batches import batch_around

decoder_fuzz: ModuleType | None
try:
    from tests.support import decoder_fuzz
except ImportError:  # it fuzzes the C decoder
    decoder_fuzz = None

pytestmark = pytest.mark.skipif(
    decoder_fuzz is None, reason="the C decoder is not built (test_v2records.test_compiled_decoder_in_use)"
)

CORPUS = Path(__file__).parent / "fuzz_corpus"


def _inputs(folder: str) -> list[Path]:
    return sorted((CORPUS / folder).iterdir())


def test_the_corpus_replays() -> None:
    """Every input the fuzzer kept: the same from both decoders, only typed errors (a few seconds for them all)."""
    assert decoder_fuzz is not None
    inputs = _inputs("corpus")
    assert len(inputs) > 100
    assert {path.read_bytes()[0] % decoder_fuzz.MODES for path in inputs if path.stat().st_size} == set(
        range(decoder_fuzz.MODES)
    )
    for path in inputs:
        decoder_fuzz.one_input(path.read_bytes())  # a FuzzFinding names what went wrong; the file is the input


def test_what_once_failed_stays_fixed() -> None:
    """The inputs that failed while the harness was made (named for what they found): two CRC-valid compressed
    batches whose offsets go back (the collector's defect below, which the harness now leaves out), and a fetch of a
    batch of magic 255, whose BatchError escaped the harness's own check."""
    assert decoder_fuzz is not None
    inputs = _inputs("crashes")
    assert inputs
    for path in inputs:
        decoder_fuzz.one_input(path.read_bytes())


def test_the_seeds_reach_every_mode_and_decode_records() -> None:
    """Seeds of every mode, and those of the collector's modes deliver records poll after poll."""
    assert decoder_fuzz is not None
    seeds = decoder_fuzz.seed_inputs()
    assert {seed[0] for seed in seeds} == set(range(decoder_fuzz.MODES))
    for seed in seeds:
        decoder_fuzz.one_input(seed)
    fetched = [seed for seed in seeds if seed[0] == decoder_fuzz.FETCH]
    offsets = decoder_fuzz._collect(fetched[0][4:], True, False, 0, columns=True)
    assert offsets == [0, 1, 2, 1 << 40, (1 << 40) + 1, (1 << 40) + 2]  # the control marker at 7 is not a record


def test_a_disagreement_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness compares the decoders' every answer: one that differs fails the input."""
    assert decoder_fuzz is not None
    wrong = SimpleNamespace(fill_records=lambda batch, pos, left, position, limit, out, *rest: (0, 0, position))
    monkeypatch.setattr(decoder_fuzz, "compiled", wrong)
    seed = next(seed for seed in decoder_fuzz.seed_inputs() if seed[0] == decoder_fuzz.FILL_RECORDS)
    with pytest.raises(decoder_fuzz.FuzzFinding, match="fill_records: the C decoder gave"):
        decoder_fuzz.one_input(seed)


def _varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 31)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    return bytes([*out, raw])


def _record(offset_delta: int) -> bytes:
    body = b"\x00\x00" + _varint(offset_delta) + _varint(-1) + _varint(1) + b"v" + _varint(0)
    return _varint(len(body)) + body


def test_a_batch_whose_offsets_go_back_is_not_delivered_again() -> None:
    """Found by the fuzzer through the collector: a CRC-valid batch whose records have offsets 0 then -3, then a
    truncated one. poll must return record 0 once, then raise ``CorruptRecordError`` (None here); it returned
    record 0 at every poll (64 in a row here, then the harness's ``FuzzFinding``) and raised nothing, : the error
    named the offset after the record that went back (-2), below the records taken. A decoder's error now names at
    least the call's position."""
    assert decoder_fuzz is not None
    batch = batch_around(0, 0, _record(0) + _record(-3) + _record(1)[:-2], 3)
    assert decoder_fuzz._collect(batch, True, False, 0, columns=False) is None
    assert decoder_fuzz._collect(batch, True, False, 0, columns=True) is None
