"""The shapes of secrets: provider tokens, private keys, credentials in URLs and headers.

Each rule names a *kind* (what ``[REDACTED:<kind>]`` says and what stats count) and a
pattern whose group ``secret`` (or, without it, the whole match) is the value to replace.
The shapes follow the providers' documented formats (and gitleaks' rules, which track
them); a rule matches the token's fixed prefix plus a body long enough to be a real
credential, so prose *about* a token ("AKIA is the prefix of AWS key ids") and digests
(git SHAs, sha256, UUIDs, which have no such prefix) are left alone. No rule guesses by
entropy: base64 fixtures and hashes are what a coding loop stores all day, and losing them
costs more memory than an entropy rule would save (detect-secrets' entropy plugins flagged
every git SHA and sha256 digest we tried).

``hints`` are lower-case substrings one of which every match contains: a text holding none
is not searched with that rule's pattern at all, which keeps a 2 KB text under a
millisecond with every rule on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_RULES", "Rule"]


@dataclass(frozen=True)
class Rule:
    """One kind of secret and how to find it."""

    kind: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]
    # The match must not continue a token to its left (checked here, not by a lookbehind,
    # which would keep the regex engine from scanning for the pattern's literal prefix).
    starts_token: bool = False
    # The value may be a stand-in ("postgres://user:password@host" in docs): skip those.
    placeholders: bool = False

    def secret_span(self, text: str, match: re.Match[str]) -> tuple[int, int] | None:
        """Where the value to replace sits in ``match`` (the first group named ``secret``
        or ``secret_<how>`` that matched: a quoted value and a bare one are two groups,
        since a name cannot repeat; else all of it), or ``None`` when the match is the
        tail of a longer token."""
        start = match.start()
        if self.starts_token and start > 0 and text[start - 1] in _TOKEN_CHARS:
            return None
        for name in self.pattern.groupindex:
            if (name == "secret" or name.startswith("secret_")) and match.group(name) is not None:
                return match.span(name)
        return match.span()


# A letter or digit before the prefix makes it the middle of a word ("task-..." is not an
# OpenAI key); a separator does not ("session-npm_...", "TOKEN_ghp_...").
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_START = "(?<![A-Za-z0-9_\\-])"


def _rule(kind: str, pattern: str, *hints: str, flags: int = 0, placeholders: bool = False) -> Rule:
    starts_token = pattern.startswith(_START)
    body = pattern.removeprefix(_START)
    return Rule(kind, re.compile(body, flags), hints, starts_token, placeholders)


# A token body: letters, digits and the separators providers use; never ends a word early.
_END = r"(?![A-Za-z0-9_\-])"
# A password given to a command: quoted (spaces and all) or bare, up to the next blank.
_ARGUMENT = (
    r"(?:'(?P<secret_single>[^'\n]{1,256})'|\"(?P<secret_double>[^\"\n]{1,256})\""
    r"|(?P<secret>[^\s'\"]{1,256}))"
)
# The rest of one command before a flag: no newline, and no ;, | or & that would end it.
_SAME_COMMAND = r"[^\n;|&]{0,200}?(?<=\s)"


# A .pgpass line's fields (host, port, database, user: ``*`` for any), then its password
# (``\:`` escapes a colon), up to a blank, a quote or the end. ``_HOST``: a host name or
# ``*``.
_HOST = r"[A-Za-z0-9_.\-]{1,253}|\*"
_PGPASS = (
    r"(?<![\w.:/@\-])(?:{host}):(?:{port}):[^:\s'\"]{{1,63}}:"
    r"[^:\s'\"]{{1,63}}:(?P<secret>(?:\\:|[^\s'\":]){{1,256}})(?![^\s'\"])"
)


def _command_password(commands: str, flag: str) -> str:
    """A password given on a command line: one of ``commands`` (a regex of names), then,
    in the same command, ``flag`` (a regex ending where its value starts) and the value."""
    return rf"(?<![\w./\-])(?:{commands})\b{_SAME_COMMAND}(?:{flag}){_ARGUMENT}"


DEFAULT_RULES: tuple[Rule, ...] = (
    # Spans a user marks private: everything between the tags goes, tags stay.
    _rule(
        "private",
        r"<private>(?P<secret>.*?)(?:</private>|\Z)",
        "<private>",
        flags=re.DOTALL | re.IGNORECASE,
    ),
    # PEM blocks of every type (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, PGP): the body
    # between the armour lines; a block cut off before its END line loses its whole body.
    _rule(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?P<secret>.+?)(?=-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        "private key",
        flags=re.DOTALL,
    ),
    _rule(
        "anthropic_key",
        _START + r"sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_\-]{20,}",
        "sk-ant-",
    ),
    # OpenAI: sk-proj-/sk-svcacct-/sk-admin- keys, and the older sk- + 48 letters and
    # digits (no hyphen: "sk-learn-compatible-2024" is a word, not a key).
    _rule(
        "openai_key",
        _START + r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{32,})" + _END,
        "sk-",
    ),
    _rule(
        "aws_access_key_id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        "akia",
        "asia",
        "abia",
        "acca",
        "a3t",
    ),
    _rule("github_token", _START + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _END, "gh"),
    _rule("github_token", _START + r"github_pat_[A-Za-z0-9_]{22,255}" + _END, "github_pat_"),
    _rule("gitlab_token", _START + r"glpat-[A-Za-z0-9_\-]{20,}" + _END, "glpat-"),
    _rule("slack_token", _START + r"xox[abposre]-[A-Za-z0-9\-]{10,}" + _END, "xox"),
    _rule(
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows)/(?P<secret>[A-Za-z0-9/_\-]{20,})",
        "hooks.slack.com",
    ),
    _rule(
        "stripe_key",
        _START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _END,
        "_live_",
        "_test_",
    ),
    _rule("google_api_key", _START + r"AIza[0-9A-Za-z_\-]{35}" + _END, "aiza"),
    _rule("npm_token", _START + r"npm_[A-Za-z0-9]{36}" + _END, "npm_"),
    _rule("pypi_token", _START + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}", "pypi-"),
    _rule("huggingface_token", _START + r"hf_[A-Za-z0-9]{34,}" + _END, "hf_"),
    _rule("sendgrid_key", _START + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _END, "sg."),
    _rule("digitalocean_token", _START + r"do[por]_v1_[a-f0-9]{64}" + _END, "_v1_"),
    _rule("shopify_token", _START + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _END, "shp"),
    # JSON Web Tokens: header and payload are base64 JSON objects ("eyJ" is '{"').
    _rule(
        "jwt",
        _START + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
        "eyj",
    ),
    # user:password@host in any URL: the password goes, the user and host stay.
    _rule(
        "url_password",
        r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@'\"<>]{1,128}:(?P<secret>[^\s@/'\"<>]{1,256})@",
        "://",
        placeholders=True,
    ),
    # A user name left empty: redis://:password@host, amqp://:secret@broker.
    _rule(
        "url_password",
        r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://:(?P<secret>[^\s@/'\"<>]{1,256})@",
        "://:",
        placeholders=True,
    ),
    # Azure connection strings (storage, Service Bus, Event Hubs, IoT Hub): the account or
    # shared access key, and a SAS token's signature (sig=, URL-encoded base64).
    _rule(
        "azure_key",
        r"(?<![A-Za-z])(?i:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)[ \t]*=[ \t]*"
        r"(?P<secret>[A-Za-z0-9+/]{16,}(?:={0,2}|(?:%3D){0,2}))",
        "accountkey",
        "sharedaccesskey",
        "primarykey",
        "secondarykey",
        placeholders=True,
    ),
    _rule(
        "azure_sas",
        r"[?&;]sig=(?P<secret>[A-Za-z0-9%+/]{20,}(?:=|%3D){0,2})",
        "sig=",
    ),
    # Google OAuth: a client secret (GOCSPX-) and an access token (ya29.).
    _rule("google_oauth_secret", _START + r"GOCSPX-[A-Za-z0-9_\-]{20,}" + _END, "gocspx-"),
    _rule("google_oauth_token", _START + r"ya29\.[A-Za-z0-9_\-]{30,}" + _END, "ya29."),
    # Twilio: an API key's SID (SK + 32 hex) names the key, and pairs with its secret.
    _rule("twilio_api_key", _START + r"SK[0-9a-fA-F]{32}" + _END, "sk"),
    # Passwords on command lines of tools that take them there: the MySQL family's -pPASS
    # (attached: "-p db" prompts, and db is a database), sshpass -p, a registry login's
    # -p/--password, redis-cli -a, the MongoDB tools' -p.
    _rule(
        "password",
        _command_password(r"mysql\w*|mariadb[\w\-]*", r"-p(?=[^\s])"),
        "mysql",
        "mariadb",
        placeholders=True,
    ),
    _rule("password", _command_password("sshpass", r"-p[ \t]*"), "sshpass", placeholders=True),
    _rule(
        "password",
        _command_password(
            r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm(?:[ \t]+registry)?)[ \t]+login",
            r"(?:-p|--password)(?:[ \t]+|=)",
        ),
        "login",
        placeholders=True,
    ),
    _rule(
        "password",
        _command_password(r"redis-cli", r"(?:-a|--pass)(?:[ \t]+|=)"),
        "redis-cli",
        placeholders=True,
    ),
    _rule(
        "password",
        _command_password(
            r"mongo(?:sh|dump|restore|export|import|stat|top)?", r"(?:-p|--password)(?:[ \t]+|=)"
        ),
        "mongo",
        placeholders=True,
    ),
    # Credentials files: .netrc's "machine HOST login USER password PASS" (on one line or
    # several), .pgpass's "host:port:database:user:password" (a port of PostgreSQL's or
    # pgbouncer's, any host on any port, or any line where the text names pgpass),
    # redis.conf's requirepass.
    _rule(
        "password",
        r"\b(?:machine[ \t\r\n]+\S+|default)(?:[ \t\r\n]+(?:login|account)[ \t\r\n]+\S+)+"
        r"[ \t\r\n]+password[ \t\r\n]+" + _ARGUMENT,
        "password",
        placeholders=True,
    ),
    _rule(
        "password",
        _PGPASS.format(host=_HOST, port=r"543\d|6432"),
        ":543",
        ":6432",
        placeholders=True,
    ),
    # Any host and any port is an ARN's service:region:account (arn:aws:logs:*:*:...); any
    # host on any port is pgpass's alone.
    _rule(
        "password",
        _PGPASS.format(host=r"\*", port=r"\*"),
        "*:*:",
        placeholders=True,
    ),
    _rule(
        "password",
        _PGPASS.format(host=_HOST, port=r"\d{1,5}|\*"),
        "pgpass",
        placeholders=True,
    ),
    _rule(
        "password",
        r"(?<![\w\-])(?:requirepass|masterauth)[ \t]+" + _ARGUMENT,
        "requirepass",
        "masterauth",
        placeholders=True,
    ),
    # curl/wget basic credentials: -u user:password, --user user:password.
    _rule(
        "password",
        r"(?<![\w-])(?:-u|--user|--proxy-user)[ =][\"']?[^\s:\"']{1,128}:"
        r"(?P<secret>[^\s\"']{1,256})",
        "-u",
        "--user",
        "--proxy-user",
        placeholders=True,
    ),
    # HTTP authorization headers (and curl -u style basic credentials in them).
    _rule(
        "authorization",
        r"(?i:authorization|proxy-authorization)[\"']?\s*[:=]\s*[\"']?"
        r"(?i:bearer|basic|token|bot|digest)\s+(?P<secret>[A-Za-z0-9._~+/=\-]{8,})",
        "authorization",
        placeholders=True,
    ),
)
