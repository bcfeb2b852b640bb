"""Strings of Django's admin and django-axes that their own zh_Hans catalogues lack: ours supplies them."""
from __future__ import annotations

from django.utils.translation import gettext_noop

# Marked here so that makemessages keeps them in locale/; the admin's templates and axes's models
# translate them at run time through the project's catalogue, which Django consults first.
STRINGS = (
    gettext_noop("Model name"),  # admin/app_list.html: column headings read by screen readers
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
    gettext_noop("access attempt"),  # axes's models
    gettext_noop("access attempts"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
)
