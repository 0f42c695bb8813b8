"""The one declarative check (tuner.core.fields): the messages every config and setting error
is made of name the field and say what is allowed."""

import math

import pytest

from tuner.core.fields import Field, check_section

SCHEMA = {"trials": Field((int,), 30, above=0), "margin": Field((float, None), None, minimum=0),
          "n_initial": Field((int,), "auto", words=("auto",), minimum=0),
          "mode": Field((str,), "max", choices=("max", "min")),
          "share": Field((float,), 0.3, above=0, below=1, finite=True),
          "flag": Field((bool,), True), "name": Field((str,), required=True)}


def test_defaults_filled_and_values_normalized():
    out = check_section("run", {"name": "a", "trials": 12.0, "margin": 1, "n_initial": "auto"},
                        SCHEMA)
    assert out == {"trials": 12, "margin": 1.0, "n_initial": "auto", "mode": "max", "share": 0.3,
                   "flag": True, "name": "a"}
    assert isinstance(out["trials"], int) and isinstance(out["margin"], float)


@pytest.mark.parametrize("data, message", [
    ({"name": "a", "trails": 3}, "run: unknown key(s) ['trails']; did you mean 'trials' for "
                                 "'trails'?; allowed: ['flag', 'margin', 'mode', 'n_initial', "
                                 "'name', 'share', 'trials']"),
    ({}, "run.name is required"),
    ({"name": "a", "trials": 0}, "run.trials: must be > 0 (got 0)"),
    ({"name": "a", "trials": 2.5}, "run.trials: expected a whole number, got 2.5"),
    ({"name": "a", "trials": True}, "run.trials: expected a whole number, got True"),
    ({"name": "a", "margin": -1}, "run.margin: must be >= 0 or null (got -1.0)"),
    ({"name": "a", "n_initial": "many"}, "run.n_initial: expected a whole number or 'auto', got "
                                         "'many'"),
    ({"name": "a", "mode": "maximize"}, "run.mode: must be one of ['max', 'min'] (got 'maximize')"),
    ({"name": "a", "share": 1}, "run.share: must be in (0, 1) (got 1.0)"),
    ({"name": "a", "share": math.nan}, "run.share: must be a finite number (got nan)"),
    ({"name": "a", "flag": "yes"}, "run.flag: expected true or false, got 'yes'"),
    ([1, 2], "run: expected a mapping, got list"),
])
def test_each_error_names_the_field_and_what_is_allowed(data, message):
    with pytest.raises(ValueError) as err:
        check_section("run", data, SCHEMA)
    assert str(err.value) == message


def test_choices_may_come_from_a_registry_read_at_check_time():
    registry = {"se": 1}
    f = Field((str,), choices=lambda: sorted(registry))
    registry["matern52"] = 2
    assert f.check("kernel", "matern52") == "matern52"
