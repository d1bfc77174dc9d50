"""The site's icon: named by every console page, and /favicon.ico (what a browser asks for on a
page that names none: the admin, the API docs) leads to it instead of a logged 404."""

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static


def test_the_icon_is_a_static_svg():
    path = finders.find("favicon.svg")
    assert path and open(path).read().lstrip().startswith("<svg")


@pytest.mark.django_db
def test_favicon_ico_redirects_to_the_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == static("favicon.svg")


@pytest.mark.django_db
def test_console_pages_name_the_icon(client):
    page = client.get("/console/sign-in/").content.decode()
    assert f'<link rel="icon" href="{static("favicon.svg")}" type="image/svg+xml">' in page
