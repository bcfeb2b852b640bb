"""Forms for signing in and registering."""
from __future__ import annotations

import functools

from confusable_homoglyphs import confusables
from confusable_homoglyphs.utils import load as load_confusables
from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _


class StudentRegistrationForm(UserCreationForm):
    """A new student: username, optional e-mail, password twice (Django's validators apply)."""

    email = forms.EmailField(label=_("E-mail (optional)"), required=False)

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def clean_username(self) -> str:
        username = super().clean_username()
        if confusables.is_dangerous(username):  # e.g. "аdmin" with a Cyrillic а: passes for someone else
            raise forms.ValidationError(
                _("This name mixes alphabets whose letters look alike; write it in one alphabet."), code="confusable"
            )
        mask = skeleton(username)
        if any(skeleton(name) == mask for name in User.objects.values_list("username", flat=True)):  # e.g. "асе" in Cyrillic beside "ace"
            raise forms.ValidationError(
                _("This name looks like the name of an existing user; choose one that looks different."),
                code="look_alike",
            )
        return username


def skeleton(name: str) -> str:
    """What `name` looks like: every character replaced by one representative of the characters it can be
    confused with (Unicode's confusables: Cyrillic "а" and Latin "a", "1" and "l"), then case folded, twice so
    that what case folding turned up is mapped too. Two names with one skeleton look alike."""
    table = _look_alike_table()
    for _round in range(2):
        name = "".join(table.get(char, char) for char in name).casefold()
    return name


@functools.cache
def _look_alike_table() -> dict[str, str]:
    """Each single character in Unicode's confusables -> its group's representative (the smallest ASCII
    member, case folded, where the group has one; else its smallest member)."""
    parent: dict[str, str] = {}

    def root(char: str) -> str:
        while parent.setdefault(char, char) != char:
            parent[char] = parent[parent[char]]
            char = parent[char]
        return char

    for char, glyphs in load_confusables("confusables.json").items():
        for glyph in glyphs:
            if len(char) == 1 and len(glyph["c"]) == 1:  # sequences ("rn" for "m") are left out
                parent[root(char)] = root(glyph["c"])
    groups: dict[str, list[str]] = {}
    for char in list(parent):
        groups.setdefault(root(char), []).append(char)
    table: dict[str, str] = {}
    for members in groups.values():
        ascii_members = [c for c in members if c.isascii()]
        representative = min(ascii_members).casefold() if ascii_members else min(members)
        table.update(dict.fromkeys(members, representative))
    return table
