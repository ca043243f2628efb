"""Interaction turns form one xdist scope; everything else is scheduled item by item."""

import pytest

from pytest_sqleval.xdist_scheduling import InteractionScheduling, interaction_scope


@pytest.mark.parametrize(
    "nodeid, scope",
    [
        ("suites/a.sqleval.yaml::conv-1[2]", "suites/a.sqleval.yaml::conv-1"),
        ("suites/a.sqleval.yml::conv-1[12]", "suites/a.sqleval.yml::conv-1"),
        ("custom.yaml::c[1]", "custom.yaml::c"),
        ("suites/a.sqleval.yaml::single-case", None),
        ("tests/test_x.py::test_a[1]", None),  # ordinary parametrized tests are not grouped
        ("suites/a.sqleval.yaml::conv[x]", None),
    ],
)
def test_interaction_scope(nodeid, scope):
    assert interaction_scope(nodeid) == scope


def test_split_scope_keeps_explicit_groups_and_singletons():
    split = InteractionScheduling._split_scope
    assert split(None, "a.sqleval.yaml::conv[3]") == "a.sqleval.yaml::conv"
    assert split(None, "tests/test_x.py::test_a[1]@db") == "db"
    assert split(None, "tests/test_x.py::test_a[1]") == "tests/test_x.py::test_a[1]"
