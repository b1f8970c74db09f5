"""The console's fast checkbox renderer must print exactly what Django's templates print."""

from __future__ import annotations

import pytest
from django import forms

from beeos_console.core.filtersets import CheckboxSelectMultiple

CHOICES = [
    ("queued", "queued"),
    ("a<b", "a<b"),
    ('say "hi"', "say 'hi' & <b>bold</b>"),
    ("TASK_STATE_WORKING", "TASK_STATE_WORKING"),
]
GROUPED = [("Group <1>", [("x", "X"), ("y", "Y")]), ("z", "Z")]


@pytest.mark.parametrize("choices", [CHOICES, GROUPED])
@pytest.mark.parametrize(
    "value", [None, [], ["queued"], ["a<b", 'say "hi"'], ["not-a-choice"], ["x", "z"]]
)
@pytest.mark.parametrize("attrs", [None, {"id": "id_status"}, {"id": "f", "class": "c"}])
def test_same_html_as_djangos_templates(choices, value, attrs):
    ours = CheckboxSelectMultiple(choices=choices).render("status", value, attrs=attrs)
    django = forms.CheckboxSelectMultiple(choices=choices).render("status", value, attrs=attrs)
    assert str(ours) == str(django)
