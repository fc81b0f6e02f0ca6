"""The TRF sequencer's bank-column check reads the addresses in bits throughout (manual L4110–4111, L4191–4194):
a stride counted in elements was once added to a base counted in bits, so a read crossing a 32-byte bank column
went unseen and the message named fractional bytes."""

from __future__ import annotations

import pytest

from visa import dtypes as dt
from visa.engines.contraction.aligner import TrfOperand, _limits
from visa.errors import AddressError
from visa.hw import RNGD
from visa.mapping import AxisSet
from visa.mapping.sequencer import Entry


def _trf() -> TrfOperand:
    m = AxisSet(T=4, K=20).m
    return TrfOperand(dt.bf16, m["1"], m["1"], m["1"], m["1"], m["T, K"], "Full", 0)


def test_a_16_byte_read_crossing_a_bank_column_is_refused_at_its_byte() -> None:
    # bf16 rows 20 elements (40 bytes) apart: reads at bytes 0, 40, 80, 120; the last, 120 % 32 = 24, ends past 32
    with pytest.raises(AddressError, match=r"read 3 of the TRF sequencer starts at byte 120 and its 16 bytes"):
        _limits(RNGD, dt.bf16, _trf(), [Entry(4, 20)], 0, 16)


def test_reads_inside_their_bank_columns_pass() -> None:
    # 16 elements (32 bytes) apart: every 16-byte read starts on a bank line
    assert _limits(RNGD, dt.bf16, _trf(), [Entry(4, 16)], 0, 16) == (Entry(4, 16),)
    # 8 elements apart, 8-byte reads: 16 bytes apart, never crossing
    assert _limits(RNGD, dt.bf16, _trf(), [Entry(4, 8)], 0, 8) == (Entry(4, 8),)
