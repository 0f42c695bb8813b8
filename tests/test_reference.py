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


def test_every_test_the_guarantees_table_names_exists():
    """docs/how-to/operations.md pairs each promise with the test that keeps it: a renamed or
    removed test leaves a promise without one."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "how-to" / "operations.md").read_text()
    named, missing, file = 0, [], None
    for ref in re.findall(r"`((?:test_\w+\.py)?::test_\w+|test_\w+\.py)`", page):
        where, _, name = ref.partition("::")
        file = where or file                  # `::name` is in the file named before it
        source = (root / "tests" / file).read_text()
        named += bool(name)
        if name and f"def {name}(" not in source:
            missing.append(ref)
    assert named >= 30 and not missing
