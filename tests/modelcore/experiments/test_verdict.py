"""The verdict names an arm only where the seeds support it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from modelcore.experiments.verdict import NO_RELIABLE_DIFFERENCE, verdict

PRE = [0.78, 0.80, 0.82, 0.79, 0.81, 0.80, 0.83, 0.77, 0.80, 0.79, 0.81, 0.82, 0.78, 0.80, 0.81, 0.79]
POST = [2.99, 3.00, 2.98, 3.01, 2.99, 0.75, 3.00, 2.97, 2.99, 3.02, 3.00, 2.98, 2.99, 3.01, 3.00, 2.99]


def test_an_arm_lowest_in_15_of_16_seeds_by_far_is_the_answer_and_the_reveal_quotes_the_figures():
    result = verdict({"post": POST, "pre": PRE})
    assert result.reliable and result.answer == "pre" and result.leader == "pre"
    post, pre = result.arms  # in the order given
    assert (post.label, post.lowest, pre.label, pre.lowest) == ("post", 1, "pre", 15)
    assert result.text == "lowest in 15 of 16 seeds, mean 0.80 ± 0.0041 vs 2.85 ± 0.14"
    assert result.to_dict()["arms"][1] == {"label": "pre", "n": 16, "mean": pytest.approx(0.8), "sd": pre.sd,
                                           "se": pre.se, "lowest": 15}


def test_arms_that_swap_places_between_seeds_give_no_reliable_difference():
    a = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00]
    b = [1.01, 1.00, 0.99, 1.00, 1.01, 1.01, 0.98, 1.02]
    result = verdict({"1x": a, "2x": b})
    assert not result.reliable and result.answer == NO_RELIABLE_DIFFERENCE
    assert result.text.startswith("no reliable difference: ")
    assert "lowest in" in result.text and "of 8 seeds" in result.text


def test_lowest_in_every_seed_but_within_twice_the_standard_error_is_no_answer():
    # b is lower in every seed by a hair, while both spread widely: 100 % of seeds, but the means' gap is noise.
    a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    b = [v - 0.01 for v in a]
    result = verdict({"a": a, "b": b})
    assert result.leader == "b" and result.arms[1].lowest == 10
    assert not result.reliable and "standard error" in result.reason


def test_a_clear_mean_gap_but_lowest_in_under_90_percent_of_seeds_is_no_answer():
    a = [0.5] * 8 + [5.0, 5.0]  # lowest in 8 of 10 seeds, a far lower mean
    b = [3.0] * 10
    result = verdict({"a": a, "b": b})
    assert result.leader == "a" and result.arms[0].lowest == 8
    assert not result.reliable and "90%" in result.reason


def test_three_arms_need_the_answer_to_beat_each_of_the_others():
    low = [0.50, 0.52, 0.49, 0.51, 0.50, 0.53, 0.48, 0.50]
    high = [2.0, 2.1, 1.9, 2.0, 2.05, 1.95, 2.0, 2.02]
    close = [v + 0.001 for v in low]  # a second arm just above the leader: no reliable winner among the three
    assert verdict({"x": high, "y": low, "z": [v + 1 for v in low]}).answer == "y"
    assert verdict({"x": high, "y": low, "z": close}).answer == NO_RELIABLE_DIFFERENCE


def test_one_seed_never_decides():
    result = verdict({"a": [0.1], "b": [3.0]})
    assert not result.reliable and result.seeds == 1 and "one seed" in result.reason


@pytest.mark.parametrize("losses", [{"a": [1.0]}, {"a": [1.0, 2.0], "b": [1.0]}, {"a": [], "b": []},
                                    {"a": [float("nan")], "b": [1.0]}])
def test_malformed_input_is_refused(losses):
    with pytest.raises(ValueError):
        verdict(losses)


def test_the_web_process_can_call_it_without_torch():
    code = "import sys; from modelcore.experiments.verdict import verdict; verdict({'a': [1, 2], 'b': [3, 4]}); " \
           "print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
