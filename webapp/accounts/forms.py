"""Forms for signing in and registering."""
from __future__ import annotations

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
