"""Instants as the store keeps them (microseconds since the epoch) and as the wire carries them (Timestamp)."""

from __future__ import annotations

from datetime import datetime, timezone

from dtscale_emulator.engine import events

LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)


def test_microseconds_are_exact_at_both_ends_of_what_a_timestamp_holds() -> None:
    first = datetime(1, 1, 1, tzinfo=timezone.utc)
    for when in (first, datetime(2026, 12, 2, 18, 0, 0, 123457, tzinfo=timezone.utc), LAST):
        assert events.from_micros(events.to_micros(when)) == when
    assert events.to_micros(LAST) == 253_402_300_799_999_999
    stamp = events.ts_micros(events.to_micros(LAST))
    assert (stamp.seconds, stamp.nanos) == (253_402_300_799, 999_999_000)


def test_an_instant_stored_past_the_last_one_is_served_as_the_last_one() -> None:
    # What float seconds made of the last instant before instants were converted exactly.
    stamp = events.ts_micros(253_402_300_800_000_000)
    assert (stamp.seconds, stamp.nanos) == (253_402_300_799, 999_999_000)
