"""Checking seed 000's three directions on a study analysis (Welch CIs between rows)."""

from __future__ import annotations

from types import SimpleNamespace

from evalab.examples.sort_digits.directions import check_directions


def _analysis(values: dict[str, list[float]]) -> SimpleNamespace:
    rows = [
        SimpleNamespace(label=label, metrics={"seq_acc": SimpleNamespace(values=v)})
        for label, v in values.items()
    ]
    return SimpleNamespace(primary="seq_acc", rows=rows)


def test_directions_hold_on_the_seeds_pattern():
    a = _analysis(
        {
            "base": [95.0, 96.0, 97.0],
            "(A) h=1": [60.0, 64.0, 66.0],
            "(A) h=8": [97.0, 97.5, 98.0],
            "(D) P_drop=0": [99.0, 99.5, 100.0],
            "(D) P_drop=0.3": [10.0, 14.0, 18.0],
            "(E) none": [94.0, 96.0, 98.0],
        }
    )
    found = check_directions(a)
    assert [d.holds for d in found] == [True, True, True, True]
    assert abs(found[0].delta - (190 / 3 - 96.0)) < 1e-12
    none = found[3]
    assert "not shown worse; the CI still allows" in none.line()


def test_directions_fail_when_the_data_say_otherwise_and_skip_missing_rows():
    a = _analysis(
        {
            "base": [95.0, 96.0, 97.0],
            "(A) h=1": [94.0, 96.0, 98.0],
            "(E) none": [80.0, 81.0, 82.0],
        }
    )
    found = {d.claim: d for d in check_directions(a)}
    assert set(found) == {
        "1 head is worse than 4 heads",
        "no positional encoding is not worse than sinusoids",
    }
    assert not found["1 head is worse than 4 heads"].holds
    assert not found["no positional encoding is not worse than sinusoids"].holds
    assert "does NOT hold" in found["1 head is worse than 4 heads"].line()
    # one finished seed cannot give a CI: the claim is left out rather than guessed
    assert check_directions(_analysis({"base": [95.0], "(A) h=1": [60.0, 61.0]})) == []


def test_an_eval_row_is_checked_with_its_paired_ci():
    a = _analysis({"base": [95.0, 96.0, 97.0]})
    # the analysis pairs an eval row with its trained row; the check takes that CI as it is
    paired = SimpleNamespace(
        values=[20.0, 30.0, 25.0],
        paired=True,
        vs="base",
        n=3,
        delta=-71.0,
        delta_low=-80.0,
        delta_high=-62.0,
    )
    a.rows.append(SimpleNamespace(label="(A') 1 of 4 heads at eval", metrics={"seq_acc": paired}))
    (found,) = check_directions(a)
    assert (
        found.paired
        and found.holds
        and (found.delta, found.low, found.high) == (-71.0, -80.0, -62.0)
    )
    assert "95% paired CI [-80.0, -62.0]: holds" in found.line()
    # a paired CI that reaches zero does not support "lowers"
    a.rows[-1].metrics["seq_acc"] = SimpleNamespace(**{**vars(paired), "delta_high": 1.0})
    assert not check_directions(a)[0].holds
