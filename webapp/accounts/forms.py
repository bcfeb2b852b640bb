"""Forms for signing in and registering."""
from __future__ import annotations

from confusable_homoglyphs import confusables
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
        return username
