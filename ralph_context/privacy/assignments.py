"""Values assigned to names that say secret: ``PASSWORD=...``, ``api_key: ...``,
``"token": "..."``, ``--password ...``, in env files, YAML, JSON, shell and code.

A provider token has a shape; a password has none, so its *name* is the evidence. The
name must carry a secret word as a word of its own (``DB_PASSWORD``, ``apiKey``,
``client-secret``; not ``tokenizer``), and the words after it must not turn it into
something else (``token_type``, ``password_file``, ``secret_name``, ``max_tokens`` with a
number). The value must be a literal: references and placeholders (``$DB_PASSWORD``,
``${TOKEN}``, ``<your key>``, ``os.environ["TOKEN"]``, ``password = get_password()``), type
annotations (``token: str``) and prose (``the token: it expired``) are left alone, since
rewriting them loses memory and protects nothing.

Search goes secret word first (a short alternation the regex engine scans fast), then
grows the name around it and reads the operator and value after it, instead of one
pattern that backtracks over every word of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "SECRET_WORD",
    "Assignment",
    "ascii_lower",
    "assignments",
    "is_placeholder",
    "kind_of_name",
    "secret_name",
    "secret_value",
]

SECRET_WORD = re.compile(
    r"password|passwd|passphrase|pwd|secret|token|api[_\-]?key|access[_\-]?key|account[_\-]?key|"
    r"private[_\-]?key|signing[_\-]?key|encryption[_\-]?key|auth[_\-]?key|credentials?"
)
# Every secret word holds one of these (a cheap test before the search).
_STEMS = ("pass", "pwd", "secret", "token", "key", "credential")
# Searched in ASCII-lower-cased text (same length, same offsets): a case-sensitive
# alternation of literals is scanned by its first letters, ten times faster than re.I here.
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    """``text`` lower-cased with every offset kept: ``str.lower`` (a few microseconds for
    2 KB) unless a character lower-cases to two (``İ``), then A-Z only (``translate``,
    hundreds of microseconds)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_LOWER)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_QUOTED = r"(?P<quote>\\?[\"'])(?P<quoted>(?:(?!(?P=quote))[^\n]){0,512}?)(?P=quote)"
_BARE = r"(?P<bare>[^\s\"'`,;{}\[\]()<>]{1,512})"
# After the name: a closing quote of a JSON/YAML key, the operator, then the value.
_ASSIGNED = re.compile(
    r"(?P<close>\\?[\"']?)[ \t]*(?P<op>:=|=>|==?|:)[ \t]*(?:" + _QUOTED + "|" + _BARE + ")"
)
# A command-line flag and its value: --password hunter2.
_FLAG_VALUE = re.compile(r"[ \t]+(?:" + _QUOTED + "|" + _BARE + ")")

# Words after the secret word that make the name about something else than the secret.
_NOT_THE_SECRET = frozenset(
    "type types count counts len length limit limits budget budgets url uri urls endpoint "
    "file files path paths dir name names header headers expiry expires expiration expired "
    "ttl env var vars field fields min max policy hint hints prompt reset id ids kind format "
    "size location provider providers required enabled rotation version label store manager "
    "helper source prefix pattern patterns regex rule rules usage used per estimate encoder "
    "index position ref refs arn key_id valid invalid length_min length_max mode strength "
    "lifetime timeout scope scopes audience issuer method methods text node nodes stream "
    "list set sets map string str class cls obj tree info num number start end pos offset "
    "span spans line lines range char chars word words table reader writer parser lexer "
    "buffer code prompt prompts input output kwargs args stdin".split()
)
# Values that stand in for a secret in docs and tests: no secret to protect, a memory to keep.
DUMMIES = frozenset(
    "password passwd pass pwd secret token apikey api_key key changeme test testing dummy "
    "fake example sample foo bar baz qux placeholder redacted hidden masked mypassword "
    "yourpassword mysecret yoursecret mytoken yourtoken xxx".split()
)
# A value that is itself a name of a secret (NextToken, PUBLIC_KEY_OR_PASSWORD,
# client_credentials): an enum or a field name in code and API models, not a secret.
_NAME_PARTS = frozenset(
    "password passwords passwd pwd passphrase secret secrets token tokens key keys "
    "credential credentials apikey".split()
)
_NAME_LIKE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# The shortest literal taken for a secret: shorter values are flags, letters, markers.
_MIN_VALUE = 4
# After a bare value, these mean code: a parameter's annotation (token: Token) or default,
# an argument passed on (password=password), a union (str | None).
_CODE_AFTER = re.compile(r"[ \t]*(?:[),\]}|]|=(?!=))")
# Words before the secret word that make the name a count or a setting: max_tokens,
# prompt_tokens, total_tokens, remaining_tokens.
_COUNTING = frozenset(
    "max min num total count input output prompt completion cached reasoning remaining "
    "used budget limit per estimated".split()
)
_NUMERIC_NAME_WORDS = ("token", "tokens")
_TYPE_WORDS = frozenset(
    "str string int bytes bool boolean any optional none null nil undefined true false yes "
    "no on off secretstr secretbytes text required number char varchar object dict list "
    "unknown redacted masked hidden empty".split()
)
_PLACEHOLDER = re.compile(
    r"^(?:[\$%]|\{\{|<.*>$|\[REDACTED|[*xX.#•\-_]+$)|\.\.\.|…|your[_\-]|_here$|^(?:changeme|todo|tbd)$",
    re.IGNORECASE,
)
# A file's path (GOOGLE_APPLICATION_CREDENTIALS=/app/key.json): where a secret is, not it.
_PATH = re.compile(
    r"^(?:~?/|\.{1,2}/|[A-Za-z]:\\)|^[\w.\-]+/[\w./\-]*\.(?:json|pem|key|ya?ml|txt|env|p12|crt)$"
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_NUMBER = re.compile(r"^[+\-]?(?:\d[\d_]*\.?\d*|\.\d+)(?:e[+\-]?\d+)?[a-z%]{0,3}$", re.IGNORECASE)
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

_KINDS = (
    ("pass", "password"),
    ("pwd", "password"),
    ("api", "api_key"),
    ("access", "access_key"),
    ("account", "account_key"),
    ("private", "private_key"),
    ("credential", "credential"),
    ("token", "token"),
)


@dataclass(frozen=True)
class Assignment:
    """A secret value found after a secret name: its span and its kind."""

    start: int
    end: int
    kind: str


def kind_of_name(word: str) -> str:
    """The kind a secret word stands for (``password``, ``token``, ``api_key``, ...)."""
    lowered = word.lower()
    for prefix, kind in _KINDS:
        if lowered.startswith(prefix):
            return kind
    return "secret"


def secret_name(name: str, word_start: int, word_end: int) -> bool:
    """Whether ``name`` (with its secret word at ``word_start:word_end``) names a secret."""
    before = name[word_start - 1] if word_start > 0 else ""
    if before.isalpha() and not (before.islower() and name[word_start].isupper()):
        return False  # inside a word: "mytoken" is fine, "retoken"/"Atoken" are not names
    after = name[word_end:]
    if after[:1].islower() and after[:1] != "s":
        return False  # "tokenizer", "secretary", "passwordless"
    if after[:1] == "s" and after[1:2].isalpha() and not after[1:2].isupper():
        return False
    words = {w.lower() for w in _CAMEL.findall(after)}
    before_words = {w.lower() for w in _CAMEL.findall(name[:word_start])}
    return not words & _NOT_THE_SECRET and not before_words & _COUNTING


def is_placeholder(value: str) -> bool:
    """A value that stands in for a secret: a reference, a template, a dummy word."""
    text = value.strip()
    lowered = text.lower()
    return (
        not text
        or lowered in _TYPE_WORDS
        or lowered in DUMMIES
        or _PLACEHOLDER.search(text) is not None
    )


def secret_value(value: str, *, word: str, op: str, quoted: bool, spaced: bool) -> bool:
    """Whether ``value``, assigned to a secret name, is a literal secret worth redacting."""
    text = value.strip()
    if len(text) < _MIN_VALUE or is_placeholder(text) or _PATH.match(text):
        return False
    if _NAME_LIKE.match(text) and {w.lower() for w in _CAMEL.findall(text)} & _NAME_PARTS:
        return False
    if _NUMBER.match(text):
        # max_tokens: 1200 is a number; a numeric password of 4+ digits is a password.
        return not word.lower().startswith(_NUMERIC_NAME_WORDS) and len(text) >= 4
    if quoted:
        return True
    # Bare values: in code (spaces around "="), an identifier is a variable, not a secret;
    # a dotted one is an attribute (settings.api_key) wherever it appears.
    if _IDENTIFIER.match(text) and ("." in text or (op in ("=", ":=", "=>") and spaced)):
        return False
    return not ("(" in text or "[" in text)


def _name_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    while end < len(text) and text[end] in _NAME_CHARS:
        end += 1
    return start, end


def _prose_follows(text: str, match: re.Match[str]) -> bool:
    """A bare word followed by more words after a colon is a sentence ("the token: The
    platform...", "1Password: a manager")."""
    bare = match.group("bare")
    if bare is None or not bare.isalpha() or len(bare) > 12:
        return False
    rest = text[match.end() : match.end() + 2]
    return len(rest) == 2 and rest[0] == " " and rest[1].isalpha()


def assignments(text: str, lowered: str | None = None) -> Iterator[Assignment]:
    """Every secret value assigned to a secret name in ``text`` (``lowered``: its
    :func:`ascii_lower`, when the caller has it)."""
    folded = ascii_lower(text) if lowered is None else lowered
    if not any(stem in folded for stem in _STEMS):
        return  # str.find over 2 KB is a microsecond; the alternation below is ~80
    position = 0
    while (found := SECRET_WORD.search(folded, position)) is not None:
        name_start, name_end = _name_span(text, found.start(), found.end())
        position = max(name_end, found.end())
        name = text[name_start:name_end]
        word = found.group()
        if name_start > 0 and text[name_start - 1] == ":":
            continue  # a part of an ARN or a type name: arn:...:secret:x, AWS::IAM::AccessKey
        if not secret_name(name, found.start() - name_start, found.end() - name_start):
            continue
        match = _ASSIGNED.match(text, name_end)
        flag = name.startswith("--")
        if match is None and flag:
            match = _FLAG_VALUE.match(text, name_end)
        if match is None:
            continue
        op = match.groupdict().get("op") or " "
        if op == "==":
            continue  # a comparison, not an assignment
        quoted = match.group("quoted") is not None
        value = match.group("quoted") if quoted else match.group("bare")
        spaced = (
            match.start("op") > name_end + len(match.group("close") or "") if op != " " else True
        )
        if op in (":", " ") and _prose_follows(text, match):
            continue
        if not quoted and text[match.end() : match.end() + 1] in ("(", "["):
            continue  # a call or a subscript: token=get_token(), key=env["KEY"]
        if not quoted and _IDENTIFIER.match(value) and _CODE_AFTER.match(text, match.end()):
            continue  # def f(token: Token), f(password=password, ...), key: str | None
        if not secret_value(value, word=word, op=op, quoted=quoted, spaced=spaced):
            continue
        group = "quoted" if quoted else "bare"
        yield Assignment(match.start(group), match.end(group), kind_of_name(word))
        position = max(position, match.end())
