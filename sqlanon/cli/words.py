"""Library messages in the command line's words: the library names its keyword arguments
(``pass replace=True``), the command line its flags (``pass --replace``). Both come from
:mod:`sqlanon.request.schema`."""

from __future__ import annotations

import re

from ..request.schema import keyword_flags

#: The flag of each keyword of the Python API that library messages name (``constraints=`` has
#: no flag of its own: the privacy models' flags build them); ``enforce=`` is ``apply``'s.
FLAGS = {**keyword_flags(), "enforce": "--enforce"}
# keyword=  (not inside a constraint's description such as "l-diversity('s', l=2)", nor a name)
_KEYWORD = re.compile(r"(?<![\w.'\"(-])(?<!, )(?P<key>" + "|".join(FLAGS) + r")=(?P<value>True\b|\[\.\.\.\])?(?P<next>\S?)")
# bare multi-word identifiers, unambiguous without '=': "memory_rows must be ..."
_BARE = re.compile(r"(?<![\w.'\"-])(?P<key>" + "|".join(k for k in FLAGS if "_" in k) + r")\b(?!=)")


def cli_words(message: str) -> str:
    """A library message in the command line's words: its keyword arguments become flags.

    >>> cli_words("a view named 'x' already exists; pass replace=True to overwrite it or choose another view= name")
    "a view named 'x' already exists; pass --replace to overwrite it or choose another --view name"
    >>> cli_words("sensitive= and l= go together; memory_rows must be at least 0; k=501 is larger")
    '--sensitive and --l go together; --memory-rows must be at least 0; --k 501 is larger'
    >>> cli_words("the whole table does not satisfy entropy l-diversity('s', l=9)")
    "the whole table does not satisfy entropy l-diversity('s', l=9)"
    """
    def keyword(m: re.Match[str]) -> str:
        flag = FLAGS[m.group("key")]
        after = m.group("next")
        return flag + (" " + after if after and after not in ",;:.)]" else after)

    return _BARE.sub(lambda m: FLAGS[m.group("key")], _KEYWORD.sub(keyword, message))
