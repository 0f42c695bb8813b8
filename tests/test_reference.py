"""The reference pages (docs/reference/) are generated from the code and current with it, and
every setting, research switch and study-file key says what it does where it is declared."""

from conftest import load_script

from tuner.core.fields import schema
from tuner.core.research import GROUPS
from tuner.core.settings import PUBLIC
from tuner.study.schema import SECTIONS, STUDY_SCHEMA

reference = load_script("scripts/docs/make_reference.py")


def test_every_setting_switch_and_key_is_documented_where_it_is_declared():
    declared = {**PUBLIC, **{k: f for cls in GROUPS.values() for k, f in schema(cls).items()},
                **{f"{s}.{k}": f for s, keys in SECTIONS.items() for k, f in keys.items()},
                **STUDY_SCHEMA}
    undocumented = sorted(k for k, f in declared.items() if len(f.doc) < 10)
    assert not undocumented
    assert len(PUBLIC) + 1 <= 25        # the public surface: the settings and `research`


def test_the_reference_pages_are_those_the_code_gives():
    assert reference.stale() == [], "run python scripts/docs/make_reference.py"
    page = (reference.OUT / "settings.md").read_text()
    assert all(f"`{name}`" in page for name in PUBLIC)
    assert "`tuner run`" in (reference.OUT / "cli.md").read_text()
