"""``{% samefor %}``: a fragment of a page's frame drawn once per process and key.

The frame around every page (brand, main navigation, shortcut dialog, the words
console.js reads) is the same for everyone who shares a language and the few
values it depends on, yet costs dozens of ``{% translate %}`` and ``{% url %}``
calls per request. ``samefor`` keeps the drawn markup on the template node, keyed by

* the active language, the URL prefix and URLconf (what ``{% translate %}`` and
  ``{% url %}`` read), and a generation bumped whenever a setting changes;
* the values named in the tag, e.g. ``{% samefor admin=is_admin_role %}``.

The fragment is drawn with a context holding those named values and nothing else
(no request, user, CSRF token or CSP nonce): a variable not named in the tag is
empty inside it, so nothing of one user can reach another's page through the
cache. Keys must be hashable (strings, booleans, None).
"""

from __future__ import annotations

from typing import Any

from django import template
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.template.base import FilterExpression, NodeList, Parser, Token
from django.urls import get_script_prefix, get_urlconf
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

register = template.Library()

# A fragment keeps at most this many drawings (languages x roles x sections is far less).
MAX_KEYS = 512

_generation = 0


@receiver(setting_changed)
def _forget_all(**kwargs: Any) -> None:
    """Settings changed (tests): every fragment is drawn afresh."""
    global _generation
    _generation += 1


class SameForNode(template.Node):
    def __init__(self, nodelist: NodeList, keys: dict[str, FilterExpression]) -> None:
        self.nodelist = nodelist
        self.keys = keys
        self.drawn: dict[tuple[Any, ...], SafeString] = {}

    def render(self, context: template.Context) -> SafeString:
        values = {name: expr.resolve(context) for name, expr in self.keys.items()}
        key = (
            _generation,
            get_language(),
            get_script_prefix(),
            get_urlconf(),
            context.autoescape,
            *values.values(),
        )
        found = self.drawn.get(key)
        if found is None:
            # Only the named values: nothing else of this request can be drawn in.
            isolated = template.Context(
                values,
                autoescape=context.autoescape,
                use_l10n=context.use_l10n,
                use_tz=context.use_tz,
            )
            isolated.template = context.template
            found = mark_safe(self.nodelist.render(isolated))
            if len(self.drawn) >= MAX_KEYS:
                self.drawn.clear()
            self.drawn[key] = found
        return found


@register.tag
def samefor(parser: Parser, token: Token) -> SameForNode:
    """``{% samefor name=value ... %}…{% endsamefor %}`` (see the module's docstring)."""
    bits = token.split_contents()[1:]
    keys: dict[str, FilterExpression] = {}
    for bit in bits:
        name, sep, expr = bit.partition("=")
        if not sep or not name.isidentifier() or name in keys:
            raise template.TemplateSyntaxError(
                f"samefor takes name=value pairs, each name once; got {bit!r}"
            )
        keys[name] = parser.compile_filter(expr)
    nodelist = parser.parse(("endsamefor",))
    parser.delete_first_token()
    return SameForNode(nodelist, keys)
