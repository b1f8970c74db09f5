"""The page frame drawn once per language and role set (``{% samefor %}``,
core/templatetags/fragments.py): still each user's own, in each user's language."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.template import Context, Template, TemplateSyntaxError
from django.test import Client
from django.utils import translation

from beeos_console.core import roles

pytestmark = pytest.mark.django_db


def nav(response) -> str:
    html = response.content.decode()
    return html[html.index('id="main-nav"') : html.index("</nav>")]


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_each_role_sees_its_own_links_whoever_came_first(admin_user, operator_user, support_user):
    admin, operator, support = (
        signed_in(admin_user),
        signed_in(operator_user),
        signed_in(support_user),
    )
    for _ in range(2):  # the second round is drawn from the kept fragments
        admin_nav = nav(admin.get("/operations/"))
        operator_nav = nav(operator.get("/operations/"))
        support_nav = nav(support.get("/operations/"))
        assert "Audit log" in admin_nav and ">Admin<" in admin_nav
        assert "Bulk jobs" in operator_nav and "Audit log" not in operator_nav
        assert ">Admin<" not in operator_nav
        assert "Bulk jobs" not in support_nav and "Audit log" not in support_nav


def test_a_revoked_role_is_gone_on_the_next_page(operator_user):
    client = signed_in(operator_user)
    assert "Bulk jobs" in nav(client.get("/tasks/"))
    operator_user.groups.set([Group.objects.get_or_create(name=roles.SUPPORT)[0]])
    assert "Bulk jobs" not in nav(client.get("/tasks/"))


def test_the_current_section_and_the_language_follow_the_request(support_user):
    client = signed_in(support_user)
    tasks = nav(client.get("/tasks/"))
    operations = nav(client.get("/operations/"))
    assert re.search(r'href="/tasks/" aria-current="page">Tasks<', tasks)
    assert 'aria-current="page">Operations<' not in tasks
    assert re.search(r'aria-current="page">Operations<', operations)
    chinese = client.get("/operations/", headers={"accept-language": "zh-hans"})
    with translation.override("zh-hans"):
        assert translation.gettext("Operations") in nav(chinese)
    assert '<span class="lang-current" lang="zh-hans"' in chinese.content.decode()
    english = client.get("/operations/", headers={"accept-language": "en"})
    assert ">Operations<" in nav(english)
    assert '<span class="lang-current" lang="en"' in english.content.decode()


def test_csrf_tokens_and_user_names_are_never_kept(admin_user, support_user):
    pages = [signed_in(u).get("/tasks/").content.decode() for u in (admin_user, support_user)]
    token = r'action="/logout/"><input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)"'
    logout_tokens = [re.search(token, page) for page in pages]
    assert all(logout_tokens)
    assert logout_tokens[0].group(1) != logout_tokens[1].group(1)
    assert '<span translate="no">ada-admin</span>' in pages[0]
    assert '<span translate="no">sam-support</span>' in pages[1]
    assert "ada-admin" not in pages[1]


def test_a_fragment_draws_only_the_values_it_is_keyed_on():
    template = Template(
        "{% load fragments %}{% samefor name=who %}<b>{{ name }}</b>{{ secret }}{% endsamefor %}"
    )
    assert template.render(Context({"who": "<x>", "secret": "s1"})) == "<b>&lt;x&gt;</b>"
    assert template.render(Context({"who": "y", "secret": "s2"})) == "<b>y</b>"
    assert template.render(Context({"who": "<x>", "secret": "s3"})) == "<b>&lt;x&gt;</b>"


@pytest.mark.parametrize("tag", ["{% samefor who %}", "{% samefor a=x a=y %}", "{% samefor 1=x %}"])
def test_keys_are_name_value_pairs(tag):
    with pytest.raises(TemplateSyntaxError):
        Template("{% load fragments %}" + tag + "{% endsamefor %}")
