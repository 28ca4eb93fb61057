from __future__ import annotations

from drafts.bench.report import format_table

ROW = {
    "tau": 2.5,
    "accept_rate": 0.375,
    "tokens_per_s": 123.45,
    "speedup": 1.5,
    "target_forwards": 40,
    "new_tokens": 100,
    "draft_ms_per_round": 1.25,
    "verify_ms_per_round": 20.0,
    "identical_to_ar": True,
}
AR = {
    "tau": 1.0,
    "accept_rate": None,
    "tokens_per_s": 82.3,
    "speedup": 1.0,
    "target_forwards": 100,
    "new_tokens": 100,
    "draft_ms_per_round": None,
    "verify_ms_per_round": 10.0,
    "identical_to_ar": None,
}


def test_the_table_has_a_header_and_one_aligned_row_per_method() -> None:
    lines = format_table({"methods": {"ar": AR, "lookup": ROW}}).splitlines()

    assert lines[0].split() == [
        "method",
        "tau",
        "accept",
        "tok/s",
        "speedup",
        "fwd",
        "new",
        "draft",
        "ms",
        "verify",
        "ms",
        "=ar",
    ]
    assert lines[1].split() == ["ar", "1.00", "-", "82.3", "1.00x", "100", "100", "-", "10.0", "-"]
    assert lines[2].split() == ["lookup", "2.50", "0.38", "123.5", "1.50x", "40", "100", "1.2", "20.0", "yes"]
    assert len({len(line) for line in lines}) == 1


def test_a_method_that_differs_from_ar_is_flagged() -> None:
    table = format_table({"methods": {"lookup": {**ROW, "identical_to_ar": False}}})

    assert table.splitlines()[1].split()[-1] == "NO"


def test_the_oracle_line_reports_the_ideal_speedup() -> None:
    oracle = {
        **ROW,
        "ideal_speedup": 3.2,
        "one_token_ms": 10.0,
        "verify_ms_gamma_plus_1": 15.6,
        "fraction_of_ideal": 0.5,
    }

    table = format_table({"methods": {"oracle": oracle}})

    assert table.splitlines()[-1] == (
        "oracle: ideal speedup 3.20x (one token 10.0 ms, gamma+1 tokens 15.6 ms); reached 50 % of it"
    )
