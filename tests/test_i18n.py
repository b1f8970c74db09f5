"""Issue #15, point 4: English and Simplified Chinese.

The catalogue (``beeos_console/locale/zh_Hans/LC_MESSAGES/django.po``) is complete:
every msgid translated, none fuzzy, placeholders and markup kept, and nothing the
templates or the Python code mark is missing from it. Pages rendered in Chinese show
no English sentence outside raw values (ids, wire states, codes: ``<code>``,
``<kbd>``, ``<pre>`` or ``translate="no"``). The language follows Accept-Language
until the header switcher sets Django's language cookie; raw values, JSON keys and
times in UTC stay as they are.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client, TestCase
from django.urls import reverse
from django.utils import translation

from beeos_console.core import roles
from beeos_console.core.links import object_url
from beeos_console.projection.models import ProjectionJob
from beeos_console.projection.reprojection import run_projection_job
from operations.models import RuntimeOperation
from tasks.models import Task

from .factories import make_task

REPO = Path(__file__).resolve().parents[1]
LOCALE = REPO / "beeos_console" / "locale"
CATALOGUES = sorted(LOCALE.glob("*/LC_MESSAGES/*.po"))
ZH = "zh-hans"
ZH_BROWSER = "zh-CN,zh;q=0.9,en;q=0.5"

# Words that stay as they are in Chinese text: names of products, protocols and formats
# (the BeeOS Chinese documents write them so too).
KEPT_WORDS = {
    "BeeOS", "OpenAPI", "JSON", "RPC", "CSV", "UTC", "URL", "URLs", "HTTP", "API", "ID",
    "Runtime", "Operation", "Message", "Envelope", "Agent", "agent", "card", "MCP", "ACP",
    "SDK", "SSO", "OIDC", "PostgreSQL", "Chromium", "Prometheus",
}  # fmt: skip
# Two or more English words in a row (separated by spaces only): an untranslated sentence.
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’]+(?:[ \t\n\xa0]+[A-Za-z][A-Za-z'’]+)+")
PLACEHOLDER = re.compile(
    r"%\([A-Za-z_][A-Za-z0-9_]*\)[-#0 +]*\d*(?:\.\d+)?[sdifrx]|%[sdifr]|\{[A-Za-z_][A-Za-z0-9_]*\}"
)
TAG = re.compile(r"</?([a-zA-Z][a-zA-Z0-9]*)\b[^>]*>")


def catalogue(path: Path) -> polib.POFile:
    return polib.pofile(str(path), wrapwidth=0)


# --- The catalogue ------------------------------------------------------------


def test_there_is_a_simplified_chinese_catalogue_with_one_plural_form():
    assert [p.relative_to(LOCALE).parts[0] for p in CATALOGUES] == ["zh_Hans"]
    po = catalogue(CATALOGUES[0])
    assert po.metadata["Language"] == "zh_Hans"
    assert po.metadata["Plural-Forms"].replace(" ", "") == "nplurals=1;plural=0;"
    assert len(po) > 500  # the whole console, not a sample


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: str(p.relative_to(LOCALE)))
def test_every_msgid_is_translated_and_none_is_fuzzy(path: Path):
    po = catalogue(path)
    untranslated = [e.msgid for e in po if not e.obsolete and not translated(e)]
    fuzzy = [e.msgid for e in po if not e.obsolete and "fuzzy" in e.flags]
    assert not untranslated, f"{len(untranslated)} msgids have no translation: {untranslated[:20]}"
    assert not fuzzy, f"{len(fuzzy)} translations are fuzzy (check, then drop the flag): {fuzzy}"
    assert "fuzzy" not in po.metadata_as_entry().flags


def translated(entry: polib.POEntry) -> bool:
    if entry.msgid_plural:
        return bool(entry.msgstr_plural) and all(s.strip() for s in entry.msgstr_plural.values())
    return bool(entry.msgstr.strip())


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: str(p.relative_to(LOCALE)))
def test_translations_keep_their_placeholders_and_markup(path: Path):
    """Same %(name)s / {name} placeholders, same HTML tags (a blocktranslate's text is
    not escaped: a translation must not add markup), no ASCII double quote (it would end
    an HTML attribute the string is written into)."""
    problems = []
    for entry in catalogue(path):
        sources = [entry.msgid] + ([entry.msgid_plural] if entry.msgid_plural else [])
        targets = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
        want = sorted(set(PLACEHOLDER.findall(" ".join(sources))))
        for target in targets:
            got = sorted(set(PLACEHOLDER.findall(target)))
            if got != want:
                problems.append(f"placeholders {got} != {want}: {entry.msgid!r}")
            if tags(target) != tags(entry.msgid):
                problems.append(f"markup differs: {entry.msgid!r} -> {target!r}")
            if '"' in target and '"' not in entry.msgid:
                problems.append(f"an ASCII double quote was added: {target!r}")
    assert not problems, "\n".join(problems)


def tags(text: str) -> list[str]:
    """Every tag, attributes included, in any order (a translation may reorder them)."""
    return sorted(m.group(0) for m in TAG.finditer(text))


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: str(p.relative_to(LOCALE)))
def test_msgfmt_accepts_the_catalogue_and_the_compiled_one_is_fresh(path: Path, tmp_path):
    msgfmt = shutil.which("msgfmt")
    if msgfmt is None:
        pytest.skip("GNU gettext's msgfmt is missing (apt-get install gettext)")
    checked = subprocess.run(
        [msgfmt, "--check", "-o", str(tmp_path / "out.mo"), str(path)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    compiled = path.with_suffix(".mo")
    assert compiled.exists(), f"{compiled} is missing: `make install` compiles it"
    assert compiled.stat().st_mtime >= path.stat().st_mtime, (
        f"{compiled} is older than its .po: `make install` compiles it again"
    )


def test_the_catalogue_holds_every_string_the_code_marks(tmp_path):
    """``make messages`` would add nothing: every string marked in a template or in
    Python is in the catalogue (run on a copy of the sources; the tree is not touched)."""
    copy = tmp_path / "src"
    ignore = shutil.ignore_patterns("*.mo", "__pycache__", "*.pyc")
    for name in ("beeos_console", "tasks", "operations", "templates"):
        shutil.copytree(REPO / name, copy / name, ignore=ignore)
    shutil.copy(REPO / "manage.py", copy / "manage.py")
    result = subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "--no-location"],
        cwd=copy,
        capture_output=True,
        text=True,
        env={**subprocess_env(), "PYTHONPATH": str(copy)},
    )
    assert result.returncode == 0, result.stderr
    fresh = catalogue(copy / "beeos_console" / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po")
    stored = {(e.msgctxt, e.msgid) for e in catalogue(CATALOGUES[0]) if not e.obsolete}
    missing = [e.msgid for e in fresh if not e.obsolete and (e.msgctxt, e.msgid) not in stored]
    assert not missing, f"not in the catalogue (run `make messages`, translate): {missing[:20]}"


def subprocess_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


# --- Choosing the language ------------------------------------------------------------


def test_settings_offer_english_and_simplified_chinese():
    assert settings.LANGUAGE_CODE == "en"
    assert [code for code, _ in settings.LANGUAGES] == ["en", ZH]
    middleware = settings.MIDDLEWARE
    locale = middleware.index("django.middleware.locale.LocaleMiddleware")
    assert middleware.index("django.contrib.sessions.middleware.SessionMiddleware") < locale
    assert locale < middleware.index("django.middleware.common.CommonMiddleware")


def test_the_language_follows_accept_language_without_a_choice(client):
    chinese = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE=ZH_BROWSER)
    assert chinese["Content-Language"] == ZH
    html = chinese.content.decode()
    assert '<html lang="zh-hans">' in html and "登录" in html and "Log in" not in html

    english = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="en-GB,en;q=0.8")
    assert english["Content-Language"] == "en"
    assert '<html lang="en">' in english.content.decode()
    # A language the console does not have: English, the default.
    assert client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="fr-FR")["Content-Language"] == "en"


def test_the_switcher_is_a_form_with_csrf_that_works_before_logging_in():
    client = Client(enforce_csrf_checks=True)
    page = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    form = re.search(r'<form class="lang-switch"[^>]*>.*?</form>', page, re.S).group(0)
    assert f'action="{reverse("set_language")}"' in form and 'method="post"' in form
    assert 'name="csrfmiddlewaretoken"' in form
    assert 'name="language" value="zh-hans" lang="zh-hans">简体中文</button>' in form
    assert 'aria-current="true">English</span>' in form
    # Without the token: refused, nothing remembered.
    refused = client.post(reverse("set_language"), {"language": ZH, "next": "/login/"})
    assert refused.status_code == 403
    assert settings.LANGUAGE_COOKIE_NAME not in refused.cookies


@pytest.mark.django_db
def test_the_switcher_remembers_the_choice_over_accept_language(support_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(support_user)
    page = client.get(reverse("tasks:list"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert 'name="next"' not in page
    # No "next" field: back to the page the form was sent from (the Referer, same-origin).
    switched = client.post(
        reverse("set_language"),
        {"language": ZH, "csrfmiddlewaretoken": token},
        HTTP_REFERER="http://testserver/tasks/?status=failed",
    )
    assert switched.status_code == 302
    assert switched["Location"] == "http://testserver/tasks/?status=failed"
    cookie = switched.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == ZH
    assert int(cookie["max-age"]) >= 300 * 24 * 3600  # remembered, not for this session only
    assert cookie["httponly"] and cookie["samesite"] == "Lax"

    # The browser still says English: the choice wins.
    html = client.get("/tasks/?status=failed", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="zh-hans">' in html and "任务" in html
    assert 'aria-current="true">简体中文</span>' in html

    # And back to English.
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    client.post(reverse("set_language"), {"language": "en", "csrfmiddlewaretoken": token})
    assert '<html lang="en">' in client.get("/", HTTP_ACCEPT_LANGUAGE=ZH_BROWSER).content.decode()


def test_a_foreign_referer_or_next_is_not_followed(client):
    answer = client.post(
        reverse("set_language"),
        {"language": ZH, "next": "https://evil.example/"},
        HTTP_REFERER="https://evil.example/x",
    )
    assert answer.status_code == 302 and answer["Location"] == "/"


# --- Pages in Chinese ------------------------------------------------------------


class VisibleText(HTMLParser):
    """The text a reader sees (and the attributes a screen reader or tooltip says),
    leaving out raw values (<code>, <kbd>, <pre>, <samp>, anything translate="no") and
    what people or agents wrote (cancel reasons, message bodies: in their own words)."""

    RAW_TAGS = {"code", "kbd", "pre", "samp", "script", "style", "template"}
    WRITTEN_BY_PEOPLE = {"user-text", "body-cell"}
    SAID_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt")
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
            "source", "track", "wbr"}  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skipping: list[str] = []  # the tag that started a raw subtree, once per level
        self.chunks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skipping:
            if tag == self.skipping[0] and tag not in self.VOID:
                self.skipping.append(tag)
            return
        values = dict(attrs)
        classes = set((values.get("class") or "").split())
        if (
            tag in self.RAW_TAGS
            or values.get("translate") == "no"
            or classes & self.WRITTEN_BY_PEOPLE
        ):
            if tag not in self.VOID:
                self.skipping.append(tag)
            return
        for name in self.SAID_ATTRIBUTES:
            if values.get(name):
                self.chunks.append(values[name])

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.skipping and dict(attrs).get("translate") != "no":
            for name in self.SAID_ATTRIBUTES:
                if dict(attrs).get(name):
                    self.chunks.append(dict(attrs)[name])

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and tag == self.skipping[0]:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.chunks.append(data)


def english_left(html: str, english_msgids: set[str]) -> list[str]:
    """Runs of English words, and whole texts that are an English msgid left as it is
    (a lone lowercase word may be a raw value: ``message``, ``failed``, not a msgid)."""
    parser = VisibleText()
    parser.feed(html)
    found = []
    for chunk in parser.chunks:
        text = " ".join(chunk.split())
        if text in english_msgids and not re.fullmatch(r"[a-z_]+", text):
            found.append(text)
            continue
        kept = re.sub(
            r"[A-Za-z][A-Za-z'’]+", lambda m: "·" if m.group(0) in KEPT_WORDS else m.group(0), text
        )
        found += [m.group(0) for m in ENGLISH_RUN.finditer(kept)]
    return found


def test_the_visible_text_check_finds_english_and_leaves_raw_values_alone():
    msgids = {"Dashboard"}
    html = (
        '<h1>仪表盘</h1><p>状态 <code class="raw">input_required</code> · '
        '<span translate="no">olga operator</span><pre>Could not reach it</pre>'
        "<kbd>Enter</kbd> BeeOS Runtime Operation UTC</p>"
    )
    assert english_left(html, msgids) == []
    assert english_left("<p>任务 Not found upstream</p>", msgids) == ["Not found upstream"]
    assert english_left('<a title="Copy to clipboard">复制</a>', msgids) == ["Copy to clipboard"]
    assert english_left("<a>Dashboard</a>", msgids) == ["Dashboard"]
    assert english_left(
        '<p translate="no">raw <b>text</b> here</p><p>仍然 two words</p>', msgids
    ) == ["two words"]


def key_pages(client: Client) -> Iterator[tuple[str, str]]:
    """(name, path) of every kind of page, the detail pages in each of their states."""
    yield "dashboard", reverse("dashboard")
    yield "task list", reverse("tasks:list")
    yield "task list, failed", reverse("tasks:list") + "?status=failed&refresh=true"
    yield "message list", reverse("tasks:messages")
    yield "operation list", reverse("operations:list")
    tasks = Task.objects.order_by("pk")
    shown = set()
    for task in [
        *tasks.filter(outcome_certainty="uncertain")[:1],
        *tasks.filter(status="unmapped")[:1],
        *tasks.exclude(error_code="")[:1],
        *tasks.filter(status="cancelled")[:1],
        *tasks.filter(status="processing")[:1],
        *[tasks.filter(protocol=p).first() for p in ("openapi", "a2a", "product")],
    ]:
        if task is not None and task.pk not in shown:
            shown.add(task.pk)
            yield f"task {task.task_id}", task_url(task)
    for raw_status in RuntimeOperation.objects.values_list("raw_status", flat=True).distinct():
        op = RuntimeOperation.objects.filter(raw_status=raw_status).first()
        yield f"operation {op.operation_id} ({raw_status})", op_url(op)
    agent = tasks.exclude(agent_id="").values_list("agent_id", flat=True).first()
    yield "agent list", reverse("agents:list")
    yield f"agent {agent}", object_url("agents:detail", agent)
    yield "webhook inbox", reverse("webhooks:list")
    yield "audit log", reverse("audit:log")
    yield "projection audit", reverse("audit:projections")
    for job in ProjectionJob.objects.all():
        yield f"projection job {job.kind}", reverse("audit:projection-job", args=[job.pk])
    yield "lockouts", reverse("audit:lockouts")
    yield "saved views", reverse("saved-views:list")
    yield "search", reverse("search") + "?q=tsk"
    yield "search, nothing", reverse("search") + "?q=zzzz-nothing"
    yield "search, empty", reverse("search")
    yield "bulk jobs", reverse("bulk:list")
    yield "bulk preview", reverse("bulk:cancel", args=["task"]) + "?scope=all&query=status%3Dqueued"
    yield "bulk, nothing selected", reverse("bulk:cancel", args=["operation"]) + "?scope=selected"
    yield "not found", "/tasks/no-such-task/"


def task_url(task: Task) -> str:
    return object_url("tasks:detail", task.task_id, protocol=task.protocol)


def op_url(op: RuntimeOperation) -> str:
    return object_url("operations:detail", op.operation_id)


def english_msgids() -> set[str]:
    return {
        e.msgid
        for e in catalogue(CATALOGUES[0])
        if e.msgstr and e.msgstr != e.msgid and not e.msgid_plural
    }


class TestPagesInChinese(TestCase):
    """The demo data (every vocabulary value, unmapped ones too), seeded once for the
    class by a Chinese operator: what the console stores as said (cancel messages) is
    said in Chinese. Every role (the admin sees every page), browsing in Chinese."""

    @classmethod
    def setUpTestData(cls) -> None:
        with translation.override(ZH):
            call_command("seed_demo", "--no-users", "--with-unmapped", stdout=StringIO())
        # A task failed with an error code (the demo's tasks carry none).
        make_task(
            "failed", error={"type": "api_error", "code": "service_timeout", "message": "gave up"}
        )
        user = get_user_model().objects.create_user(username="ada-zh", password="pw-ada-zh")
        for role in (roles.SUPPORT, roles.OPERATOR, roles.ADMIN):
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        cls.user = user
        for kind in (ProjectionJob.Kind.AUDIT, ProjectionJob.Kind.DRY_RUN):
            job = ProjectionJob.objects.create(kind=kind, requested_by="ada-zh")
            run_projection_job.call(job.pk)

    def setUp(self) -> None:
        self.client = Client(HTTP_ACCEPT_LANGUAGE=ZH_BROWSER)
        self.client.force_login(self.user)

    def test_every_key_page_is_all_chinese_but_its_raw_values(self):
        msgids = english_msgids()
        left: dict[str, list[str]] = {}
        for name, path in key_pages(self.client):
            response = self.client.get(path)
            assert response.status_code < 500, (name, path, response.status_code)
            html = response.content.decode()
            assert '<html lang="zh-hans">' in html, name
            found = english_left(html, msgids)
            if found:
                left[f"{name} {path}"] = sorted(set(found))
        anonymous = Client(HTTP_ACCEPT_LANGUAGE=ZH_BROWSER)
        found = english_left(anonymous.get(reverse("login")).content.decode(), msgids)
        if found:
            left["login"] = found
        report = "\n".join(f"{page}: {words}" for page, words in left.items())
        assert not left, f"English left on pages rendered in Chinese:\n{report}"

    def test_a_cancel_in_chinese_answers_in_chinese(self):
        task = Task.objects.filter(status="processing", protocol="openapi").first()
        page = self.client.get(task_url(task)).content.decode()
        key = re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)
        answer = self.client.post(
            object_url("tasks:cancel", task.task_id),
            {"protocol": task.protocol, "idempotency_key": key, "reason": "客户要求停止"},
            HTTP_HX_REQUEST="true",
        )
        html = answer.content.decode()
        assert "已取消。" in html, html
        assert english_left(html, english_msgids()) == []

    def test_raw_values_times_and_json_stay_as_they_are(self):
        task = Task.objects.exclude(error_code="").filter(protocol="openapi").first()
        html = self.client.get(task_url(task)).content.decode()
        # The raw state and the error code verbatim, in elements no browser translates.
        assert f'<code class="raw">{task.raw_state}</code>' in html
        assert f'<code class="error-code">{task.error_code}</code>' in html
        assert f"<code>{task.projection_rule}</code>" in html  # the admin's rule id
        # Exact times: in UTC, and marked so.
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", html)
        # The API: keys and wire values never translated.
        english = Client(HTTP_ACCEPT_LANGUAGE="en")
        english.force_login(self.user)
        url = f"/api/v1/tasks/?q={task.task_id}"
        zh_rows = self.client.get(url).json()["results"]
        en_rows = english.get(url).json()["results"]
        assert zh_rows and len(zh_rows) == len(en_rows)
        for zh_row, en_row in zip(zh_rows, en_rows, strict=True):
            assert zh_row.keys() == en_row.keys()
            for field in RAW_FIELDS:
                assert zh_row.get(field) == en_row.get(field), field


RAW_FIELDS = (
    "task_id", "protocol", "raw_state", "wire_state", "status", "reason", "outcome_certainty",
    "retry_policy", "projection_rule", "error_code",
)  # fmt: skip
